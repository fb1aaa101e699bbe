"""Double-double arithmetic and the double-double complex GEMM (the accuracy reference).

A double-double (dd) number is the unevaluated sum hi + lo of two float64 with
|lo| <= ulp(hi) / 2: about 106 significant bits. Arrays of them are pairs (hi, lo) of
arrays; a complex dd array is a pair of complex128 arrays whose real parts form one dd
number and whose imaginary parts another. Everything here works on numpy and cupy arrays.

Two products are offered:
- `matmul_dd(a, b)`: C = A @ B for float64/complex128 A and B, returned as (hi, lo) with
  hi + lo within about 1e-32 of the exact product (relative to the size of the entries). It
  splits A and B into integer slices whose products float64 GEMM computes exactly (error-free
  transformation of a matrix product, Ozaki, Ogita, Oishi and Rump 2012) and adds the few
  exact slice products in dd, so it runs at BLAS speed: m = 2^14, k = n = 1024 takes about a
  minute on two CPU cores, where a dd loop over k would take an hour.
- `doubledouble_gate.apply_batched_dd(u, x_hi, x_lo)`: the gate X[l] <- U @ X[l] applied in place to a dd state
  held as (hi, lo), with U taken exactly; plain dd multiply-adds, identical operation by
  operation on the CPU (Dekker's split) and on the GPU (fma, kernels/doubledouble.cu), so the
  two give bit-identical states.

Range: the error-free transforms are exact unless a result overflows (two_prod: reaches
2^1023) or a product falls below 2^-969 (where its rounding error would be subnormal);
quantum states and gates are far inside.
"""
import functools

from .arrays import array_module, check_finite, is_gpu_array
from .base import DEFAULT_WORKSPACE_BYTES, GemmBackend, as_complex, check_matmul_operands
from .errors import BackendError

# Dekker's splitter 2^27 + 1 cuts a 53-bit significand into two halves of at most 26 bits
# (plus sign), so that the product of two halves is exact in float64.
SPLITTER = 2.0**27 + 1.0
# SPLITTER * a overflows above about 2^996: two_prod moves a factor 2^28 from such an
# operand to the other one before splitting.
SPLIT_LIMIT = 2.0**995
SPLIT_SCALE_EXPONENT = 28

# matmul_dd: the integer slices of each row of A (column of B) cover this many bits below the
# row (column) maximum; what they leave out is below 2^-PRODUCT_BITS of it (2^-120 ~ 7.5e-37).
PRODUCT_BITS = 120
FLOAT64_SIGNIFICAND_BITS = 53
# Bytes of float64 temporaries that matmul_dd's row blocks hold per row, in units of
# (inner size k, output size n): the k-side covers the slices and one scaled copy, the
# n-side the diagonal product, the dd accumulator and the temporaries of a dd addition.
_MATMUL_ROW_TEMPORARIES_K, _MATMUL_ROW_TEMPORARIES_N = 2, 10
# Float64 copies of (the embedded) B that matmul_dd holds beside B's slices while it cuts them:
# the embedded B, the fraction being cut and |B| (or the embedding's concatenation temporaries).
_MATMUL_B_COPIES = 3



# -- error-free transforms ----------------------------------------------------------------
def two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth; any order of magnitudes)."""
    s = a + b
    b_virtual = s - a
    e = (a - (s - b_virtual)) + (b - b_virtual)
    return s, e


def quick_two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, when |a| >= |b| or a == 0 (Dekker)."""
    s = a + b
    return s, b - (s - a)


def _dekker_split(a):
    """(hi, lo) with hi + lo = a exactly, each of at most 26 significant bits; |a| <= SPLIT_LIMIT."""
    t = SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker's product, no fma needed).

    a, b: float64 arrays or scalars (numpy or cupy; they broadcast). Exact whenever
    2^-969 <= |p| < 2^1023 or p == 0 (the top binade is left out because a product of the
    rounded halves may exceed the largest float64 there). An operand above SPLIT_LIMIT (where Dekker's split would
    overflow) trades a power of two with the other one first, which leaves the product alone.
    """
    xp = array_module(b) if is_gpu_array(b) else array_module(a)
    a, b = xp.broadcast_arrays(xp.asarray(a, dtype=xp.float64), xp.asarray(b, dtype=xp.float64))
    large_a, large_b = xp.abs(a) > SPLIT_LIMIT, xp.abs(b) > SPLIT_LIMIT
    if bool(large_a.any()) or bool(large_b.any()):
        shift = xp.where(large_a, -SPLIT_SCALE_EXPONENT, xp.where(large_b, SPLIT_SCALE_EXPONENT, 0)).astype(xp.int32)
        a, b = xp.ldexp(a, shift), xp.ldexp(b, -shift)
    return _two_prod_split(a * b, *_dekker_split(a), *_dekker_split(b))


def _two_prod_split(p, a_hi, a_lo, b_hi, b_lo):
    """The exact error of p = fl(a * b) from the splits of a and b."""
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


# -- double-double operations (elementwise, broadcasting) ---------------------------------
def dd_add(a_hi, a_lo, b_hi, b_lo):
    """(a_hi + a_lo) + (b_hi + b_lo), with a relative error of about 2^-106 (no cancellation loss)."""
    s, e = two_sum(a_hi, b_hi)
    t, f = two_sum(a_lo, b_lo)
    s, e = quick_two_sum(s, e + t)
    return quick_two_sum(s, e + f)


def dd_add_double(a_hi, a_lo, b):
    """(a_hi + a_lo) + b for a float64 b."""
    s, e = two_sum(a_hi, b)
    return quick_two_sum(s, e + a_lo)


def dd_mul(a_hi, a_lo, b_hi, b_lo):
    """(a_hi + a_lo) * (b_hi + b_lo), relative error about 2^-104."""
    p, e = two_prod(a_hi, b_hi)
    return quick_two_sum(p, e + (a_hi * b_lo + a_lo * b_hi))


def dd_mul_double(a_hi, a_lo, b):
    """(a_hi + a_lo) * b for a float64 b, relative error about 2^-105."""
    p, e = two_prod(a_hi, b)
    return quick_two_sum(p, e + a_lo * b)


def dd_sum(hi, lo):
    """The sum of all entries of a dd array, as a pair of 0-d float64 arrays.

    Pairwise (a tree of dd additions, vectorised level by level): the error is about
    log2(n) * 2^-106 times the sum of the magnitudes.
    """
    xp = array_module(hi)
    hi, lo = hi.reshape(-1), lo.reshape(-1)
    if hi.size == 0:
        return xp.zeros((), xp.float64), xp.zeros((), xp.float64)
    while hi.size > 1:
        half = hi.size // 2
        odd_hi, odd_lo = hi[2 * half:], lo[2 * half:]
        hi, lo = dd_add(hi[:half], lo[:half], hi[half:2 * half], lo[half:2 * half])
        if odd_hi.size:
            hi, lo = xp.concatenate([hi, odd_hi]), xp.concatenate([lo, odd_lo])
    return hi[0], lo[0]


# -- matmul_dd: exact slice products + double-double sum ----------------------------------
def matmul_dd(a, b, *, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
    """C = A @ B in double-double.

    a: (m, k), b: (k, n), float64 or complex128 (other numeric dtypes are converted to
    these), both numpy or both cupy. Returns (hi, lo), each (m, n), complex128 when either
    input is complex and float64 otherwise; hi = the float64 nearest to hi + lo, and hi + lo
    is within about 1e-32 * max|a_i.| * max|b_.j| * k of each exact entry (PRODUCT_BITS).
    workspace_bytes bounds the temporaries: rows of A are processed in blocks.
    Raises BackendError for bad shapes, non-finite input, or entries so large the
    product would overflow.
    """
    a, b = _check_operands(a, b)
    if a.dtype.kind != "c" and b.dtype.kind != "c":
        return _exact_real_product(a, b, workspace_bytes)
    n = b.shape[1]
    hi, lo = _exact_real_product(as_complex(a), _real_embedding(as_complex(b)), workspace_bytes, _side_by_side)
    return _complex(hi[:, :n], hi[:, n:]), _complex(lo[:, :n], lo[:, n:])


def matmul_dd_bytes_per_row(k: int, n: int, is_complex: bool = True) -> int:
    """Bytes of temporaries one row of A costs inside matmul_dd (for callers that chunk)."""
    if is_complex:
        k, n = 2 * k, 2 * n
    n_slices = slice_plan(k)[1] if k else 0
    return 8 * ((n_slices + _MATMUL_ROW_TEMPORARIES_K) * k + _MATMUL_ROW_TEMPORARIES_N * n)


def matmul_dd_bytes(m: int, k: int, n: int, is_complex: bool = True,
                    workspace_bytes: int = DEFAULT_WORKSPACE_BYTES) -> int:
    """Peak bytes matmul_dd allocates for an (m, k) @ (k, n) beside its inputs: B's slices and the
    copies cutting them takes (all of B at once, so a caller with a wide B that must fit a budget
    calls matmul_dd on blocks of B's columns), the (hi, lo) outputs with their complex copies, and
    the row blocks (at most workspace_bytes, but one row at least)."""
    inner, width = (2 * k, 2 * n) if is_complex else (k, n)
    n_slices = slice_plan(inner)[1] if inner else 0
    b_side = 8 * (n_slices + _MATMUL_B_COPIES) * inner * width
    outputs = 16 * m * width * (2 if is_complex else 1)
    row = matmul_dd_bytes_per_row(k, n, is_complex)
    return b_side + outputs + max(min(workspace_bytes, m * row), row)


def _check_operands(a, b):
    xp, a, b = check_matmul_operands(a, b, "matmul_dd")
    for name, x in (("a", a), ("b", b)):
        check_finite(x, f"matmul_dd operand {name}")
    if a.dtype.kind != "c":
        a = a.astype(xp.float64, copy=False)
    if b.dtype.kind != "c":
        b = b.astype(xp.float64, copy=False)
    return a, b


def _real_embedding(b):
    """[[Br, Bi], [-Bi, Br]] (2k, 2n): [Ar | Ai] @ it = [Re(A B) | Im(A B)]."""
    xp = array_module(b)
    return xp.concatenate([xp.concatenate([b.real, b.imag], axis=1),
                           xp.concatenate([-b.imag, b.real], axis=1)], axis=0)


def _side_by_side(a):
    """[Ar | Ai] (m, 2k) of a complex (m, k)."""
    return array_module(a).concatenate([a.real, a.imag], axis=1)


@functools.lru_cache(maxsize=None)
def slice_plan(k: int) -> tuple:
    """(bits per slice b, number of slices s) for inner size k.

    s * k * (2^b - 1)^2 < 2^53, so a sum of up to s slice products of length k, each entry an
    integer below 2^b in magnitude, is exact in float64 whatever the summation order; and
    s * b >= PRODUCT_BITS.
    """
    n_slices = 1
    while True:
        bits = (FLOAT64_SIGNIFICAND_BITS - (n_slices * k - 1).bit_length()) // 2
        if bits < 1:
            raise BackendError(f"matmul_dd: inner size {k} is too large for exact float64 slice products")
        needed = -(-PRODUCT_BITS // bits)
        if needed <= n_slices:
            return bits, n_slices
        n_slices = needed


def _exact_real_product(a, b, workspace_bytes: int, as_real_rows=None):
    """(hi, lo) of the real product A (m, k) @ b (k, n), in blocks of rows of a.

    as_real_rows: turns a block of rows of a into the real rows of A (the complex embedding),
    so that the embedded copy is only ever one block; None when a is already real.
    """
    xp = array_module(b)
    k, n = b.shape
    m = a.shape[0]
    hi, lo = xp.zeros((m, n), xp.float64), xp.zeros((m, n), xp.float64)
    if k == 0 or m == 0 or n == 0:
        return hi, lo
    bits, n_slices = slice_plan(k)
    b_stack, col_exponents = _slices(b, bits, n_slices, axis=0)
    row_bytes = 8 * ((n_slices + _MATMUL_ROW_TEMPORARIES_K) * k + _MATMUL_ROW_TEMPORARIES_N * n)
    rows = max(1, int(workspace_bytes) // row_bytes)
    for start in range(0, m, rows):
        block = slice(start, min(m, start + rows))
        a_block = a[block] if as_real_rows is None else as_real_rows(a[block])
        hi[block], lo[block] = _exact_row_block(a_block, b_stack, col_exponents, bits, n_slices)
    return hi, lo


def _exact_row_block(a, b_stack, col_exponents, bits: int, n_slices: int):
    """(hi, lo) of a (rows, k) @ B for B given by its stacked slices and column exponents."""
    xp = array_module(a)
    k = a.shape[1]
    a_side, row_exponents = _slices(a, bits, n_slices, axis=1)
    _check_no_overflow(row_exponents, col_exponents, k)
    hi = lo = None
    # Diagonal t = p + q of the slice products is [A_1 .. A_{t-1}] @ [B_{t-1}; ..; B_1]: a
    # leading block of columns of a_side times a trailing block of rows of b_stack. Smallest
    # diagonal first, so the dd sum loses least.
    for t in range(n_slices + 1, 1, -1):
        terms = t - 1
        diagonal = xp.matmul(a_side[:, :terms * k], b_stack[(n_slices - terms) * k:])
        diagonal *= 2.0 ** (-t * bits)
        if hi is None:
            hi, lo = diagonal, xp.zeros_like(diagonal)
        else:
            hi, lo = dd_add_double(hi, lo, diagonal)
    exponents = row_exponents[:, None] + col_exponents[None, :]
    return xp.ldexp(hi, exponents), xp.ldexp(lo, exponents)


def _slices(x, bits: int, n_slices: int, axis: int):
    """Integer slices of x (m, k) scaled per row (axis=1) or per column (axis=0).

    Returns the slices and the exponents e (int32, one per row or column) with |x| < 2^e and
    x = 2^e * sum_p X_p * 2^(-p * bits) up to less than 2^(e - s * bits); every X_p carries the
    sign of x and is an integer below 2^bits in magnitude. Rows: side by side [X_1 | ... | X_s]
    (m, s*k). Columns: stacked [X_s; ...; X_1] (s*m, k), so that [X_{t-1}; ...; X_1] is a
    trailing block of rows.
    """
    xp = array_module(x)
    _, exponents = xp.frexp(xp.abs(x).max(axis=axis))
    exponents = exponents.astype(xp.int32)
    fraction = xp.ldexp(x, -xp.expand_dims(exponents, axis))  # exact: a power-of-two scale, in (-1, 1)
    size = x.shape[axis]
    shape = (x.shape[0], n_slices * size) if axis == 1 else (n_slices * size, x.shape[1])
    out = xp.empty(shape, xp.float64)
    scale = 2.0**bits
    for p in range(n_slices):
        position = p if axis == 1 else n_slices - 1 - p
        part = slice(position * size, (position + 1) * size)
        digits = out[:, part] if axis == 1 else out[part]
        fraction *= scale
        xp.trunc(fraction, out=digits)
        fraction -= digits  # the fractional part: exact
    return out, exponents


def _check_no_overflow(row_exponents, col_exponents, k: int) -> None:
    if row_exponents.size == 0 or col_exponents.size == 0:
        return
    largest = int(row_exponents.max()) + int(col_exponents.max()) + (k - 1).bit_length()
    if largest >= 1024:
        raise BackendError(
            f"matmul_dd: entries up to 2^{int(row_exponents.max())} times 2^{int(col_exponents.max())} "
            f"summed over k = {k} could overflow float64; scale the operands down"
        )


def _complex(re, im):
    """A complex128 array from float64 real and imaginary parts (numpy or cupy), exactly."""
    xp = array_module(re)
    return xp.stack([re, im], axis=-1).view(xp.complex128)[..., 0]


# -- the backend ----------------------------------------------------------------------------
class DoubleDoubleBackend(GemmBackend):
    """Double-double complex GEMM: matmul returns the float64 nearest to the exact product
    (up to about 1e-32 relative), i.e. the correctly rounded ZGEMM; slow, for references.

    Options:
        workspace_bytes: temporaries of one product; rows are processed in blocks within it.
    """

    name = "dd"
    OPTIONS = ("workspace_bytes",)

    def __init__(self, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
        super().__init__(workspace_bytes)
        self.options = {"workspace_bytes": self.workspace_bytes}

    def matmul(self, a, b):
        hi, _ = matmul_dd(a, b, workspace_bytes=self.workspace_bytes)
        m, k = a.shape
        self._count(m, k, b.shape[1])
        real_k = k if hi.dtype.kind == "f" else 2 * k  # complex products run as real ones of 2k
        self.last_call_info = {"slices": slice_plan(real_k)[1] if k else 0}
        return as_complex(hi)

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        return matmul_dd_bytes_per_row(k, n)

    def works_in_place(self, k: int, on_gpu: bool = True) -> bool:
        return False
