"""The rho rule's one-pass state histogram (gemm_backend/ozaki/state_histogram.py) against the
row path on the CPU: the needed-bits counts of every column of (L, K, R) views, as the integer
counts of split.add_needed_bits_histogram over the transposed columns."""
import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.ozaki.split import add_needed_bits_histogram, new_histogram, row_exponents
from gemm_backend.ozaki.gate import DIGIT_BITS
from gemm_backend.ozaki.state_histogram import state_histogram, takes_view

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")


def cpu_histogram(view):
    """The row path on numpy: columns of the (L, K, R) view as rows [re, im, ...]."""
    n_left, k, n_right = view.shape
    rows = np.ascontiguousarray(view.transpose(0, 2, 1)).reshape(-1, k).view(np.float64)
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
