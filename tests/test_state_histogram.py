"""The rho rule's one-pass state histogram (gemm_backend/ozaki/state_histogram.py) against the
row path on the CPU: the needed-bits counts of every column of (L, K, R) views, as the integer
counts of split.add_needed_bits_histogram over the transposed columns. The kernel runs on the
host through a one-warp emulation (host_cuda/state_histogram_host.cpp), where one warp walks
every tile and flushes its window counters many times, and on a GPU through cupy."""
import ctypes

import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.ozaki.split import add_needed_bits_histogram, new_histogram, row_exponents
from gemm_backend.ozaki.gate import DIGIT_BITS, FUSED_DIMS
from gemm_backend.ozaki.state_histogram import state_histogram, takes_view
from gemm_backend.target_layout import pack_targets, view_layout

from .host_build import build_host_harness, kernel_includes

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")
WINDOW = slice(54, 70)  # the bins the kernel counts in registers (WINDOW_FIRST_BIN, WINDOW_BINS)


def cpu_histogram(view):
    """The row path on numpy: columns of the (L, K, R) view as rows [re, im, ...]."""
    n_left, k, n_right = view.shape
    return row_histogram(np.ascontiguousarray(view.transpose(0, 2, 1)).reshape(-1, k))


def row_histogram(columns):
    """split.add_needed_bits_histogram of the (n, K) complex columns as rows [re, im, ...]."""
    rows = np.ascontiguousarray(columns).view(np.float64)
    exps, finite = row_exponents(rows, DIGIT_BITS)
    assert finite
    histogram = new_histogram(np)
    add_needed_bits_histogram(rows, exps, histogram)
    return histogram


def wide_state(rng, size):
    """Amplitudes over a wide exponent range, with exact zeros, subnormals and values near 2^1023."""
    magnitude = np.exp2(rng.integers(-60, 4, size) + rng.standard_normal(size))
    state = magnitude * rng.standard_normal(size) + 1j * magnitude * rng.standard_normal(size)
    state[rng.random(size) < 0.05] = 0.0
    state.real[rng.random(size) < 0.02] = 0.0
    state[:3] = [5e-320 + 0j, 1e-310 - 2e-315j, 1e300 + 0j]
    return state


def flush_tiles(k: int) -> int:
    """Tiles a warp counts between flushes of its 8-bit window fields (the kernel's FLUSH_TILES)."""
    return 255 // (2 * -(-k // 4))


def view_of_columns(columns, n_right: int):
    """The (L, K, R) view whose column (l, r) is columns[l R + r] ((n, K) complex)."""
    n, k = columns.shape
    return np.ascontiguousarray(columns.reshape(n // n_right, n_right, k).transpose(0, 2, 1))


def edge_columns(k: int, rng):
    """(n, K) columns at the kernel's limits: many of one magnitude (every window field of a lane
    full between flushes), powers 2^-j (j < 24) around the window's last bin, columns under a
    subnormal or the smallest normal maximum (some of their bins in the window), zero columns,
    lone nonzeros, maxima at the exponent threshold and values near 2^1024."""
    tiles = 3 * flush_tiles(k) + 5
    same = np.full((8 * tiles, k), 0.75 - 0.75j)
    same[1::3] *= -1.0
    powers = np.ldexp(1.0, -rng.integers(0, 24, (64, k))) * rng.choice([1, -1, 1j, -1j], (64, k))
    powers[:, 0] = 1.0  # the maximum: values 2^-j need 54 + j bits
    tiny = rng.integers(1, 2**52, (64, k)) * 5e-324 + 1j * rng.integers(0, 2**20, (64, k)) * 5e-324
    tiny[:16, 0] = 2.0**-1022  # the smallest normal as the maximum of subnormals
    tiny[16:32, 0] = np.nextafter(2.0**-1022, 0.0)  # the largest subnormal
    lone = np.zeros((16, k), complex)
    lone[np.arange(16), rng.integers(0, k, 16)] = rng.standard_normal(16)
    threshold = rng.standard_normal((32, k)) * 2.0**-8 + 0j
    threshold[:16, 0] = 1.0 - 2.0**-7  # a maximum at 1 - 2^(1 - bits): e one larger
    threshold[16:, 0] = np.nextafter(1.0 - 2.0**-7, 0.0)
    huge = rng.standard_normal((32, k)) * 1e307 + 1j * np.ldexp(1.0, -rng.integers(0, 2000, (32, k)))
    huge[:, 0] = np.finfo(np.float64).max
    mixed = np.concatenate([powers, tiny, lone, np.zeros((24, k), complex), threshold, huge])
    return np.concatenate([same, mixed[rng.permutation(len(mixed))]])  # kinds side by side in a tile


def test_takes_contiguous_views_up_to_k64_with_8_bit_digits():
    x = np.zeros((4, 8, 2), np.complex128)
    assert takes_view(x, 8) and not takes_view(x, 7)
    assert not takes_view(np.zeros((2, 128, 1), np.complex128), 8)
    assert not takes_view(np.zeros((4, 8, 3), np.complex128), 8)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k", [2, 4, 8, 16, 32, 64])
@pytest.mark.parametrize("n_right", [1, 2, 8, 256])
def test_gpu_counts_equal_the_row_path(k, n_right, rng):
    import cupy as cp

    n_left = max(1, (1 << 15) // (k * n_right))
    state = wide_state(rng, n_left * k * n_right)
    view = state.reshape(n_left, k, n_right)
    got = cp.asnumpy(state_histogram(cp.asarray(state).reshape(n_left, k, n_right))).astype(np.int64)
    expected = cpu_histogram(view)
    assert np.array_equal(got, expected) and expected.sum() > 0


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k", FUSED_DIMS)
def test_gpu_counts_at_the_limits(k, rng):
    import cupy as cp

    columns = edge_columns(k, rng)
    for n_right in (1, 8):
        n = len(columns) - len(columns) % n_right
        view = view_of_columns(columns[:n], n_right)
        got = cp.asnumpy(state_histogram(cp.asarray(view))).astype(np.int64)
        assert np.array_equal(got, row_histogram(columns[:n]))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k", FUSED_DIMS)
def test_gpu_counts_a_large_state_of_one_magnitude(k, rng):
    """2^26 amplitudes +-0.75 +-0.75i: every column has e = 1 and every part needs 1 - 0 + 53 = 54
    bits, so each warp of the full grid fills one window field of every lane to its limit between
    flushes, many times over."""
    import cupy as cp

    signs = cp.asarray(rng.integers(0, 2, 2 << 26, dtype=np.int8)).astype(cp.float64)
    state = (0.75 - 1.5 * signs).view(cp.complex128)  # parts re, im, re, ...
    assert state.dtype == cp.complex128 and state.size == 1 << 26
    got = cp.asnumpy(state_histogram(state.reshape(-1, k, 4))).astype(np.int64)
    expected = np.zeros_like(got)
    expected[54] = 2 << 26
    assert np.array_equal(got, expected)


@pytest.mark.gpu
@requires_gpu
def test_gpu_refuses_nan_and_inf(rng):
    import cupy as cp

    for bad in (np.nan, np.inf):
        state = rng.standard_normal(1 << 12) + 0j
        state[777] = bad
        with pytest.raises(BackendError, match="NaN or Inf"):
            state_histogram(cp.asarray(state).reshape(-1, 16, 4))


@pytest.mark.gpu
@requires_gpu
def test_gpu_rho_gate_plans_equal_the_cpu_ones(rng):
    """The rho rule's plan from the kernel's counts is the CPU's, gate by gate, and so are the bits."""
    import cupy as cp

    from circuits import haar_unitary

    backend = gemm_backend.get("int8-auto", rho=1.0)
    for k, n_right in ((4, 1), (32, 16), (64, 2)):
        state = wide_state(rng, 1 << 14).reshape(-1, k, n_right)
        u = haar_unitary(k, rng)
        cpu_plan, _ = backend.gate_plan(u, state)
        gpu_plan, _ = backend.gate_plan(cp.asarray(u), cp.asarray(state))
        assert cpu_plan == gpu_plan


# -- the kernel on the host --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    """The host build of kernels/state_histogram.cu as a ctypes function."""
    library = build_host_harness("state_histogram_host.cpp", tmp_path_factory.mktemp("host_cuda") / "state_histogram.so",
                                 ("-O1", *kernel_includes("state_histogram.cu"), '-DKERNELS="state_histogram.cu"'))
    return library.host_state_histogram


def host_histogram(kernel, flat, k, targets):
    """(int64 counts, nonfinite flag) of the host kernel over the flat complex128 state."""
    flat = np.ascontiguousarray(flat)
    histogram, nonfinite = np.zeros(new_histogram(np).size, np.uint64), np.zeros(1, np.int32)
    status = kernel(ctypes.c_int(k), ctypes.c_void_p(flat.ctypes.data), ctypes.c_longlong(flat.size // k),
                    ctypes.c_ulonglong(pack_targets(targets)), ctypes.c_void_p(histogram.ctypes.data),
                    ctypes.c_void_p(nonfinite.ctypes.data))
    assert status == 0
    return histogram.astype(np.int64), bool(nonfinite[0])


def host_view_histogram(kernel, view):
    flat, targets = view_layout(view)
    got, nonfinite = host_histogram(kernel, flat, view.shape[1], targets)
    assert not nonfinite
    return got


@pytest.mark.parametrize("k", FUSED_DIMS)
@pytest.mark.parametrize("n_right", [1, 8, 64])
def test_host_counts_equal_the_row_path(host_kernel, k, n_right, rng):
    """Gaussian states (nearly every value in the window) and wide ones (many outside it)."""
    n_left = max(1, (1 << 12) // (k * n_right))
    gaussian = (rng.standard_normal(n_left * k * n_right) + 1j * rng.standard_normal(n_left * k * n_right))
    for state in (gaussian, wide_state(rng, n_left * k * n_right)):
        view = state.reshape(n_left, k, n_right)
        expected = cpu_histogram(view)
        assert np.array_equal(host_view_histogram(host_kernel, view), expected)
    assert expected.sum() - expected[WINDOW].sum() > expected.sum() // 10  # the wide state: many outside


@pytest.mark.parametrize("k", FUSED_DIMS)
def test_host_counts_at_the_limits(host_kernel, k, rng):
    columns = edge_columns(k, rng)
    for n_right in (1, 8):
        n = len(columns) - len(columns) % n_right
        expected = row_histogram(columns[:n])
        assert np.array_equal(host_view_histogram(host_kernel, view_of_columns(columns[:n], n_right)), expected)
    assert expected[WINDOW.stop - 1] > 0 and expected[WINDOW.stop] > 0 and expected[:WINDOW.start].sum() > 0


@pytest.mark.parametrize("k, targets", [(4, (3, 0)), (8, (1, 6, 4)), (32, (7, 2, 0, 5, 3)), (64, (9, 1, 4, 0, 6, 3))])
def test_host_counts_columns_at_any_targets(host_kernel, k, targets, rng):
    """Targets in any order and position (gate index bit i at state bit targets[i])."""
    n_bits = 11
    state = wide_state(rng, 1 << n_bits)
    others = [b for b in range(n_bits) if b not in targets]
    column_bits = sum(((np.arange(1 << (n_bits - len(targets)))[:, None] >> i) & 1) << b for i, b in enumerate(others))
    amplitude_bits = sum(((np.arange(k)[None, :] >> i) & 1) << b for i, b in enumerate(targets))
    expected = row_histogram(state[column_bits + amplitude_bits])
    got, nonfinite = host_histogram(host_kernel, state, k, targets)
    assert not nonfinite and np.array_equal(got, expected)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_host_flags_nan_and_inf(host_kernel, bad, rng):
    state = rng.standard_normal(1 << 12) + 1j * rng.standard_normal(1 << 12)
    assert not host_histogram(host_kernel, state, 16, (2, 3, 4, 5))[1]
    state[2777] = complex(0.0, bad)
    assert host_histogram(host_kernel, state, 16, (2, 3, 4, 5))[1]
    assert host_histogram(host_kernel, state, 64, (0, 1, 2, 3, 4, 5))[1]
