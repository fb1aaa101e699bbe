"""Row scales and INT8 slices for the Ozaki scheme (design brief section 4, steps 1-3 and 6).

Everything works on the rows of a real float64 matrix x (rows, cols): the rows of A, and the
rows of B^T (the columns of B). Row i is scaled by 2^e_i with e_i = floor(log2 max_j |x_ij|) + 1,
the frexp exponent of the row maximum, so |x_ij| / 2^e_i < 1 (exact powers of two included;
an all-zero row gets e_i = 0). Slice p (p = 1..s) holds the signed integer made of the bits
(p-1)b+1 .. pb after the binary point of |x_ij| / 2^e_i, with the sign of x_ij:

    x_ij = 2^e_i * sum_p 2^(-p b) * slice_p[i, j] + r_ij,   |r_ij| < 2^(e_i - s b).

Digits come from integer shifts of the 53-bit significand, so they are exact for every finite
input (subnormals included), and the numpy code here and the CUDA kernels in
kernels/ozaki_split.cu produce the same digits bit for bit.
"""
import functools
from pathlib import Path

import numpy as np

from .arrays import array_module, cupy_module, is_gpu_array
from .errors import BackendError

MAX_BITS = 7  # int8 holds |digit| <= 127 = 2^7 - 1
INT32_MAX = 2**31 - 1
FLOAT64_SIGNIFICAND_BITS = 53
# 2^-1074 is the smallest float64: bits of |x| / 2^e beyond position e + 1074 are always zero.
SUBNORMAL_BOTTOM_EXPONENT = 1074
# Bits an element can need below its row scale: at most 1024 + 1074 = 2098
# (add_needed_bits_histogram).
NEEDED_BITS_BINS = 2112
_SHIFT_LIMIT = 63  # the shifted significand is below 2^60: a right shift by 63 gives 0
_THREADS = 256
_WARPS_PER_BLOCK = _THREADS // 32
_SOURCE = Path(__file__).with_name("kernels") / "ozaki_split.cu"


def bits_per_slice(inner: int) -> int:
    """b = min(7, floor((31 - ceil(log2 inner)) / 2)): then inner * (2^b - 1)^2 < 2^31, so every
    int32 dot product of two slices of length `inner` is exact."""
    bits = min(MAX_BITS, (31 - (max(inner, 1) - 1).bit_length()) // 2)
    if bits < 1:
        raise BackendError(f"inner size {inner} is too large for exact INT8 products (at most 2^29)")
    return bits


# -- row scales -----------------------------------------------------------------------------
def row_exponents(x):
    """(e, finite): e (rows,) int32 frexp exponents of the row maxima of x (rows, cols) float64,
    and a 0-d bool array (on x's device) that is False when x holds NaN or Inf."""
    if is_gpu_array(x):
        return _row_exponents_gpu(x)
    row_max = np.abs(x).max(axis=1)  # NaN and Inf propagate into the maximum
    return np.frexp(row_max)[1].astype(np.int32), np.isfinite(row_max).all()


def _row_exponents_gpu(x):
    cp = cupy_module()
    rows, cols = x.shape
    exponents = cp.empty(rows, cp.int32)
    nonfinite = cp.zeros(1, cp.int32)
    if rows:
        _launch_rows("ozaki_row_exponents", rows,
                     (x, cp.int64(rows), cp.int32(cols), cp.int64(_row_stride(x)), exponents, nonfinite))
    return exponents, nonfinite[0] == 0


# -- automatic number of slices ---------------------------------------------------------------
def add_needed_bits_histogram(x, exponents, histogram) -> None:
    """histogram[n] += the number of nonzero x_ij that need n bits below their row scale.

    An element needs (e_i - exponent(x_ij)) + 53 bits to keep its whole significand, or fewer
    when its last bits would fall below 2^-1074 anyway (subnormals): the seed paper's measure.
    x: (rows, cols) float64; exponents: (rows,) from row_exponents; histogram: (NEEDED_BITS_BINS,)
    int64 on the CPU, uint64 on the GPU, updated in place.
    """
    if is_gpu_array(x):
        _needed_bits_histogram_gpu(x, exponents, histogram)
        return
    _, element_exponents = np.frexp(x)
    row_exps = exponents.astype(np.int64)[:, None]
    needed = np.minimum(row_exps - element_exponents + FLOAT64_SIGNIFICAND_BITS,
                        row_exps + SUBNORMAL_BOTTOM_EXPONENT)[x != 0]
    histogram += np.bincount(np.clip(needed, 0, NEEDED_BITS_BINS - 1), minlength=NEEDED_BITS_BINS)


def new_histogram(xp):
    """A zeroed histogram for add_needed_bits_histogram on the device of module xp."""
    return xp.zeros(NEEDED_BITS_BINS, xp.int64 if xp is np else xp.uint64)


def _needed_bits_histogram_gpu(x, exponents, histogram) -> None:
    cp = cupy_module()
    rows, cols = x.shape
    if rows:
        _launch_rows("ozaki_needed_bits_histogram", rows,
                     (x, cp.int64(rows), cp.int32(cols), cp.int64(_row_stride(x)), exponents,
                      cp.int32(NEEDED_BITS_BINS), histogram),
                     shared_mem=4 * NEEDED_BITS_BINS)


def choose_splits(histogram, bits: int, rho: float, candidates):
    """The smallest s in candidates whose average loss over the counted elements,
    mean(max(0, needed - s * bits)), is at most rho bits; None when none qualifies.
    histogram: (NEEDED_BITS_BINS,) numpy counts from add_needed_bits_histogram."""
    counts = np.asarray(histogram, dtype=np.int64)
    needed = np.arange(counts.size, dtype=np.int64)
    elements = int(counts.sum())
    for splits in candidates:
        total_loss = int((counts * np.maximum(needed - splits * bits, 0)).sum())
        if total_loss <= rho * elements:
            return splits
    return None


# -- slices -----------------------------------------------------------------------------------
def split_rows(x, exponents, n_slices: int, bits: int, dtype=None):
    """Slices of the rows of x (rows, cols) float64 under row exponents (rows,) int32:
    (rows, n_slices, cols) of `dtype` (default int8), [:, p - 1, :] being slice p.

    With |x| = sig * 2^(exp - 53) (sig < 2^53 an integer), digit p is floor(sig * 2^(exp - 53 -
    e + p b)) mod 2^b. Taking sig << b (< 2^60, exact) makes every shift a right shift, by
    b - (exp - 53 - e + p b), clamped to 0 (the masked low bits are then zero) and 63.
    """
    xp = array_module(x)
    fraction, element_exponents = xp.frexp(xp.abs(x))
    shifted = xp.ldexp(fraction, FLOAT64_SIGNIFICAND_BITS + bits).astype(xp.int64)
    right = (bits + FLOAT64_SIGNIFICAND_BITS - element_exponents.astype(xp.int64)) + exponents.astype(xp.int64)[:, None]
    amount, digit = xp.empty_like(right), xp.empty_like(right)
    mask = (1 << bits) - 1
    out = xp.empty((x.shape[0], n_slices, x.shape[1]), xp.int8 if dtype is None else dtype)
    for p in range(n_slices):
        right -= bits
        xp.clip(right, 0, _SHIFT_LIMIT, out=amount)
        xp.right_shift(shifted, amount, out=digit)
        xp.bitwise_and(digit, mask, out=digit)
        out[:, p, :] = digit
    out *= (1 - 2 * (x < 0)).astype(out.dtype)[:, None, :]  # every slice carries the sign
    return out


class SlicePlacements:
    """Where split_rows_gpu writes each slice: a list of (slice p, group start, row length,
    column offset). Slice p of row i, column j goes to byte
    group_start * rows + i * row_length + column_offset + j of the output buffer, so a buffer
    can hold several (rows, row_length) int8 matrices one after another (group_start counts
    bytes per row before the group), each made of slices laid side by side."""

    def __init__(self, entries, n_slices: int):
        entries = sorted(entries)
        self.n_slices = n_slices
        slices = [e[0] for e in entries]
        self.starts = np.searchsorted(slices, np.arange(1, n_slices + 2)).astype(np.int32)
        self.group_starts = np.array([e[1] for e in entries], np.int64)
        self.row_lengths = np.array([e[2] for e in entries], np.int64)
        self.column_offsets = np.array([e[3] for e in entries], np.int64)

    def on_device(self):
        cp = cupy_module()
        return tuple(cp.asarray(a) for a in (self.starts, self.group_starts, self.row_lengths, self.column_offsets))


def split_rows_gpu(x, exponents, bits: int, padded_cols: int, placements: SlicePlacements,
                   device_placements, out) -> None:
    """split_rows on the GPU, written straight into the layouts of `placements`; columns
    cols..padded_cols-1 of every slice are written as zeros.
    x: (rows, cols) float64 cupy (rows may be strided); out: int8 cupy buffer."""
    cp = cupy_module()
    rows, cols = x.shape
    if rows:
        _launch_rows("ozaki_split_rows", rows,
                     (x, cp.int64(rows), cp.int32(cols), cp.int32(padded_cols), cp.int64(_row_stride(x)),
                      exponents, cp.int32(bits), cp.int32(placements.n_slices), *device_placements, out))


# -- kernels ----------------------------------------------------------------------------------
def _row_stride(x) -> int:
    if x.shape[1] > 1 and x.strides[1] != x.itemsize:
        raise BackendError("Ozaki kernels need rows with unit column stride")
    return x.strides[0] // x.itemsize


@functools.lru_cache(maxsize=None)
def _module():
    return cupy_module().RawModule(code=_SOURCE.read_text(), options=("--std=c++17",))


def _launch_rows(name: str, rows: int, args: tuple, shared_mem: int = 0) -> None:
    """One warp per row, grid capped at 16 blocks per multiprocessor (kernels loop over rows)."""
    cp = cupy_module()
    max_blocks = cp.cuda.Device().attributes["MultiProcessorCount"] * 16
    blocks = max(1, min(max_blocks, -(-rows // _WARPS_PER_BLOCK)))
    _module().get_function(name)((blocks,), (_THREADS,), args, shared_mem=shared_mem)
