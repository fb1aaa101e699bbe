"""Single-precision complex GEMM ("cgemm"): the baseline the emulated backends are compared with.

Operands are rounded to complex64 (float32 when both are real) and multiplied by cuBLAS CGEMM
(SGEMM) on the GPU or numpy on the CPU; the product is returned as complex128. On the GPU the
cuBLAS routine is called directly rather than through cupy.matmul, which switches to TF32 tensor
cores when CUPY_TF32=1 is set: the baseline stays FP32 arithmetic whatever the environment.
"""
import numpy as np

from ..arrays import array_module, cupy_module, is_gpu_array
from ..base import DEFAULT_WORKSPACE_BYTES, GemmBackend, check_matmul_operands
from ..errors import BackendError


class CgemmBackend(GemmBackend):
    """complex64 GEMM. Options: workspace_bytes (A is processed in row chunks within it)."""

    name = "cgemm"
    OPTIONS = ("workspace_bytes",)

    def __init__(self, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
        if isinstance(workspace_bytes, bool) or not isinstance(workspace_bytes, (int, np.integer)):
            raise BackendError(f"workspace_bytes must be an integer >= 1, got {workspace_bytes!r}")
        super().__init__(workspace_bytes)
        self.options = {"workspace_bytes": self.workspace_bytes}

    def matmul(self, a, b):
        """C = A @ B in single precision. a: (m, k), b: (k, n), real or complex, both numpy or
        both cupy; returns (m, n) complex128. Raises BackendError when the single-precision
        product is not finite (NaN/Inf input, or values beyond complex64's range ~3.4e38)."""
        a, b, dtype = _checked_operands(a, b)
        xp = array_module(a)
        (m, k), n = a.shape, b.shape[1]
        self._count(m, k, n)
        out = xp.empty((m, n), dtype=xp.complex128)
        b = _rounded(b, dtype)
        rows_per_chunk = self.workspace.rows(self.workspace_bytes_per_row(k, n), is_gpu_array(a))
        for start in range(0, m, rows_per_chunk):
            rows = slice(start, min(m, start + rows_per_chunk))
            product = _gemm(_rounded(a[rows], dtype), b)
            if not bool(xp.isfinite(product).all()):
                raise BackendError(
                    "cgemm: the single-precision product has NaN or Inf entries (NaN/Inf input, or values "
                    "beyond complex64's range ~3.4e38); use a backend that scales, such as fp16x2 or cublas"
                )
            out[rows] = product
        self.last_call_info = {"chunks": -(-m // rows_per_chunk) if m else 0}
        return out

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """The complex64 copy of a row of A and its complex64 product."""
        return 8 * (k + n)


def _checked_operands(a, b):
    """(a, b, dtype): validated operands on one device and the single-precision dtype of the
    product, complex64 (float32 when both are real)."""
    xp, a, b = check_matmul_operands(a, b)
    return a, b, xp.complex64 if "c" in (a.dtype.kind, b.dtype.kind) else xp.float32

def _rounded(x, dtype):
    """x rounded to `dtype`, C-contiguous. Values beyond its range become Inf and are reported
    after the product."""
    with np.errstate(over="ignore"):
        return array_module(x).ascontiguousarray(x, dtype=dtype)


def _gemm(a, b):
    """a (m, k) @ b (k, n), C-contiguous complex64 or float32, in that precision."""
    if not is_gpu_array(a):
        with np.errstate(over="ignore", invalid="ignore"):  # a non-finite product is reported by the caller
            return a @ b
    cp = cupy_module()
    from cupy_backends.cuda.libs import cublas

    (m, k), n = a.shape, b.shape[1]
    if min(m, n, k) == 0:
        return cp.zeros((m, n), dtype=a.dtype)
    out = cp.empty((m, n), dtype=a.dtype)
    one, zero = np.array(1, a.dtype), np.array(0, a.dtype)
    gemm = cublas.cgemm if a.dtype == np.complex64 else cublas.sgemm
    # Row-major out = a @ b is column-major out^T = b^T a^T: b and a swap places, no transposes.
    gemm(cp.cuda.device.get_cublas_handle(), 0, 0, n, m, k, one.ctypes.data, b.data.ptr, n, a.data.ptr, k,
         zero.ctypes.data, out.data.ptr, n)
    return out
