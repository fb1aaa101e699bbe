"""The FP64 tensor-core (DMMA) gate kernel: its fragment layout on the CPU, its CUDA source compiled
for the host (host_cuda/native_gate_host.cpp) and its results on the GPU, against numpy."""
import ctypes

import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.native.gate import (DMMA_DIMS, KERNEL_DEFINITIONS, NativeLaunch, default_launch, dmma_preferred,
                                      gate_fragments, launch_shape, native_gate_call)
from .helpers import at_targets, crandn
from .host_build import kernel_includes, variant_builder


def emulate_tile(fragments, columns, mma_k=4):
    """What native_gate.cu computes for one 8-column n-tile, from the documented mma.sync f64
    layouts: m16n8k4 A (a0, a1) = A[g][t], A[g + 8][t], B b = B[t][g]; m16n8k8 A (a0..a3) =
    A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4], B (b0, b1) = B[t][g], B[t + 4][g]; D d0, d1 =
    D[g][2t], D[g][2t + 1], d2, d3 = D[g + 8][2t], D[g + 8][2t + 1]. columns: (K, 8) complex."""
    k = columns.shape[0]
    out = np.zeros((k, 8), complex)
    for mt in range(k // 8):
        d = np.zeros((16, 8))
        for j in range(k // 4):
            a, b = np.zeros((16, 8)), np.zeros((8, 8))  # k8: columns t (Re), t + 4 (Im) of slot j
            for lane in range(32):
                g, t = divmod(lane, 4)
                ur, ui = fragments[mt, j, lane]
                a[g, t], a[g + 8, t], a[g, t + 4], a[g + 8, t + 4] = ur, ui, -ui, ur
                b[t, g], b[t + 4, g] = columns[4 * j + t, g].real, columns[4 * j + t, g].imag
            if mma_k == 8:
                d += a @ b
            else:  # two k4 steps: the Re half, then the Im half
                d += a[:, :4] @ b[:4] + a[:, 4:] @ b[4:]
        for lane in range(32):
            g, t = divmod(lane, 4)
            for half in range(2):
                out[8 * mt + g, 2 * t + half] = complex(d[g, 2 * t + half], d[g + 8, 2 * t + half])
    return out


@pytest.mark.parametrize("k", [8, 16])
@pytest.mark.parametrize("mma_k", [4, 8])
def test_fragment_layout_gives_the_product(k, mma_k, rng):
    u, columns = crandn(rng, k, k), crandn(rng, k, 8)
    assert np.abs(emulate_tile(gate_fragments(u), columns, mma_k) - u @ columns).max() < 1e-13


def test_launch_shapes_fit_shared_memory():
    for k in DMMA_DIMS:
        for n_right in (1, 1 << 20):
            launch = default_launch(k, n_right)
            assert launch.shared_bytes <= (227 << 10) // launch.blocks_per_sm
    # K = 64 with 4 n-tiles per warp: (227 KiB - 64 KiB of gate) / 32 KiB of stage per warp
    assert launch_shape(64, 4, True, 1).warps == 5
    with pytest.raises(BackendError, match="takes K in"):
        default_launch(4, 1)
    assert NativeLaunch(32, 2, True, 2).name == "native_gate<32, 2, true, 2, 4>"


def test_dmma_option_is_checked():
    with pytest.raises(BackendError, match=r"dmma_min_qubits must be an integer in 3\.\.7, got 2"):
        gemm_backend.get("cublas", dmma_min_qubits=2)
    assert gemm_backend.get("cublas", dmma_min_qubits=7).dmma_dims == ()
    assert gemm_backend.get("cublas").dmma_dims == (16, 32, 64)


def test_dmma_is_preferred_where_measured_faster():
    assert dmma_preferred(32, 1 << 20) and dmma_preferred(64, 1) and dmma_preferred(16, 8)
    assert dmma_preferred(16, 16) and not dmma_preferred(16, 32) and not dmma_preferred(4, 1)


def _strides(n_qubits, d):
    return [(1 << (n_qubits - d - q), 1 << q) for q in range(n_qubits - d + 1)]


@pytest.mark.gpu
@pytest.mark.parametrize("k", DMMA_DIMS)
def test_gpu_kernel_matches_numpy_at_every_stride(k, rng):
    import cupy as cp

    from gemm_backend.native.gate import apply_native_gate

    d = k.bit_length() - 1
    u = crandn(rng, k, k)
    for n_left, n_right in _strides(d + 7, d):
        x = crandn(rng, n_left, k, n_right)
        expected = np.einsum("ij,ljr->lir", u, x)
        x_gpu = cp.asarray(x)
        out = cp.full_like(x_gpu, np.nan)
        apply_native_gate(cp.asarray(u), x_gpu, out)
        assert np.abs(out.get() - expected).max() < 1e-12, (n_left, n_right)
        apply_native_gate(cp.asarray(u), x_gpu, x_gpu)  # in place
        assert np.abs(x_gpu.get() - expected).max() < 1e-12, (n_left, n_right)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 32, 1), (3, 32, 1), (1, 64, 2), (5, 16, 3)])
@pytest.mark.parametrize("variant", [(1, False, 2), (2, False, 1), (1, True, 1), (4, True, 1), (1, False, 2, 8),
                                     (2, False, 1, 8)])
def test_gpu_variants_and_partial_tiles(shape, variant, rng):
    # fewer columns than one tile, and R not a power of two is refused
    import cupy as cp

    from gemm_backend.native.gate import apply_native_gate

    k = shape[1]
    u, x = crandn(rng, k, k), crandn(rng, *shape)
    x_gpu = cp.asarray(x)
    if shape[2] & (shape[2] - 1):
        with pytest.raises(BackendError, match="power of two"):
            apply_native_gate(cp.asarray(u), x_gpu, x_gpu)
        return
    apply_native_gate(cp.asarray(u), x_gpu, x_gpu, launch=launch_shape(k, *variant))
    assert np.abs(x_gpu.get() - np.einsum("ij,ljr->lir", u, x)).max() < 1e-12


@pytest.mark.gpu
@pytest.mark.parametrize("gate_size", [1, 2, 3, 4, 5, 6])
def test_gpu_engine_with_every_kernel_path_matches_dense(gate_size, rng):
    """Every first target q of a d-qubit gate on 14 qubits, through the cublas backend with the
    DMMA kernel from d = 3 on (and the CUDA-core kernel below), against the CPU engine."""
    from circuits import Circuit, Gate, haar_unitary
    from qsim import Simulator

    n_qubits = 14
    gates = [Gate(tuple(range(q, q + gate_size)), haar_unitary(1 << gate_size, rng))
             for q in range(n_qubits - gate_size + 1)]
    circuit = Circuit(n_qubits, gates)
    cpu = Simulator(device="cpu", progress=False).run(circuit).state
    gpu = Simulator(backend="cublas", device="gpu", progress=False, dmma_min_qubits=3).run(circuit)
    assert np.abs(gpu.state_vector() - cpu).max() < 1e-12
    expected = ["dmma" if gate_size >= 3 and (gate_size >= 5 or q < 5) else "small_gate"
                for q in range(n_qubits - gate_size + 1)]  # dmma_preferred: R = 2^q < 32 below 5 qubits
    assert [info["kernel"] for info in gpu.gate_info] == expected


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cublas", "int8-auto"])
def test_gpu_warm_up_leaves_no_slow_gate(backend, rng):
    """Gates of 2..6 qubits at small and large strides, each kernel path first used inside the run:
    the warm-up must have built them all, so no timed gate takes over 3x the run's median."""
    from circuits import Circuit, Gate, haar_unitary
    from qsim import Simulator

    n_qubits = 26
    placements = [(d, q) for d in range(2, 7) for q in (0, 1, 3, 9, n_qubits - d)]
    order = rng.permutation(len(placements))
    gates = [Gate(tuple(range(q, q + d)), haar_unitary(1 << d, rng)) for d, q in (placements[i] for i in order)]
    result = Simulator(backend=backend, device="gpu", progress=False).run(Circuit(n_qubits, gates * 2))
    times = np.array(result.gate_times_s)
    assert times.max() <= 3 * np.median(times), (times.max(), np.median(times))


@pytest.mark.gpu
def test_gpu_before_hopper_takes_the_other_paths(monkeypatch, rng):
    """An sm_80 GPU lacks mma.sync m16n8k4 f64: cublas must route around the kernel, not fail."""
    import cupy as cp

    from gemm_backend.native import gate as native_gate

    monkeypatch.setattr(native_gate, "compute_capability", lambda: 80)
    backend = gemm_backend.get("cublas")
    for shape, path in (((64, 32, 1), "zgemm"), ((4, 32, 64), "small_gate"), ((8, 16, 2), "small_gate")):
        u, x = crandn(rng, shape[1], shape[1]), crandn(rng, *shape)
        u_gpu, x_gpu = cp.asarray(u), cp.asarray(x)
        backend.prepare(u_gpu)
        backend.apply_batched(u_gpu, x_gpu, x_gpu)
        assert backend.last_call_info["kernel"] == path
        assert np.abs(x_gpu.get() - np.einsum("ij,ljr->lir", u, x)).max() < 1e-12


# -- host: the CUDA source compiled for the CPU ------------------------------------------------------
# The DMMA products are emulated as fused multiply-add chains (the hardware's order of additions is
# not specified), so these compare with numpy within FP64's rounding, like the GPU tests.
HOST_WARPS = 2


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    """build(launch) -> the host function of the launch's kernel variant (host_build.variant_builder)."""
    options = lambda launch: ("-O1", *kernel_includes("native_gate.cu"), *KERNEL_DEFINITIONS,  # noqa: E731
                              f"-DKERNEL={launch.name}")
    return variant_builder("native_gate_host.cpp", "host_native_gate", tmp_path_factory.mktemp("native_gate_host"),
                           options)


def _host_apply(host_kernel, u, x, out, targets=None, launch=None, blocks=2) -> None:
    """apply_native_gate's call (native_gate_call) run by the host build of its kernel."""
    launch, (x, out, n_columns, packed_targets, fragments) = native_gate_call(u, x, out, targets, launch)
    pointer = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
    host_kernel(launch)(pointer(x), pointer(out), ctypes.c_longlong(n_columns), ctypes.c_ulonglong(packed_targets),
                        pointer(fragments), ctypes.c_int(HOST_WARPS), ctypes.c_int(blocks))


@pytest.mark.parametrize("k", DMMA_DIMS)
@pytest.mark.parametrize("variant", [None, (1, True, 1), (2, False, 1, 8), (1, False, 2, 8)])
def test_host_kernel_matches_numpy_at_several_strides(host_kernel, k, variant, rng):
    """Default and other launch shapes (prefetch, m16n8k8), strides R = 2^q at q = 0, 1 and top,
    partial tiles, out of place and in place."""
    d = k.bit_length() - 1
    u = crandn(rng, k, k)
    launch = None if variant is None else launch_shape(k, *variant)
    for n_left, n_right in [(9, 1), (5, 2), (1, 16)]:
        x = crandn(rng, n_left, k, n_right)
        expected = np.einsum("ij,ljr->lir", u, x)
        out = np.full_like(x, np.nan)
        _host_apply(host_kernel, u, x, out, launch=launch)
        assert np.abs(out - expected).max() < 1e-12, (d, n_left, n_right)
        _host_apply(host_kernel, u, x, x, launch=launch)
        assert np.abs(x - expected).max() < 1e-12, (d, n_left, n_right)


@pytest.mark.parametrize("targets", [(0, 5, 2), (7, 1, 4, 9), (9, 0, 3, 5, 6), (2, 3, 4, 8, 9, 10)])
def test_host_kernel_on_scattered_targets(host_kernel, targets, rng):
    """Any target bits in any order, the top bit among them, against the dense product."""
    n = 11
    k = 1 << len(targets)
    u = crandn(rng, k, k)
    state = crandn(rng, 1 << n)
    expected = at_targets(state, targets, lambda columns: columns @ u.T)
    out = np.empty_like(state)
    _host_apply(host_kernel, u, state, out, targets=targets)
    assert np.abs(out - expected).max() < 1e-12
