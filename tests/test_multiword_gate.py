"""The fused fp16x2 gate kernel (multiword_gate.py): its fragment layout and gate words on the
CPU; its CUDA source compiled for the host (host_cuda/multiword_gate_host.cpp) and on the GPU, the
CPU path's values (bit for bit where every block sum is exact in FP32, within difference_bound
otherwise); on the GPU its accuracy against a double-double reference."""
import ctypes

import numpy as np
import pytest

import gemm_backend
from circuits import haar_unitary
from gemm_backend import BackendError
from gemm_backend.multiword import CpuWordProducts
from gemm_backend.multiword_words import inner_layout, split_b
from gemm_backend.multiword_gate import (FUSED_DIMS, KERNEL_DEFINITIONS, difference_bound, fragment_index, gate_call,
                                         gate_words, plan_launch, resolve_packing, tiles)
from gemm_backend.multiword_words import LOW_SHIFT, WORD_EXPONENT
from gemm_backend.target_layout import launch_layout
from qsim.apply import apply_plan, plan_gate

from .conftest import requires_gpu
from .helpers import crandn
from .host_build import kernel_includes, variant_builder

N_QUBITS = 12


# -- CPU: the fragment layout and the gate's words -----------------------------------------
@pytest.mark.parametrize("k", FUSED_DIMS)
def test_fragment_index_covers_the_embedded_gate_once_per_tile_pair(k):
    rows, cols = fragment_index(k)
    assert rows.shape == (tiles(k), tiles(k), 32, 8)
    valid = rows >= 0
    assert len(set(zip(rows[valid].tolist(), cols[valid].tolist()))) == valid.sum() == (2 * k) ** 2


def _emulated_high_product(k, u, x):
    """The kernel's high-word product for one column x (K,) from the A fragments of gate_words
    and the B fragments the lanes build, through the PTX m16n8k16 layouts, in float64 (exact)."""
    fragments = gate_words(u).fragments.view(np.float16)[0].astype(np.float64)  # (T, T, 32, 8)
    shift = 15 - np.frexp(np.abs(x.view(np.float64)).max())[1]
    high = np.ldexp(x.view(np.float64), shift).astype(np.float16).astype(np.float64).reshape(k, 2)
    count = tiles(k)
    out = np.zeros((count * 8, 2))
    for mt in range(count):
        c = np.zeros((16, 8))
        for kt in range(count):
            a, b = np.zeros((16, 16)), np.zeros((16, 8))
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for e in range(8):
                    a[g + 8 * ((e >> 1) & 1), 2 * t + (e & 1) + 8 * (e >> 2)] = fragments[mt, kt, lane, e]
                for h in range(2):  # b_h: (Re, Im) of amplitude 8 kt + 4 h + t, every column n = g alike
                    amplitude = 8 * kt + 4 * h + t
                    if amplitude < k:
                        b[2 * t + 8 * h:2 * t + 8 * h + 2, g] = high[amplitude]
            c += a @ b
        out[8 * mt:8 * mt + 8] = c[:, 0].reshape(2, 8).T  # rows g: Re, g + 8: Im of amplitude 8 mt + g
    return out[:k], shift


@pytest.mark.parametrize("k", FUSED_DIMS)
def test_fragments_and_lane_words_give_the_high_word_product(k, rng):
    """The emulated kernel equals the CPU path's Ah Bh (exact in float64) for one column."""
    u, x = crandn(rng, k, k), crandn(rng, k)
    emulated, _ = _emulated_high_product(k, u, x)
    layout = inner_layout(k, 2, 0)
    b_words = split_b(u.T, layout, 2, CpuWordProducts.split)
    a_shift, a_words = CpuWordProducts.split(x.view(np.float64)[None, :], 2, "a")
    expected = a_words[:, :2 * k].astype(np.float64) @ b_words.hh_rows.astype(np.float64).T
    assert np.array_equal(emulated.reshape(-1), expected[0])


@pytest.mark.parametrize("k", FUSED_DIMS)
def test_gate_words_are_the_cpu_words_of_u_transposed(k, rng):
    u = crandn(rng, k, k) * 10.0 ** rng.uniform(-20, 20, (k, 1))
    words = gate_words(u)
    b_words = split_b(u.T, inner_layout(k, 2, 0), 2, CpuWordProducts.split)
    assert np.array_equal(words.shifts, b_words.col_shift)
    rows, cols = fragment_index(k)
    valid = rows >= 0
    fragments = words.fragments.view(np.float16)
    high, low = b_words.hh_rows, b_words.cross_rows[:, :2 * k]  # cross rows: [low | high]
    assert np.array_equal(fragments[0][valid].view(np.uint16), high[rows[valid], cols[valid]].view(np.uint16))
    assert np.array_equal(fragments[1][valid].view(np.uint16), low[rows[valid], cols[valid]].view(np.uint16))
    assert not np.any(fragments[:, ~valid].astype(np.float64))


def test_nonfinite_gate_is_refused():
    u = np.eye(4, dtype=np.complex128)
    u[1, 2] = np.nan
    with pytest.raises(BackendError, match="the gate contains NaN or Inf"):
        gate_words(u)


def test_launch_plans():
    assert plan_launch(128, 64, "fp32") is None
    assert plan_launch(64, 32, "fp32").name == "multiword_gate<64, 64, 32, float, 1, 2>"
    assert plan_launch(32, 0, "fp64").block == 32 and plan_launch(4, 16, "fp32").block == 4
    assert plan_launch(64, 5, "fp32").blocks == 13
    assert all(plan_launch(k, 0, "fp64").shared_bytes <= 96 * 1024 for k in FUSED_DIMS)
    with pytest.raises(BackendError, match="accumulate"):
        plan_launch(8, 0, "fp16")
    assert difference_bound(64, 32, 2) < 2.0**-15 < 2.0**-12  # well below a lost low-word term


def test_backend_option_and_cpu_path(rng):
    backend = gemm_backend.get("fp16x2", fused=False)
    assert backend.options["fused"] is False and gemm_backend.get("fp16x2").options["fused"] is True
    with pytest.raises(BackendError, match="fused must be True or False"):
        gemm_backend.get("fp16x2", fused="yes")
    cpu = gemm_backend.get("fp16x2")
    assert not cpu.works_in_place(16, False) and not cpu.takes_scattered(16, False)
    x = crandn(rng, 2, 8, 4)
    assert not cpu.apply_scattered(np.eye(8, dtype=np.complex128), x.reshape(-1), (0, 3, 5))
    cpu.apply_batched(np.eye(8, dtype=np.complex128), x, x.copy())
    assert cpu.last_call_info["kernel"] == "gemm"


# -- GPU -------------------------------------------------------------------------------------
def target_sets(n: int, d: int) -> list:
    """First target 0, 1, middle and top, and for d > 1 scattered sets (spread over the state,
    gaps of one, qubit 0 with the top qubits)."""
    sets = {tuple(range(q, q + d)) for q in (0, 1, (n - d) // 2, n - d)}
    if d > 1:
        spread = tuple(round(i * (n - 1) / (d - 1)) for i in range(d))
        sets |= {spread, tuple(range(0, 2 * d, 2)), (0,) + tuple(range(n - d + 1, n))}
    return sorted(sets)


def _apply(backend, matrix, state, targets):
    """One gate through the engine's path (a view, the scattered kernel or the transposed copy)."""
    from gemm_backend.arrays import array_module

    n = state.size.bit_length() - 1
    plan = plan_gate(n, targets, matrix)
    u = array_module(state).asarray(plan.matrix)
    out = state.copy()
    apply_plan(plan, out, lambda x, o: backend.apply_batched(u, x, o), None,
               lambda s, t: backend.apply_scattered(u, s, t))
    return out


def _cpu_and_gpu(options, matrix, state, targets):
    import cupy as cp

    cpu = _apply(gemm_backend.get("fp16x2", **options), matrix, state, targets)
    backend = gemm_backend.get("fp16x2", **options)
    gpu = _apply(backend, matrix, cp.asarray(state), targets).get()
    assert backend.last_call_info["kernel"] == "fused"
    return cpu, gpu


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("accumulate", ["fp32", "fp64"])
@pytest.mark.parametrize("block", ["auto", 5])
@pytest.mark.parametrize("d", range(1, 7))
def test_exact_sums_give_the_cpu_values(d, block, accumulate, rng):
    """State parts: integers below 2^14 (times 2^-14), gate parts integers in [-3, 3]: every
    block product and cross term is an exact FP32 sum on both paths, so the results agree
    exactly (zeros' signs aside), for every target set (a wrong fragment or lane shows here)."""
    k = 1 << d
    ints = lambda shape, top: rng.integers(-top, top + 1, shape).astype(np.float64)  # noqa: E731
    u = ints((k, k), 3) + 1j * ints((k, k), 3)
    state = (ints(1 << N_QUBITS, 2**14 - 1) + 1j * ints(1 << N_QUBITS, 2**14 - 1)) * 2.0**-14
    for targets in target_sets(N_QUBITS, d):
        cpu, gpu = _cpu_and_gpu({"block": block, "accumulate": accumulate}, u, state, targets)
        assert np.array_equal(cpu, gpu), targets


def _magnitude(matrix, state, targets):
    """M per amplitude: (|Re U| + |Im U|) applied to |Re x| + |Im x| (float64, numpy)."""
    absolute = lambda z: np.abs(z.real) + np.abs(z.imag)  # noqa: E731
    return _apply(gemm_backend.get("cublas"), absolute(matrix), absolute(state) + 0j, targets).real


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("accumulate", ["fp32", "fp64"])
@pytest.mark.parametrize("block", ["auto", 0, 3])
@pytest.mark.parametrize("d", range(1, 7))
def test_within_the_documented_bound_of_the_cpu_path(d, block, accumulate, rng):
    k = 1 << d
    u = haar_unitary(k, rng)
    state = crandn(rng, 1 << N_QUBITS) * 10.0 ** rng.uniform(-3, 3, 1 << N_QUBITS)
    launch = plan_launch(k, gemm_backend.get("fp16x2", block=block)._block_for(k), accumulate)
    bound = difference_bound(k, launch.block, launch.blocks)
    for targets in target_sets(N_QUBITS, d):
        cpu, gpu = _cpu_and_gpu({"block": block, "accumulate": accumulate}, u, state, targets)
        tolerance = bound * _magnitude(u, state, targets)
        assert (np.abs(gpu.real - cpu.real) <= tolerance).all(), targets
        assert (np.abs(gpu.imag - cpu.imag) <= tolerance).all(), targets


def _error_vs_dd(backend, u, state, targets, xp):
    from gemm_backend.doubledouble_gate import apply_batched_dd
    from qsim.apply import apply_plan_pair

    plan = plan_gate(N_QUBITS + 2, targets, u)
    u_dev = xp.asarray(plan.matrix)
    out = _apply(backend, u, xp.asarray(state), targets)
    hi, lo = xp.asarray(state), xp.zeros_like(xp.asarray(state))
    apply_plan_pair(plan, hi, lo, lambda h, low: apply_batched_dd(u_dev, h, low), 1 << 24)
    return float(xp.linalg.norm((out - hi) - lo) / xp.linalg.norm(hi))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("d", range(1, 7))
def test_error_against_double_double_as_today(d, rng):
    """||fused - dd|| / ||dd|| within 1.5x of the unfused GPU path's and the CPU path's (the
    same words; only FP32 rounding inside the blocks differs), and fp32-class."""
    import cupy as cp

    k = 1 << d
    u = haar_unitary(k, rng)
    state = crandn(rng, 1 << (N_QUBITS + 2))
    state /= np.linalg.norm(state)
    for targets in target_sets(N_QUBITS + 2, d):
        fused = _error_vs_dd(gemm_backend.get("fp16x2"), u, state, targets, cp)
        unfused = _error_vs_dd(gemm_backend.get("fp16x2", fused=False), u, state, targets, cp)
        cpu = _error_vs_dd(gemm_backend.get("fp16x2"), u, state, targets, np)
        assert fused <= 1.5 * max(unfused, cpu) and fused < 2.0**-20, (targets, fused, unfused, cpu)


@pytest.mark.gpu
@requires_gpu
def test_out_of_place_nonfinite_and_large_gates(rng):
    import cupy as cp

    from gemm_backend.multiword_gate import apply_gate

    u = haar_unitary(16, rng)
    x = crandn(rng, 8, 16, 32)
    expected = np.einsum("ij,ljr->lir", u, x)
    x_gpu, out = cp.asarray(x), cp.empty(x.shape, cp.complex128)
    apply_gate(gate_words(u).to_device(), x_gpu, out, plan_launch(16, 8, "fp32"))
    assert np.abs(out.get() - expected).max() < 1e-5 and np.array_equal(x_gpu.get(), x)
    x[3, 5, 7] = np.nan
    x_gpu = cp.asarray(x)
    with pytest.raises(BackendError, match="the state contains NaN or Inf"):
        gemm_backend.get("fp16x2").apply_batched(cp.asarray(u), x_gpu, x_gpu)
    got = x_gpu.get()
    assert np.array_equal(got[3, :, 7], x[3, :, 7], equal_nan=True)  # the bad column is left as it was
    assert np.abs(got[2] - expected[2]).max() < 1e-5
    backend = gemm_backend.get("fp16x2")
    backend.start_run()
    backend.apply_batched(cp.asarray(u), cp.asarray(x), cp.asarray(x))  # deferred: no error yet
    with pytest.raises(BackendError, match="the state contains NaN or Inf"):
        backend.finish_run()
    big = haar_unitary(128, rng)
    y = cp.asarray(crandn(rng, 2, 128, 4))
    backend.apply_batched(cp.asarray(big), y, y)
    assert backend.last_call_info["kernel"] == "gemm"


# -- host: the CUDA source compiled for the CPU --------------------------------------------------
HOST_WARPS = 2
HOST_QUBITS = 12  # target_sets needs at least 2 d qubits


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    """build(launch) -> the host function of the launch's kernel variant (host_build.variant_builder)."""
    options = lambda launch: ("-O1", "-ffp-contract=off", *kernel_includes("multiword_gate.cu"),  # noqa: E731
                              *KERNEL_DEFINITIONS, f"-DKERNEL={launch.name}")
    return variant_builder("multiword_gate_host.cpp", "host_multiword_gate", tmp_path_factory.mktemp("multiword_gate_host"),
                           options)


def _host_fused(host_kernel, backend, u, x, out, targets=None) -> bool:
    """The backend's fused call (FusedGates._apply: packing, words, gate_call) run by the host
    build of its kernel; whether the kernel flagged NaN or Inf."""
    k = u.shape[0]
    x, out, targets = launch_layout(x, out, k, targets)
    launch, targets = resolve_packing(plan_launch(k, backend._block_for(k), backend.accumulate), targets, x.size)
    words = gate_words(u, launch.k)
    x, out, n_columns, packed_targets = gate_call(words, x, out, launch, targets)
    flag = np.zeros(1, np.int32)
    pointer = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
    host_kernel(launch)(pointer(x), pointer(out), ctypes.c_longlong(n_columns), ctypes.c_ulonglong(packed_targets),
                        pointer(words.fragments), pointer(words.shifts), ctypes.c_int(WORD_EXPONENT),
                        ctypes.c_int(LOW_SHIFT), pointer(flag), ctypes.c_int(HOST_WARPS), ctypes.c_int(2))
    return bool(flag[0])


def _cpu_and_host(host_kernel, options, matrix, state, targets):
    """One gate through the engine's path on the CPU, and with the host kernel where the GPU
    would take the fused kernel (views and scattered targets alike)."""
    cpu = _apply(gemm_backend.get("fp16x2", **options), matrix, state, targets)
    backend = gemm_backend.get("fp16x2", **options)
    plan = plan_gate(state.size.bit_length() - 1, targets, matrix)
    host = state.copy()

    def scattered(s, t):
        assert not _host_fused(host_kernel, backend, plan.matrix, s, s, t)
        return True
    apply_plan(plan, host, lambda x, o: _host_fused(host_kernel, backend, plan.matrix, x, o), None, scattered)
    return cpu, host


@pytest.mark.parametrize("accumulate", ["fp32", "fp64"])
@pytest.mark.parametrize("block", ["auto", 5])
@pytest.mark.parametrize("d", range(1, 7))
def test_host_exact_sums_give_the_cpu_values(host_kernel, d, block, accumulate, rng):
    """As on the GPU: integer parts make every FP32 sum exact, so the bits agree for every target
    set (packed launches included; a wrong fragment, lane or address shows here)."""
    k = 1 << d
    ints = lambda shape, top: rng.integers(-top, top + 1, shape).astype(np.float64)  # noqa: E731
    u = ints((k, k), 3) + 1j * ints((k, k), 3)
    state = (ints(1 << HOST_QUBITS, 2**14 - 1) + 1j * ints(1 << HOST_QUBITS, 2**14 - 1)) * 2.0**-14
    for targets in target_sets(HOST_QUBITS, d):
        cpu, host = _cpu_and_host(host_kernel, {"block": block, "accumulate": accumulate}, u, state, targets)
        assert np.array_equal(cpu, host), targets


@pytest.mark.parametrize("block", ["auto", 0, 3])
@pytest.mark.parametrize("d", [2, 4, 6])
def test_host_within_the_documented_bound_of_the_cpu_path(host_kernel, d, block, rng):
    k = 1 << d
    u = haar_unitary(k, rng)
    state = crandn(rng, 1 << HOST_QUBITS) * 10.0 ** rng.uniform(-3, 3, 1 << HOST_QUBITS)
    launch = plan_launch(k, gemm_backend.get("fp16x2", block=block)._block_for(k), "fp32")
    bound = difference_bound(k, launch.block, launch.blocks)
    for targets in target_sets(HOST_QUBITS, d):
        cpu, host = _cpu_and_host(host_kernel, {"block": block}, u, state, targets)
        tolerance = bound * _magnitude(u, state, targets)
        assert (np.abs(host.real - cpu.real) <= tolerance).all(), targets
        assert (np.abs(host.imag - cpu.imag) <= tolerance).all(), targets


def test_host_nonfinite_columns_are_left_and_flagged(host_kernel, rng):
    u = haar_unitary(16, rng)
    x = crandn(rng, 8, 16, 4)
    x[3, 5, 2] = np.nan
    before = x.copy()
    assert _host_fused(host_kernel, gemm_backend.get("fp16x2"), u, x, x)
    assert np.array_equal(x[3, :, 2], before[3, :, 2], equal_nan=True)
    assert np.abs(x[2] - np.einsum("ij,jr->ir", u, before[2])).max() < 1e-5


def _block_partition_case():
    """(u, state, targets, expected amplitude 0) where amplitudes 5..7 share k-tile 0 with block 0
    but belong to block 1 (5-amplitude blocks): products 2^24 (amplitude 0) and 1, 1, 1
    (amplitudes 5..7) make block sums 2^24 and 3, both exact in FP32, and their FP64 sum
    2^24 + 3; a block that took the three ones would round 2^24 + 3 in FP32 first. With exact
    sums elsewhere, a wrong partition changes no bit, so this case is the one that shows it."""
    u = np.eye(8, dtype=np.complex128)
    u[0, 0], u[0, 5:] = 2048.0, 1.0
    columns = np.zeros(((1 << HOST_QUBITS) // 8, 8), np.complex128)
    columns[:, 0], columns[:, 5:] = 8192.0, 1.0
    state = columns.T.reshape(-1).copy()  # targets n - 3 ..: amplitude j of column c at j 2^(n - 3) + c
    return u, state, tuple(range(HOST_QUBITS - 3, HOST_QUBITS)), 2.0**24 + 3


def test_host_blocks_take_exactly_their_own_amplitudes(host_kernel):
    u, state, targets, first = _block_partition_case()
    cpu, host = _cpu_and_host(host_kernel, {"block": 5, "accumulate": "fp64"}, u, state, targets)
    assert np.array_equal(cpu, host)
    assert (cpu[:1 << (HOST_QUBITS - 3)] == first).all()


@pytest.mark.gpu
@requires_gpu
def test_gpu_blocks_take_exactly_their_own_amplitudes():
    u, state, targets, first = _block_partition_case()
    cpu, gpu = _cpu_and_gpu({"block": 5, "accumulate": "fp64"}, u, state, targets)
    assert np.array_equal(cpu, gpu)
    assert (gpu[:1 << (HOST_QUBITS - 3)] == first).all()
