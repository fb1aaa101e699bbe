"""The rho rule's statistics of a state in one read on the GPU (kernels/state_histogram.cu).

For a gate of size K <= 64 on a C-contiguous (L, K, R) cupy view, the needed-bits histogram of
split.add_needed_bits_histogram over the view's columns, each column as the row [re, im, ...]
under its 8-bit-digit row exponent: the same integer counts as the row path (a transposed copy of
every chunk, its row exponents, its histogram), from one pass that reads each amplitude once.
"""
import functools

from ..arrays import cupy_module
from ..errors import BackendError
from ..kernel_launch import persistent_blocks, raw_module
from ..target_layout import pack_targets, view_layout
from .gate import DIGIT_BITS, FUSED_DIMS  # the fused kernel's digit width and sizes, the tile skeleton's
from .split import new_histogram

_WARPS = 8
# Blocks per multiprocessor by K, all resident at once (the grid is persistent): the kernel's
# __launch_bounds__ caps its registers at 65536 / (256 blocks) = 64, 80, 128 for 4, 3, 2 blocks
# (ptxas, sm_90: K <= 16 use 34-51 registers, K = 32 72, K = 64 109, none spills). More warps
# keep more loads in flight.
_BLOCKS_PER_SM = {2: 4, 4: 4, 8: 4, 16: 4, 32: 3, 64: 2}
_COLUMNS_PER_WARP = 8


def takes_view(x, bits: int) -> bool:
    """Whether the kernel takes the (L, K, R) view x with digits of `bits` bits."""
    n_right = x.shape[2]
    return (bits == DIGIT_BITS and x.shape[1] in FUSED_DIMS and x.flags.c_contiguous
            and not n_right & (n_right - 1))


def state_histogram(x):
    """(NEEDED_BITS_BINS,) uint64 cupy counts of x's columns (module docstring); BackendError when
    the state holds NaN or Inf. x: a view that takes_view accepts."""
    cp = cupy_module()
    flat, targets = view_layout(x)
    k = x.shape[1]
    histogram, flag = new_histogram(cp), cp.zeros(1, cp.int32)
    n_columns = flat.size // k
    blocks = persistent_blocks(-(-n_columns // (_COLUMNS_PER_WARP * _WARPS)), _BLOCKS_PER_SM[k])
    _kernel(k)((blocks,), (32 * _WARPS,), (flat, cp.int64(n_columns), cp.uint64(pack_targets(targets)), histogram, flag))
    if int(flag[0]):
        raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
    return histogram


@functools.lru_cache(maxsize=None)
def _kernel(k: int):
    name = f"state_needed_bits<{k}, {_BLOCKS_PER_SM[k]}>"
    return raw_module("state_histogram.cu", [name]).get_function(name)
