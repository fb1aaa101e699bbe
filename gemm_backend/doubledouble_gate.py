"""apply_batched_dd(u, x_hi, x_lo): a gate applied in place to a double-double state, on the CPU
(numpy, the operation order of the GPU kernel) and on the GPU (kernels/doubledouble.cu); the
arithmetic is doubledouble.py's error-free transforms, so both give the same bits."""
import functools
from pathlib import Path

import numpy as np

from .arrays import array_module, check_finite, cupy_module, is_gpu_array, iter_column_chunks, multiprocessor_count
from .base import DEFAULT_WORKSPACE_BYTES
from .doubledouble import SPLIT_LIMIT, _complex, _dekker_split, _two_prod_split, dd_add, quick_two_sum
from .errors import BackendError

# apply_batched_dd on the CPU works on blocks of about this many amplitudes, small enough for
# the ~130 full-block temporaries of one inner step to stay in cache.
CPU_BLOCK_AMPLITUDES = 1 << 15
# GPU kernel: a block stages at most this many amplitudes (columns x K) of hi and lo in
# shared memory: 2 * (TILE_AMPLITUDES + columns) * 16 bytes <= 33 KiB, under the 48 KiB a
# kernel gets without opting in. K = 1024 still fits one column per tile.
GPU_TILE_AMPLITUDES = 512
GPU_MAX_K = 1024
GPU_THREADS = 256
_KERNEL_SOURCE = Path(__file__).with_name("kernels") / "doubledouble.cu"


# -- apply_batched_dd: a gate on a double-double state, in place --------------------------
def apply_batched_dd(u, x_hi, x_lo, *, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES) -> None:
    """X[l] <- U @ X[l] for every l, in double-double, in place.

    u: (K, K) complex128, taken exactly (its lo part is zero). x_hi, x_lo: (L, K, R) complex128
    views of one dd state (numpy or cupy, same device as u), overwritten with the result.
    Each multiply-add is an exact product (two_prod) plus a dd addition, so a column's error
    is about K * 2^-104 times the sum of |u_ik| |x_k|. On the GPU, x_hi and x_lo must be
    C-contiguous, R a power of two and K <= GPU_MAX_K; no extra memory is used. On the CPU,
    workspace_bytes bounds the temporaries.
    """
    _check_dd_gate_operands(u, x_hi, x_lo)
    if is_gpu_array(x_hi):
        _apply_batched_dd_gpu(u, x_hi, x_lo)
    else:
        _apply_batched_dd_cpu(np.asarray(u, dtype=np.complex128), x_hi, x_lo, workspace_bytes)


def _check_dd_gate_operands(u, x_hi, x_lo) -> None:
    if x_hi.shape != x_lo.shape or x_hi.ndim != 3:
        raise BackendError(f"apply_batched_dd: x_hi {x_hi.shape} and x_lo {x_lo.shape} must be equal (L, K, R) views")
    k = x_hi.shape[1]
    if tuple(u.shape) != (k, k):
        raise BackendError(f"apply_batched_dd: gate shape {tuple(u.shape)} does not match K = {k} of the view")
    if {is_gpu_array(u), is_gpu_array(x_lo)} != {is_gpu_array(x_hi)}:
        raise BackendError("apply_batched_dd: u, x_hi and x_lo must all be on the CPU or all on the GPU")
    for name, x in (("x_hi", x_hi), ("x_lo", x_lo)):
        if x.dtype != np.complex128:
            raise BackendError(f"apply_batched_dd: {name} must be complex128, got {x.dtype}")
    check_finite(u, "apply_batched_dd gate matrix")
    if float(array_module(u).abs(u).max()) > SPLIT_LIMIT:
        raise BackendError("apply_batched_dd: gate entries must stay below 2^995 in magnitude")


def _apply_batched_dd_cpu(u, x_hi, x_lo, workspace_bytes: int) -> None:
    n_left, k, n_right = x_hi.shape
    # About 16 block-sized float64 arrays live at once (accumulators, products, temporaries).
    max_columns = max(1, min(CPU_BLOCK_AMPLITUDES, int(workspace_bytes) // 128) // k)
    gate = _GateSplit(u)
    for ls, rs in iter_column_chunks(n_left, n_right, max_columns):
        block_hi, block_lo = x_hi[ls, :, rs], x_lo[ls, :, rs]
        if float(np.abs(block_hi).max(initial=0.0)) > SPLIT_LIMIT:
            raise BackendError("apply_batched_dd: state entries must stay below 2^995 in magnitude")
        x_hi[ls, :, rs], x_lo[ls, :, rs] = _dd_gate_block(gate, block_hi, block_lo)


class _GateSplit:
    """Real and imaginary parts of a gate's columns, and their Dekker splits, as (K, 1) arrays
    that broadcast against an (l, K, r) block."""

    def __init__(self, u):
        self.k = u.shape[0]
        self.re = [np.ascontiguousarray(u.real[:, j]).reshape(-1, 1) for j in range(self.k)]
        self.im = [np.ascontiguousarray(u.imag[:, j]).reshape(-1, 1) for j in range(self.k)]
        self.re_split = [_dekker_split(c) for c in self.re]
        self.im_split = [_dekker_split(c) for c in self.im]


def _dd_gate_block(gate: _GateSplit, block_hi, block_lo):
    """New (hi, lo) of an (l, K, r) block: out[:, i, :] = sum_j u[i, j] x[:, j, :] in dd.

    The operation order is that of apply_dd_gate in kernels/doubledouble.cu, and Dekker's
    exact product error equals the kernel's fma error, so both give the same bits.
    """
    shape = block_hi.shape[:1] + (gate.k,) + block_hi.shape[2:]
    re = (np.zeros(shape), np.zeros(shape))
    im = (np.zeros(shape), np.zeros(shape))
    for j in range(gate.k):
        xr = (block_hi.real[:, j:j + 1], block_lo.real[:, j:j + 1])
        xi = (block_hi.imag[:, j:j + 1], block_lo.imag[:, j:j + 1])
        xr_split, xi_split = _dekker_split(xr[0]), _dekker_split(xi[0])
        ur, ui = (gate.re[j], gate.re_split[j]), (gate.im[j], gate.im_split[j])
        re = dd_add(*re, *_dd_times_exact(xr, xr_split, ur))
        minus_hi, minus_lo = _dd_times_exact(xi, xi_split, ui)
        re = dd_add(*re, -minus_hi, -minus_lo)
        im = dd_add(*im, *_dd_times_exact(xi, xi_split, ur))
        im = dd_add(*im, *_dd_times_exact(xr, xr_split, ui))
    return _complex(re[0], im[0]), _complex(re[1], im[1])


def _dd_times_exact(x, x_split, c):
    """dd x = (hi, lo) times float64 c, both given with the Dekker split of their hi part."""
    (x_hi, x_lo), (c_value, c_split) = x, c
    p, e = _two_prod_split(x_hi * c_value, *x_split, *c_split)
    return quick_two_sum(p, e + x_lo * c_value)


@functools.lru_cache(maxsize=None)
def _gpu_kernel():
    cp = cupy_module()
    # --fmad=false: no contraction of x_lo * u + e into an fma, so the kernel rounds exactly
    # as numpy does and CPU and GPU references agree bit for bit; two_prod calls fma itself.
    module = cp.RawModule(code=_KERNEL_SOURCE.read_text(), options=("--std=c++17", "--fmad=false"))
    return module.get_function("apply_dd_gate")


def gpu_tile_columns(k: int, n_columns: int) -> int:
    """Columns a GPU block stages at once: a power of two dividing n_columns, so that a tile
    lies inside one group l (when R >= tile) or covers whole groups (when R < tile)."""
    fit = max(1, GPU_TILE_AMPLITUDES // k)
    return min(1 << (fit.bit_length() - 1), n_columns & -n_columns)


def _apply_batched_dd_gpu(u, x_hi, x_lo) -> None:
    cp = cupy_module()
    n_left, k, n_right = x_hi.shape
    if k > GPU_MAX_K:
        raise BackendError(f"apply_batched_dd on the GPU takes gates of at most {GPU_MAX_K.bit_length() - 1} "
                           f"qubits (K <= {GPU_MAX_K}), got K = {k}; run the reference on the CPU")
    if not (x_hi.flags.c_contiguous and x_lo.flags.c_contiguous):
        raise BackendError("apply_batched_dd on the GPU needs C-contiguous (L, K, R) views of the state")
    if n_right & (n_right - 1):
        raise BackendError(f"apply_batched_dd on the GPU needs R to be a power of two, got {n_right}")
    n_columns = n_left * n_right
    if n_columns == 0:
        return
    tile = gpu_tile_columns(k, n_columns)
    u_columns = cp.ascontiguousarray(cp.asarray(u, dtype=cp.complex128).T)  # row j = column j of U
    shared_bytes = 2 * tile * (k + 1) * 16
    max_blocks = multiprocessor_count() * 8
    blocks = min(n_columns // tile, max_blocks)
    _gpu_kernel()((blocks,), (GPU_THREADS,),
                  (x_hi, x_lo, u_columns, np.int32(k), np.int64(n_columns),
                   np.int32(n_right.bit_length() - 1), np.int32(tile)),
                  shared_mem=shared_bytes)
