"""Row scales and INT8 digits for the Ozaki scheme (design brief section 4, steps 1-3 and 6).

Everything works on the rows of a real float64 matrix x (rows, cols): the rows of A, the rows
of B^T (the columns of B), and the columns of a state view. With b bits per digit (b = 8 up to
inner size 2^16) and s digits, row i is represented as

    x_ij ~= 2^(e_i - s b) X_ij,   X_ij = rint(x_ij 2^(s b - e_i))      (round to nearest even)
    X_ij  = sum_{p=1..s} d_p[i, j] 2^((s - p) b),   d_p in [-2^(b-1), 2^(b-1) - 1]

the balanced base-2^b digits of the integer X_ij (unique). So |x_ij - 2^(e_i - s b) X_ij| <=
2^(e_i - s b - 1), a zero stays zero, and every int8 holds a full b = 8 bits (a sign-magnitude
digit would hold 7). Digit 1 is the most significant.

The row exponent e_i makes the digits fit: with the row maximum m = f 2^E (f in [1/2, 1), the
frexp form), e_i = E + 1 when f < 1 - 2^(1-b), else E + 2, so that m / 2^e_i < (2^(b-1) - 1) / 2^b
and |X| <= (2^(b-1) - 1) 2^((s-1) b) never needs a top digit above 2^(b-1) - 1. An all-zero row
gets e_i = 0. Hence m / 2^e_i >= 127/512 (b = 8): 2^e_i <= (512/127) m, used by the error bound.

Because the balanced digits of an integer are unique, two implementations agree bit for bit as
long as they compute the same X: here X = rint(ldexp(x, s b - e)) in numpy, on the GPU the same
correctly rounded operations (kernels/ozaki_split.cu, kernels/ozaki_gate.cu).
"""
import functools

import numpy as np

from ..arrays import array_module, cupy_module, is_gpu_array
from ..errors import BackendError
from ..kernel_launch import include_options, kernel_path, launch_per_row, per_row_int32, row_stride

MAX_BITS = 8  # a balanced int8 digit holds [-128, 127]
INT32_MAX = 2**31 - 1
FLOAT64_SIGNIFICAND_BITS = 53
# 2^-1074 is the smallest float64: bits of |x| / 2^e beyond position e + 1074 are always zero.
SUBNORMAL_BOTTOM_EXPONENT = 1074
# Bits an element can need below its row scale: at most 1026 + 1074 = 2100 (needed_bits).
NEEDED_BITS_BINS = 2112
_SOURCE = kernel_path("ozaki_split.cu")


def bits_per_slice(inner: int) -> int:
    """b = min(8, floor((32 - ceil(log2 inner)) / 2)): then inner * 2^(2b - 2) <= 2^30, so every
    int32 dot product of two digit rows of length `inner` (|digit| <= 2^(b-1)) is exact."""
    bits = min(MAX_BITS, (32 - (max(inner, 1) - 1).bit_length()) // 2)
    if bits < 2:
        raise BackendError(f"inner size {inner} is too large for exact INT8 products (at most 2^28)")
    return bits


def max_digit(bits: int) -> int:
    """The largest |digit|: 2^(b-1)."""
    return 1 << (bits - 1)


def exponent_threshold(bits: int) -> float:
    """Row maxima whose frexp fraction reaches this value take one more exponent step."""
    return 1.0 - 2.0 ** (1 - bits)


# -- row scales -----------------------------------------------------------------------------
def row_exponents(x, bits: int):
    """(e, finite): e (rows,) int32, the row exponents of x (rows, cols) float64 for b-bit
    digits (module docstring), and a 0-d bool array (on x's device) that is False when x holds
    NaN or Inf."""
    if is_gpu_array(x):
        return _row_exponents_gpu(x, bits)
    row_max = np.abs(x).max(axis=1) if x.shape[1] else np.zeros(x.shape[0])  # NaN and Inf propagate
    return exponents_of_maxima(row_max, bits), np.isfinite(row_max).all()


def exponents_of_maxima(row_max, bits: int):
    """Row exponents (int32, numpy or cupy like row_max) from the row maxima |x| (finite, >= 0)."""
    xp = array_module(row_max)
    fraction, exponent = xp.frexp(xp.where(xp.isfinite(row_max), row_max, 0.0))
    step = xp.where(fraction >= exponent_threshold(bits), 2, 1)
    return xp.where(row_max > 0, exponent + step, 0).astype(xp.int32)


def _row_exponents_gpu(x, bits: int):
    return per_row_int32(_module().get_function("ozaki_row_exponents"), x, bits)


# -- the seed paper's automatic number of digits ------------------------------------------------
def needed_bits(x, exponents):
    """Bits below its row scale each nonzero x_ij needs to keep its whole significand:
    (e_i - exponent(x_ij)) + 53, or fewer when its last bits fall below 2^-1074 (subnormals).
    Returns a flat int64 array over the nonzero elements (numpy)."""
    _, element_exponents = np.frexp(x)
    row_exps = exponents.astype(np.int64)[:, None]
    needed = np.minimum(row_exps - element_exponents + FLOAT64_SIGNIFICAND_BITS,
                        row_exps + SUBNORMAL_BOTTOM_EXPONENT)
    return needed[x != 0]


def add_needed_bits_histogram(x, exponents, histogram) -> None:
    """histogram[n] += the number of nonzero x_ij that need n bits below their row scale.
    x: (rows, cols) float64; exponents: (rows,) from row_exponents; histogram: (NEEDED_BITS_BINS,)
    int64 on the CPU, uint64 on the GPU, updated in place."""
    if is_gpu_array(x):
        _needed_bits_histogram_gpu(x, exponents, histogram)
        return
    counts = np.bincount(np.clip(needed_bits(x, exponents), 0, NEEDED_BITS_BINS - 1), minlength=NEEDED_BITS_BINS)
    histogram += counts


def new_histogram(xp):
    """A zeroed histogram for add_needed_bits_histogram on the device of module xp."""
    return xp.zeros(NEEDED_BITS_BINS, xp.int64 if xp is np else xp.uint64)


def _needed_bits_histogram_gpu(x, exponents, histogram) -> None:
    cp = cupy_module()
    rows, cols = x.shape
    if rows:
        _launch_rows("ozaki_needed_bits_histogram", rows,
                     (x, cp.int64(rows), cp.int32(cols), cp.int64(row_stride(x)), exponents,
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


# -- digits -----------------------------------------------------------------------------------
def scaled_integers(x, exponents, n_slices: int, bits: int):
    """X = rint(ldexp(x, s b - e)): exact integers held in float64, |X| < 2^(s b - 1)."""
    xp = array_module(x)
    shift = n_slices * bits - exponents.astype(xp.int32)[:, None]
    return xp.rint(xp.ldexp(x, shift))


def split_rows(x, exponents, n_slices: int, bits: int, dtype=None):
    """Digits of the rows of x (rows, cols) float64 under row exponents (rows,) int32:
    (rows, n_slices, cols) of `dtype` (default int8), [:, p - 1, :] being digit p (module
    docstring).

    |X| = m 2^z with m < 2^53 an integer; its plain base-2^b digits come from shifts of m, and
    one carry pass from the least significant digit up turns them (with X's sign) into the
    balanced digits.
    """
    xp = array_module(x)
    integers = scaled_integers(x, exponents, n_slices, bits)
    fraction, exponent = xp.frexp(xp.abs(integers))
    big = exponent > FLOAT64_SIGNIFICAND_BITS  # |X| >= 2^53: an integer times a power of two
    low_zeros = xp.where(big, exponent - FLOAT64_SIGNIFICAND_BITS, 0).astype(xp.int64)
    significand = xp.where(big, xp.ldexp(fraction, FLOAT64_SIGNIFICAND_BITS), xp.abs(integers)).astype(xp.int64)
    sign = xp.where(integers < 0, -1, 1).astype(xp.int64)
    mask, half, base = (1 << bits) - 1, 1 << (bits - 1), 1 << bits
    out = xp.empty((x.shape[0], n_slices, x.shape[1]), xp.int8 if dtype is None else dtype)
    carry = xp.zeros(x.shape, xp.int64)
    for p in range(n_slices, 0, -1):
        shift = (n_slices - p) * bits - low_zeros  # digit p is bits shift .. shift + b - 1 of m
        right = xp.right_shift(significand, xp.clip(shift, 0, 63))
        left = xp.left_shift(significand, xp.clip(-shift, 0, bits))
        plain = xp.where(shift >= 0, right, left) & mask
        digit = sign * plain + carry
        carry = (digit >= half).astype(xp.int64) - (digit < -half).astype(xp.int64)
        out[:, p - 1, :] = digit - carry * base
    return out


class SlicePlacements:
    """Where split_rows_gpu writes each digit: a list of (digit p, group start, row length,
    column offset). Digit p of row i, column j goes to byte
    group_start * rows + i * row_length + column_offset + j of the output buffer, so a buffer
    can hold several (rows, row_length) int8 matrices one after another (group_start counts
    bytes per row before the group), each made of digit rows laid side by side."""

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
    cols..padded_cols-1 of every digit row are written as zeros.
    x: (rows, cols) float64 cupy (rows may be strided); out: int8 cupy buffer."""
    cp = cupy_module()
    rows, cols = x.shape
    if rows:
        _launch_rows("ozaki_split_rows", rows,
                     (x, cp.int64(rows), cp.int32(cols), cp.int32(padded_cols), cp.int64(row_stride(x)),
                      exponents, cp.int32(bits), cp.int32(placements.n_slices), *device_placements, out))


# -- kernels ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _module():
    return cupy_module().RawModule(code=_SOURCE.read_text(), options=include_options(_SOURCE))


def _launch_rows(name: str, rows: int, args: tuple, shared_mem: int = 0) -> None:
    launch_per_row(_module().get_function(name), rows, args, shared_mem)
