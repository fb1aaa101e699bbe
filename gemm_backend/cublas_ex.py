"""Low-precision GEMMs on the GPU through cublasGemmEx, in the TN layout.

Row-major out (m, n) = a (m, k) @ b_rows (n, k)^T. In cuBLAS's column-major terms that is
out^T = op_T(b_rows^T) @ a^T, the "TN" form: the only layout with a tensor-core (IMMA) path
for INT8 on the H100.

Supported: int8 x int8 -> int32 (exact while k * 128^2 < 2^31) and fp16 x fp16 -> fp32
(FP32 accumulation on the tensor cores).
"""
import numpy as np

from .arrays import cupy_module
from .errors import BackendError

_CUDA_R_8I, _CUDA_R_32I, _CUDA_R_16F, _CUDA_R_32F = 3, 10, 2, 0
_COMPUTE_32I, _COMPUTE_32F = 72, 68
_GEMM_DEFAULT = -1
# (input dtype, output dtype) -> (cuda input type, cuda output type, compute type, scalar dtype)
_KINDS = {
    (np.dtype(np.int8), np.dtype(np.int32)): (_CUDA_R_8I, _CUDA_R_32I, _COMPUTE_32I, np.int32),
    (np.dtype(np.float16), np.dtype(np.float32)): (_CUDA_R_16F, _CUDA_R_32F, _COMPUTE_32F, np.float32),
}
K_ALIGNMENT = 16  # IMMA kernels want k and leading dimensions in multiples of 16 bytes
# Inner size k from which gemm_tn_blocks makes one GemmEx call per INT8 block product: separate
# calls beat the strided-batched call on long inner sizes (Ozaki-II's square tiles) and lose on the
# short ones of state-gate tiles (H100, BENCHMARKS.md).
INT8_LOOP_MIN_INNER = 4096


def gemm_tn(a, b_rows, out=None):
    """out (m, n) = a (m, k) @ b_rows (n, k)^T on the GPU.

    a, b_rows: C-contiguous cupy arrays, both int8 or both float16; k is zero-padded to a
    multiple of 16 when needed. out: C-contiguous int32 / float32 (m, n), allocated if None.
    """
    cp = cupy_module()
    from cupy_backends.cuda.libs import cublas

    if a.dtype != b_rows.dtype or a.shape[1] != b_rows.shape[1]:
        raise BackendError(f"gemm_tn: operands {a.shape} {a.dtype} and {b_rows.shape} {b_rows.dtype} do not match")
    out_dtype = np.dtype(np.int32) if a.dtype == np.int8 else np.dtype(np.float32)
    try:
        in_type, out_type, compute, scalar = _KINDS[(np.dtype(a.dtype), out_dtype)]
    except KeyError:
        raise BackendError(f"gemm_tn supports int8 and float16 inputs, got {a.dtype}") from None
    m, k = a.shape
    n = b_rows.shape[0]
    if k % K_ALIGNMENT:
        pad = K_ALIGNMENT - k % K_ALIGNMENT
        a = cp.pad(a, ((0, 0), (0, pad)))
        b_rows = cp.pad(b_rows, ((0, 0), (0, pad)))
        k += pad
    a = cp.ascontiguousarray(a)
    b_rows = cp.ascontiguousarray(b_rows)
    if out is None:
        out = cp.empty((m, n), dtype=out_dtype)
    elif out.dtype != out_dtype or out.shape != (m, n) or not out.flags.c_contiguous:
        raise BackendError(f"gemm_tn: out must be C-contiguous {out_dtype} of shape {(m, n)}")
    one, zero = np.array(1, scalar), np.array(0, scalar)
    handle = cp.cuda.device.get_cublas_handle()
    cublas.gemmEx(handle, 1, 0, n, m, k, one.ctypes.data, b_rows.data.ptr, in_type, k,
                  a.data.ptr, in_type, k, zero.ctypes.data, out.data.ptr, out_type, n, compute, _GEMM_DEFAULT)
    return out


def gemm_tn_blocks(a, b_rows, block: int, n_blocks: int, out=None):
    """Products of consecutive column blocks, each a separate output: one strided-batched GemmEx,
    or one GemmEx per block for INT8 blocks of at least INT8_LOOP_MIN_INNER (faster there).

    out[p] (m, n) = a[:, p*block:(p+1)*block] @ b_rows[:, p*block:(p+1)*block]^T for p < n_blocks.
    a (m, lda), b_rows (n, ldb): C-contiguous cupy arrays, both float16 (FP32 accumulation) or
    both int8 (int32 out), with n_blocks * block <= lda and <= ldb. The leading dimensions are
    the row widths and the batch stride is `block` elements, so no operand is copied or padded.
    The fast tensor-core kernels want block, lda and ldb in multiples of 8 for float16; int8
    requires multiples of 16.
    out: C-contiguous (n_blocks, m, n) float32 / int32, allocated if None.
    """
    cp = cupy_module()
    from cupy_backends.cuda.libs import cublas

    out_dtype = np.dtype(np.int32) if a.dtype == np.int8 else np.dtype(np.float32)
    kind = _KINDS.get((np.dtype(a.dtype), out_dtype))
    if kind is None or a.dtype != b_rows.dtype:
        raise BackendError(f"gemm_tn_blocks supports int8 or float16 operands, got {a.dtype} and {b_rows.dtype}")
    in_type, out_type, compute, scalar = kind
    (m, lda), (n, ldb) = a.shape, b_rows.shape
    if block < 1 or n_blocks < 1 or n_blocks * block > min(lda, ldb):
        raise BackendError(f"gemm_tn_blocks: {n_blocks} blocks of {block} do not fit rows of {lda} and {ldb}")
    if not (a.flags.c_contiguous and b_rows.flags.c_contiguous):
        raise BackendError("gemm_tn_blocks: operands must be C-contiguous")
    if a.dtype == np.int8 and (block % K_ALIGNMENT or lda % K_ALIGNMENT or ldb % K_ALIGNMENT):
        raise BackendError(f"gemm_tn_blocks: int8 needs block and row widths in multiples of {K_ALIGNMENT}")
    shape = (n_blocks, m, n)
    if out is None:
        out = cp.empty(shape, dtype=out_dtype)
    elif out.dtype != out_dtype or out.shape != shape or not out.flags.c_contiguous:
        raise BackendError(f"gemm_tn_blocks: out must be C-contiguous {out_dtype} of shape {shape}")
    if m == 0 or n == 0:
        return out
    one, zero = np.array(1, scalar), np.array(0, scalar)
    handle = cp.cuda.device.get_cublas_handle()
    if a.dtype == np.int8 and block >= INT8_LOOP_MIN_INNER:
        for p in range(n_blocks):
            cublas.gemmEx(handle, 1, 0, n, m, block, one.ctypes.data, b_rows.data.ptr + p * block, in_type, ldb,
                          a.data.ptr + p * block, in_type, lda, zero.ctypes.data,
                          out.data.ptr + p * m * n * out.itemsize, out_type, n, compute, _GEMM_DEFAULT)
        return out
    cublas.gemmStridedBatchedEx(handle, 1, 0, n, m, block, one.ctypes.data,
                                b_rows.data.ptr, in_type, ldb, block, a.data.ptr, in_type, lda, block,
                                zero.ctypes.data, out.data.ptr, out_type, n, m * n, n_blocks, compute, _GEMM_DEFAULT)
    return out
