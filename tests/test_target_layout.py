"""Gates on any set of target bits: the layout the kernels address (CPU), the chunked transposed
copy that is the specification (CPU, against dense operators), and every GPU kernel on scattered
targets against it (bit for bit for INT8 and for the native kernels' own contiguous path)."""
import itertools

import numpy as np
import pytest

import gemm_backend
from circuits import Circuit, Gate, haar_unitary
from gemm_backend import BackendError
from gemm_backend.target_layout import (check_layout, contiguous_targets, pack_targets, packed_gate, packing_qubits,
                                        run_length)
from qsim import Simulator
from qsim.apply import SCATTERED, TRANSPOSED, apply_plan, plan_gate

from .conftest import requires_gpu
from .dense import dense_operator
from .helpers import crandn, same_bits

N_QUBITS = 11
# target 0, the top qubit, gaps of one and of many, unsorted
SCATTERED_CASES = [
    (0, 2), (10, 0), (3, 9), (0, 10),
    (0, 2, 4), (10, 5, 0), (1, 2, 9),
    (0, 2, 4, 6), (9, 1, 0, 10), (3, 4, 7, 8),
    (0, 2, 4, 6, 8), (10, 8, 1, 0, 5), (2, 3, 4, 5, 10),
    (0, 2, 4, 6, 8, 10), (1, 3, 4, 5, 9, 10), (10, 9, 8, 7, 6, 0),
]


def column_offsets(n_qubits, targets):
    """(2^(n-d), K) flat indices of the amplitudes of every column, by the definition: column c's
    bits at the non-target positions in order, gate index a's bit i at targets[i]."""
    others = [b for b in range(n_qubits) if b not in targets]
    columns = np.arange(1 << len(others))
    amplitudes = np.arange(1 << len(targets))
    base = sum(((columns >> i) & 1) << b for i, b in enumerate(others))
    offset = sum(((amplitudes >> i) & 1) << b for i, b in enumerate(targets))
    return base[:, None] + offset[None, :]


def test_contiguous_view_is_a_target_layout():
    # (L, K, R) = (4, 8, 16): column l R + r at l K R + r, amplitude a at + a R
    targets = contiguous_targets(8, 16)
    assert targets == (4, 5, 6)
    offsets = column_offsets(9, targets)
    l, r, a = 3, 5, 6
    assert offsets[l * 16 + r, a] == l * 8 * 16 + r + a * 16
    assert run_length(targets) == 16


def test_columns_partition_the_state():
    offsets = column_offsets(8, (0, 3, 7))
    assert sorted(offsets.ravel()) == list(range(1 << 8))


def test_packed_targets_six_bits_each():
    assert pack_targets((0, 5, 33)) == 0 | 5 << 6 | 33 << 12


@pytest.mark.parametrize("targets, message", [((0, 0), "distinct"), ((-1, 3), "distinct"), ((0, 12), "below 11"),
                                              ((0,), "needs 2 targets")])
def test_bad_layouts_are_refused(targets, message):
    with pytest.raises(BackendError, match=message):
        check_layout(np.zeros(1 << 11, complex), 4, targets)


def test_targets_in_gate_order_are_a_layout():
    """Gate index bit i is state bit targets[i] in whatever order they come (packed launches put
    their extra qubits last)."""
    assert check_layout(np.zeros(1 << 11, complex), 4, (7, 2)) == (7, 2)


@pytest.mark.parametrize("targets, n_amplitudes, columns, expected", [
    ((0, 5), 1 << 8, 4, (2, 3)), ((3, 7), 1 << 8, 4, (1, 2)), ((0, 1, 2), 1 << 8, 2, (4,)),
    ((0, 1), 1 << 3, 4, None), ((1, 2), 3 * 8, 2, None)])
def test_packing_takes_the_low_free_qubits_after_the_lanes_one(targets, n_amplitudes, columns, expected):
    assert packing_qubits(targets, n_amplitudes, columns) == expected


def test_a_packed_gate_is_the_small_gate_on_every_column(rng):
    """I (x) U on targets + packing qubits is the same operator as U on the targets."""
    u = haar_unitary(4, rng)
    big, targets = packed_gate(u, (6, 1), 1 << 8, 16)
    assert targets == (6, 1, 2, 3)
    np.testing.assert_array_equal(dense_operator(8, targets, big), dense_operator(8, (6, 1), u))


def test_a_state_that_is_not_flat_is_refused():
    with pytest.raises(BackendError, match="flat C-contiguous state"):
        check_layout(np.zeros((1 << 10, 2), complex), 4, (0, 1))


@pytest.mark.parametrize("targets", SCATTERED_CASES[:8])
@pytest.mark.parametrize("chunk_amplitudes", [1 << 6, 1 << 11])
def test_transposed_chunks_match_the_dense_operator(targets, chunk_amplitudes, rng, monkeypatch):
    """The CPU specification: chunks of the transposed copy, however small, give U on the targets."""
    import qsim.apply

    monkeypatch.setattr(qsim.apply, "TRANSPOSE_CHUNK_BYTES", 16 * chunk_amplitudes)
    u = haar_unitary(1 << len(targets), rng)
    psi = crandn(rng, 1 << N_QUBITS)
    expected = dense_operator(N_QUBITS, targets, u) @ psi
    backend = gemm_backend.get("cublas")
    state = psi.copy()
    plan = plan_gate(N_QUBITS, targets, u)
    _, _, layout = apply_plan(plan, state, lambda x, out: backend.apply_batched(plan.matrix, x, out), None,
                              lambda s, t: backend.apply_scattered(plan.matrix, s, t))
    assert layout == TRANSPOSED  # the CPU has no scattered kernel
    assert np.abs(state - expected).max() < 1e-12


def test_the_run_reports_the_transposed_gates_and_needs_no_second_state(rng, monkeypatch):
    import qsim.apply

    monkeypatch.setattr(qsim.apply, "TRANSPOSE_CHUNK_BYTES", 1024)
    gates = [Gate((0, 5), haar_unitary(4, rng)), Gate((1, 2), haar_unitary(4, rng))]
    simulator = Simulator(device="cpu", progress=False, out_of_place=False)  # no spare: no gathering
    plan = simulator.memory_plan(Circuit(8, gates))
    assert plan["planned_bytes"] == plan["state_bytes"] + 1024 + simulator.backend.workspace.reserved()
    result = simulator.run(Circuit(8, gates))
    assert [g["layout"] for g in result.gate_info] == ["transposed", "contiguous"]
    assert set(result.time_by_path()) == {"zgemm+transposed", "zgemm-rows"}  # (1, 2): stride 2


# -- GPU: every kernel on scattered targets -------------------------------------------------
def _gpu_scattered(backend, u, psi, targets):
    """(GPU state after the gate through apply_plan with the backend's scattered kernel, its layout)."""
    import cupy as cp

    plan = plan_gate(N_QUBITS, targets, u)
    u_dev, state = cp.asarray(plan.matrix), cp.asarray(psi)
    backend.prepare(u_dev)
    _, _, layout = apply_plan(plan, state, lambda x, out: backend.apply_batched(u_dev, x, out), None,
                              lambda s, t: backend.apply_scattered(u_dev, s, t))
    return state.get(), layout, dict(backend.last_call_info)


def _transposed(backend, u, psi, targets, xp):
    """The state after the gate through the transposed copy (the path without scattered kernels)."""
    plan = plan_gate(N_QUBITS, targets, u)
    u_dev, state = xp.asarray(plan.matrix), xp.asarray(psi)
    apply_plan(plan, state, lambda x, out: backend.apply_batched(u_dev, x, out))
    return state if xp is np else state.get()


NATIVE_KERNELS = {"dmma": {"dmma_min_qubits": 3}, "small_gate": {"dmma_min_qubits": 7}}


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("targets", SCATTERED_CASES)
@pytest.mark.parametrize("kernel", NATIVE_KERNELS)
def test_gpu_native_kernels_on_scattered_targets(targets, kernel, rng):
    """Each column goes through the same arithmetic as in a contiguous view, so the bits equal the
    kernel's on the transposed copy; both agree with the dense operator to FP64 rounding."""
    import cupy as cp

    k = 1 << len(targets)
    backend = gemm_backend.get("cublas", **NATIVE_KERNELS[kernel])
    if kernel == "small_gate" and k > 32 or kernel == "dmma" and k < 8:
        pytest.skip(f"the {kernel} kernel does not take K = {k}")
    u, psi = haar_unitary(k, rng), crandn(rng, 1 << N_QUBITS)
    got, layout, info = _gpu_scattered(backend, u, psi, targets)
    assert layout == SCATTERED and info["kernel"] == kernel
    expected = dense_operator(N_QUBITS, targets, u) @ psi
    assert np.abs(got - expected).max() < 1e-13 * np.abs(expected).max() * k
    if kernel == "dmma" or k <= 8:  # the contiguous path of the transposed copy runs the same kernel
        assert same_bits(got, _transposed(backend, u, psi, targets, cp))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("targets, packed", [((0, 2), True), ((1, 3), True), ((10, 0), False), ((1, 2, 9), True),
                                             ((10, 5, 0), False), ((0, 2, 4), True), ((4, 6, 8), False)])
def test_gpu_small_gates_with_low_targets_run_packed_in_the_dmma_kernel(targets, packed, rng):
    """Two targets below qubit 5: packed (the same operator); otherwise the CUDA-core kernel."""
    k = 1 << len(targets)
    u, psi = haar_unitary(k, rng), crandn(rng, 1 << N_QUBITS)
    got, layout, info = _gpu_scattered(gemm_backend.get("cublas"), u, psi, targets)
    assert layout == SCATTERED
    assert info == ({"kernel": "dmma", "packed_columns": 16 // k} if packed else {"kernel": "small_gate"})
    expected = dense_operator(N_QUBITS, targets, u) @ psi
    assert np.abs(got - expected).max() < 1e-13 * np.abs(expected).max() * k


@pytest.mark.gpu
@requires_gpu
def test_gpu_kernels_take_targets_in_gate_order(rng):
    """apply_native_gate / apply_fused_gate with unsorted targets: gate bit i at targets[i]."""
    import cupy as cp

    from gemm_backend.native.gate import apply_native_gate

    targets, u = (9, 0, 4), haar_unitary(8, rng)
    psi = crandn(rng, 1 << N_QUBITS)
    state = cp.asarray(psi)
    apply_native_gate(cp.asarray(u), state, state, targets)
    expected = dense_operator(N_QUBITS, targets, u) @ psi
    assert np.abs(state.get() - expected).max() < 1e-13 * np.abs(expected).max() * 8


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("targets", SCATTERED_CASES)
@pytest.mark.parametrize("backend_name", ["int8-7", "int8-auto"])
def test_gpu_fused_int8_on_scattered_targets_equals_the_cpu(targets, backend_name, rng):
    k = 1 << len(targets)
    u, psi = haar_unitary(k, rng), crandn(rng, 1 << N_QUBITS)
    psi[rng.integers(0, psi.size, 40)] *= 1e-30  # columns of very different scales
    got, layout, info = _gpu_scattered(gemm_backend.get(backend_name), u, psi, targets)
    assert layout == SCATTERED and info["kernel"] == "fused"
    assert same_bits(got, _transposed(gemm_backend.get(backend_name), u, psi, targets, np))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("backend_name", ["cublas", "int8-auto"])
def test_gpu_circuit_on_scattered_targets_matches_dense_in_place(backend_name, rng):
    """A circuit of gates on scattered targets: every gate by a kernel in place (none through the
    copy), no second state buffer planned, the state of the dense operators."""
    import cupy as cp

    n = 10  # dense operators of 2^n x 2^n: 2^14 took minutes per gate on the device's CPU
    sizes = [1, 2, 2, 3, 4, 5, 6, 2, 3]
    gates = [Gate(tuple(int(q) for q in rng.choice(n, d, replace=False)), haar_unitary(1 << d, rng)) for d in sizes]
    psi = crandn(rng, 1 << n)
    psi /= np.linalg.norm(psi)
    expected = psi
    for gate in gates:
        expected = dense_operator(n, gate.targets, gate.matrix) @ expected
    simulator = Simulator(backend=backend_name, device="gpu", progress=False)
    result = simulator.run(Circuit(n, gates), initial_state=psi)
    layouts = [g["layout"] for g in result.gate_info]
    assert TRANSPOSED not in layouts and SCATTERED in layouts
    assert not simulator.memory_plan(Circuit(n, gates))["spare_buffer"]
    assert np.abs(cp.asnumpy(result.state) - expected).max() < 1e-12


@pytest.mark.gpu
@requires_gpu
def test_gpu_every_target_pair_of_a_small_state(rng):
    """All 2-qubit target sets of 7 qubits through the DMMA-free native path and the fused INT8 kernel."""
    import cupy as cp

    n = 7
    psi = crandn(rng, 1 << n)
    for targets in itertools.permutations(range(n), 2):
        u = haar_unitary(4, rng)
        expected = dense_operator(n, targets, u) @ psi
        for name in ("cublas", "int8-9"):
            result = Simulator(backend=name, device="gpu", progress=False).run(Circuit(n, [Gate(targets, u)]),
                                                                                initial_state=psi / np.linalg.norm(psi))
            assert np.abs(cp.asnumpy(result.state) - expected / np.linalg.norm(psi)).max() < 1e-12, (name, targets)


def test_a_view_with_any_number_of_groups_is_a_layout():
    assert check_layout(np.zeros(3 * 4 * 2, complex), 4, (1, 2)) == (1, 2)
    with pytest.raises(BackendError, match="multiple of"):
        check_layout(np.zeros(3 * 4 * 2, complex), 4, (2, 3))
