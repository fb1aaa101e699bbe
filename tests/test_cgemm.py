"""The complex64 baseline backend ("cgemm").

Reference: the hi part of gemm_backend.doubledouble.matmul_dd (the float64 nearest the exact
product), independent of single-precision arithmetic. Errors are normwise:
max |C - ref| / max |ref|.
"""
import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.doubledouble import matmul_dd
from .helpers import draw, normwise_error

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

UNIT_ROUNDOFF = 2.0**-24


def single_precision_bound(k: int) -> float:
    """Input rounding plus a statistical bound on FP32 accumulation over k terms: far above the
    1e-16 of double precision, far below the ~1e-4 of TF32 or fp16 arithmetic."""
    return 4 * UNIT_ROUNDOFF * (1 + np.sqrt(k))


@pytest.mark.parametrize("k", [64, 512, 4096])
@pytest.mark.parametrize("dist", ["normal", "uniform"])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_error_is_single_precision(kind, dist, k, rng):
    a, b = draw(rng, (24, k), dist, kind), draw(rng, (k, 20), dist, kind)
    c = gemm_backend.get("cgemm").matmul(a, b)
    assert c.dtype == np.complex128 and c.shape == (24, 20)
    error = normwise_error(c, matmul_dd(a, b)[0])
    assert 1e-10 < error <= single_precision_bound(k)


def test_is_the_rounded_product(rng):
    a, b = draw(rng, (9, 33), "normal", "complex"), draw(rng, (33, 7), "normal", "complex")
    expected = (a.astype(np.complex64) @ b.astype(np.complex64)).astype(np.complex128)
    assert np.array_equal(gemm_backend.get("cgemm").matmul(a, b), expected)
    real = gemm_backend.get("cgemm").matmul(a.real, b.real)
    assert np.array_equal(real, (a.real.astype(np.float32) @ b.real.astype(np.float32)).astype(np.complex128))


def test_row_chunks_cover_every_row(rng):
    a, b = draw(rng, (50, 64), "normal", "complex"), draw(rng, (64, 16), "normal", "complex")
    backend = gemm_backend.get("cgemm", workspace_bytes=8 * (64 + 16) * 7)  # 7 rows per chunk
    chunked = backend.matmul(a, b)
    assert backend.last_call_info["chunks"] == 8
    assert normwise_error(chunked, gemm_backend.get("cgemm").matmul(a, b)) <= 4 * UNIT_ROUNDOFF * 8
    assert normwise_error(chunked, a @ b) <= single_precision_bound(64)


@pytest.mark.parametrize("shape", [(3, 16, 5), (8, 32, 1), (1, 64, 8)])
def test_apply_batched_equals_dense_product(shape, rng):
    backend = gemm_backend.get("cgemm", workspace_bytes=4096)
    u, x = draw(rng, shape[1:2] * 2, "normal", "complex"), draw(rng, shape, "normal", "complex")
    expected = np.einsum("ij,ljr->lir", u, x)
    out = np.empty_like(x)
    backend.apply_batched(u, x, out)
    assert normwise_error(out, expected) <= single_precision_bound(shape[1])
    backend.apply_batched(u, x, x)
    assert normwise_error(x, expected) <= single_precision_bound(shape[1])


def test_registry_options_and_statistics(rng):
    backend = gemm_backend.get("cgemm")
    assert type(backend).__name__ == "CgemmBackend" and backend.options == {"workspace_bytes": 1 << 30}
    backend.matmul(np.ones((3, 5)), np.ones((5, 2)))
    assert backend.statistics() == {"calls": 1, "flops": 8.0 * 3 * 5 * 2}


def test_empty_operands_give_zeros():
    backend = gemm_backend.get("cgemm")
    assert backend.matmul(np.zeros((0, 4)), np.ones((4, 3))).shape == (0, 3)
    c = backend.matmul(np.ones((2, 0)), np.ones((0, 3)))
    assert c.shape == (2, 3) and c.dtype == np.complex128 and not np.any(c)


@pytest.mark.parametrize("options, message", [
    ({"workspace_bytes": 0}, "workspace_bytes"),
    ({"workspace_bytes": "1GB"}, "workspace_bytes"),
    ({"workspace_bytes": 2.0**30}, "workspace_bytes"),
    ({"block": 16}, "takes no option block"),
])
def test_bad_options_raise(options, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.get("cgemm", **options)


@pytest.mark.parametrize("a, b, message", [
    (np.ones((3, 4)), np.ones((5, 2)), "a \\(m, k\\) and b \\(k, n\\)"),
    (np.ones((2, 2, 2)), np.ones((2, 2)), "a \\(m, k\\) and b \\(k, n\\)"),
    (np.array([[1.0, np.nan]]), np.ones((2, 2)), "NaN or Inf"),
    (np.full((2, 2), 1e39), np.ones((2, 2)), "beyond complex64's range"),
    (np.full((2, 2), 1e20), np.full((2, 2), 1e20), "beyond complex64's range"),
    (np.array([["x"]]), np.ones((1, 1)), "numeric"),
])
def test_bad_inputs_raise(a, b, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.get("cgemm").matmul(a, b)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k", [7, 512, 4096])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_gpu_matches_cpu(kind, k, rng):
    import cupy as cp

    a, b = draw(rng, (300, k), "normal", kind), draw(rng, (k, 40), "normal", kind)
    cpu = gemm_backend.get("cgemm").matmul(a, b)
    gpu = gemm_backend.get("cgemm").matmul(cp.asarray(a), cp.asarray(b))
    assert isinstance(gpu, cp.ndarray) and gpu.dtype == cp.complex128
    gpu = gpu.get()
    assert normwise_error(gpu, cpu) <= 8 * UNIT_ROUNDOFF * np.sqrt(k)
    assert 1e-10 < normwise_error(gpu, matmul_dd(a, b)[0]) <= single_precision_bound(k)


@pytest.mark.gpu
@requires_gpu
def test_gpu_overflow_raises():
    import cupy as cp

    with pytest.raises(BackendError, match="beyond complex64's range"):
        gemm_backend.get("cgemm").matmul(cp.full((4, 4), 1e39 + 0j), cp.ones((4, 4)))
