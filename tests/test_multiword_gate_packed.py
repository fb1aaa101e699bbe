"""Packed fused fp16x2 gates (multiword_gate.py, PACKED_K): several columns of a 4 x 4 or 8 x 8
gate in one kernel column under I (x) U, each with its own column shift. On the CPU: the plans,
the packing qubits and the words of I (x) U. On the GPU: the unpacked kernel's bits (random data,
shifts differing from group to group, zero groups, NaN groups), and the CPU path's values (bit
for bit where every block sum is exact in FP32, within difference_bound otherwise), for
contiguous, scattered and edge-case target sets."""
import numpy as np
import pytest

import gemm_backend
from circuits import haar_unitary
from gemm_backend import BackendError
from gemm_backend.multiword_gate import (block_diagonal, difference_bound, gate_words, plan_launch,
                                         resolve_packing)

from .conftest import requires_gpu
from .helpers import crandn
from .test_multiword_gate import _apply, _magnitude, target_sets

N_QUBITS = 12
PACKINGS = [(4, 8), (4, 16), (8, 16)]  # (gate size, kernel size)
# (gate size, kernel size, targets, amplitudes of the flat state, the packing qubits or None)
EDGE_CASES = [
    (4, 8, (0, 1), 1 << 12, (3,)),  # the lowest free qubit stays with the lanes
    (4, 8, (0, 1), 8, None),  # one free qubit: the gate's own kernel
    (4, 8, (0, 1), 16, (3,)),  # just enough: the top qubit packs
    (4, 8, (1, 2), 16, (3,)),
    (4, 8, (2, 3), 16, (1,)),
    (4, 8, (2, 3), 3 * 16, (1,)),  # an (L, K, R) view with L = 3: only the qubits below L count
    (4, 8, (0, 1), 3 * 4, None),
    (4, 16, (0, 1), 1 << 12, (3, 4)),
    (4, 16, (0, 3), 16, None),  # free 1, 2: one short of two packing qubits after the lowest
    (8, 16, (0, 1, 2), 16, None),
    (8, 16, (5, 9, 11), 1 << 12, (1,)),
]


# -- CPU: plans, packing qubits, words -----------------------------------------------------
def test_packed_plans():
    assert plan_launch(4, 16, "fp32").name == "multiword_gate<8, 4, 8, float, 4, 3>"
    assert plan_launch(4, 0, "fp64").k == 8 and plan_launch(4, 2, "fp64").k == 4  # blocked: its own kernel
    assert plan_launch(8, 16, "fp32").k == 8 and plan_launch(2, 0, "fp32").k == 2
    packed = plan_launch(8, 0, "fp64", packed_k=16)
    assert (packed.k, packed.group, packed.block, packed.blocks, packed.kernel_block) == (16, 8, 8, 1, 16)
    assert plan_launch(4, 16, "fp32", packed_k=4).name == "multiword_gate<4, 4, 4, float, 4, 3>"
    for k, block, packed_k in [(2, 0, 4), (4, 2, 8), (4, 0, 32), (8, 0, 12), (16, 0, 32)]:
        with pytest.raises(BackendError, match="cannot run packed"):
            plan_launch(k, block, "fp32", packed_k=packed_k)


@pytest.mark.parametrize("k, packed_k, targets, size, packing", EDGE_CASES)
def test_resolve_packing_edge_cases(k, packed_k, targets, size, packing):
    launch, kernel_targets = resolve_packing(plan_launch(k, 0, "fp32", packed_k=packed_k), targets, size)
    if packing is None:
        assert launch == plan_launch(k, 0, "fp32", packed_k=k) and kernel_targets == targets
    else:
        assert launch.k == packed_k and kernel_targets == targets + packing


@pytest.mark.parametrize("k, packed_k", PACKINGS)
def test_packed_words_are_the_small_gate_words_on_the_diagonal(k, packed_k, rng):
    u = crandn(rng, k, k) * 10.0 ** rng.uniform(-20, 20, (k, 1))
    u[0, 1] = -0.0
    small, packed = gate_words(u), gate_words(u, packed_k)
    assert np.array_equal(packed.shifts, np.tile(small.shifts, packed_k // k))
    assert np.array_equal(packed.fragments, gate_words(block_diagonal(u, packed_k)).fragments)
    diagonal = np.kron(np.eye(packed_k // k), np.ones((k, k))).astype(bool)
    big = block_diagonal(u, packed_k)
    for start in range(0, packed_k, k):
        assert np.array_equal(big[start:start + k, start:start + k], u)
    assert not np.signbit(big[~diagonal].view(np.float64)).any() and not big[~diagonal].any()


# -- GPU ---------------------------------------------------------------------------------------
def _kernel(u, state, targets, launch, flag=None):
    """One kernel launch on a copy of the flat state (numpy in, numpy out), packed where the
    launch is and the state allows; returns (the launch that ran, the result)."""
    import cupy as cp

    from gemm_backend.multiword_gate import apply_gate

    launch, kernel_targets = resolve_packing(launch, targets, state.size)
    out = cp.asarray(state)
    apply_gate(gate_words(u, launch.k).to_device(), out, out, launch, flag, kernel_targets)
    return launch, out.get()


def _random_state(rng, n):
    """Magnitudes over 10^-3 .. 10^3 (the groups of a kernel column get different shifts) and a
    run of zero amplitudes (zero groups: shift of a zero column)."""
    state = crandn(rng, 1 << n) * 10.0 ** rng.uniform(-3, 3, 1 << n)
    state[:48] = 0
    return state


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("accumulate", ["fp32", "fp64"])
@pytest.mark.parametrize("k, packed_k", PACKINGS)
def test_packed_is_the_unpacked_kernel_bit_for_bit(k, packed_k, accumulate, rng):
    u = haar_unitary(k, rng) * 10.0 ** rng.uniform(-2, 2, (k, 1))  # rows with different shifts
    state = _random_state(rng, N_QUBITS)
    packed_launch = plan_launch(k, 0, accumulate, packed_k=packed_k)
    own = plan_launch(k, 0, accumulate, packed_k=k)
    for targets in target_sets(N_QUBITS, k.bit_length() - 1):
        launch, packed = _kernel(u, state, targets, packed_launch)
        assert launch.k == packed_k
        assert np.array_equal(packed, _kernel(u, state, targets, own)[1]), targets  # zeros' signs aside


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k, packed_k", PACKINGS)
def test_packed_gives_the_cpu_values(k, packed_k, rng):
    """Exact block sums (integer parts, as in test_multiword_gate): the CPU path's bits; random
    data: within difference_bound of the CPU path (fp32 and fp64 block sums)."""
    d = k.bit_length() - 1
    ints = lambda shape, top: rng.integers(-top, top + 1, shape).astype(np.float64)  # noqa: E731
    exact_u = ints((k, k), 3) + 1j * ints((k, k), 3)
    exact_state = (ints(1 << N_QUBITS, 2**14 - 1) + 1j * ints(1 << N_QUBITS, 2**14 - 1)) * 2.0**-14
    u, state = haar_unitary(k, rng), _random_state(rng, N_QUBITS)
    for accumulate in ("fp32", "fp64"):
        cpu_backend = gemm_backend.get("fp16x2", block=0, accumulate=accumulate)
        launch = plan_launch(k, 0, accumulate, packed_k=packed_k)
        bound = difference_bound(k, launch.block, launch.blocks)
        for targets in target_sets(N_QUBITS, d):
            exact = _kernel(exact_u, exact_state, targets, launch)[1]
            assert np.array_equal(exact, _apply(cpu_backend, exact_u, exact_state, targets)), targets
            difference = _kernel(u, state, targets, launch)[1] - _apply(cpu_backend, u, state, targets)
            tolerance = bound * _magnitude(u, state, targets)
            assert (np.abs(difference.real) <= tolerance).all() and (np.abs(difference.imag) <= tolerance).all()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k, packed_k, targets, size, packing", EDGE_CASES)
def test_edge_cases_run_as_the_unpacked_kernel(k, packed_k, targets, size, packing, rng):
    u = haar_unitary(k, rng)
    state = crandn(rng, size) * 10.0 ** rng.uniform(-3, 3, size)
    launch, packed = _kernel(u, state, targets, plan_launch(k, 0, "fp64", packed_k=packed_k))
    assert launch.k == (k if packing is None else packed_k)
    assert np.array_equal(packed, _kernel(u, state, targets, plan_launch(k, 0, "fp64", packed_k=k))[1])


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k, packed_k", PACKINGS)
def test_a_nonfinite_group_is_left_and_flagged_alone(k, packed_k, rng):
    import cupy as cp

    u, state = haar_unitary(k, rng), crandn(rng, 1 << N_QUBITS)
    state[[5, 700]] = np.nan, np.inf
    results = []
    for launch in (plan_launch(k, 0, "fp32", packed_k=packed_k), plan_launch(k, 0, "fp32", packed_k=k)):
        flag = cp.zeros(1, cp.int32)
        results.append(_kernel(u, state, (1, 4, 6)[:k.bit_length() - 1], launch, flag)[1])
        assert int(flag[0]) == 1
    assert np.array_equal(results[0], results[1], equal_nan=True)
    assert np.isnan(results[0][5]) and np.isinf(results[0][700]) and np.isfinite(results[0]).sum() > 4000


@pytest.mark.gpu
@requires_gpu
def test_backend_packs_views_and_scattered_targets(rng):
    """The backend's default: a 4 x 4 gate in the K = 8 kernel where the state has the qubits
    (reported as kernel_size), its own kernel where not; values as the CPU path's (exact sums)."""
    import cupy as cp

    ints = lambda shape, top: rng.integers(-top, top + 1, shape).astype(np.float64)  # noqa: E731
    u = ints((4, 4), 3) + 1j * ints((4, 4), 3)
    backend = gemm_backend.get("fp16x2")
    for shape, kernel_size in [((3, 4, 4), 8), ((3, 4, 1), 4), ((2, 4, 8), 8)]:
        x = (ints(shape, 2**14 - 1) + 1j * ints(shape, 2**14 - 1)) * 2.0**-14
        expected = np.empty_like(x)
        gemm_backend.get("fp16x2").apply_batched(u, x, expected)  # the CPU path
        out = cp.empty(shape, cp.complex128)
        backend.apply_batched(cp.asarray(u), cp.asarray(x), out)
        assert backend.last_call_info["kernel_size"] == kernel_size and np.array_equal(out.get(), expected)
    state = cp.asarray(crandn(rng, 1 << N_QUBITS))
    expected = _apply(gemm_backend.get("fp16x2", accumulate="fp64"), u, state.get(), (2, 7))
    backend, u_gpu = gemm_backend.get("fp16x2", accumulate="fp64"), cp.asarray(u)
    backend.prepare(u_gpu)  # the packed words made ahead, as a run does
    assert backend.apply_scattered(u_gpu, state, (2, 7)) and backend.last_call_info["kernel_size"] == 8
    tolerance = difference_bound(4, 4, 1) * _magnitude(u, state.get(), (2, 7))
    assert (np.abs(state.get() - expected) <= np.hypot(tolerance, tolerance)).all()
