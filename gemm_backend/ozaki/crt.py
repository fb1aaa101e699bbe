"""Chinese-remainder arithmetic of the Ozaki-II scheme (backend int8-crt-<m>): the specification.

C = A B (A: (r, k), B: (k, c), real or complex) is computed from one exact integer product:

1. Scaling. Row i of A is scaled by 2^s_i and truncated toward zero, a'_ih = trunc(2^s_i a_ih)
   (real and imaginary parts separately); column j of B likewise by 2^t_j. s_i is the largest
   exponent the row's bound allows (`row_scales`): ||a'_i||_2 <= 2^beta_A, and
   ||b'_j||_2 <= 2^beta_B, with beta_A + beta_B = T and 2^T <= M/2 - M/2^32 for the product
   M = p_1 ... p_m of the moduli. By Cauchy-Schwarz every part of C' = A' B' then satisfies
   |Re C'_ij|, |Im C'_ij| <= sum_h |a'_ih| |b'_hj| <= 2^T < M/2: C' is fixed by its residues.
2. Residues. Every integer part is reduced to its symmetric residue modulo each p_l (in
   [-128, 127] for 256, in [-(p-1)/2, (p-1)/2] for odd p; int8). Complex inputs also give the
   residue of Re + Im, for Karatsuba: Re C' = P1 - P2 and Im C' = P3 - P1 - P2 with P1 = Ar Br,
   P2 = Ai Bi, P3 = (Ar + Ai)(Br + Bi), all valid modulo p. Each P is an INT8 x INT8 -> INT32
   GEMM, exact while k * 128^2 < 2^31 (k <= MAX_INNER).
   Gaussian moduli (int8-gcrt-<m>) take two products per modulus instead of three: every prime
   factor of such a p is 1 mod 4, so -1 has a square root i_p modulo p, and z = Re + i Im maps to
   the pair (Re + i_p Im, Re - i_p Im) mod p, a ring isomorphism of the Gaussian integers mod p
   onto two copies of Z/p. The complex product becomes two real ones, P+ = A+ B+ and
   P- = A- B-, and Re C' = (P+ + P-) / 2, Im C' = (P+ - P-) / (2 i_p) modulo p (p odd). Such
   moduli are fewer and smaller (241, 233, 229, 221, ...: about 7 bits each against 8), so a
   plan needs one or two more of them for the same M, at 2/3 of the products per modulus.
3. Reconstruction. With Q_l = M / p_l and y_l = Q_l^-1 mod p_l, w_l = (y_l * (C' mod p_l)) mods
   p_l gives X = sum_l w_l Q_l == C' (mod M) and X / M = sum_l w_l / p_l, so
   C' = X - n M with n = round(sum_l w_l / p_l). X is summed exactly in LIMB_BITS-bit limbs held
   as float64 integers; n is rounded from a float64 sum whose error (< 1e-13) is far inside the
   margin |C'| / M <= 1/2 - 2^-32, so it is exact however the sum is evaluated. The limbs are
   normalised and C' is rounded once: the output is the float64 nearest to C' 2^(-s_i - t_j)
   (ties to even), rounded a second time only where that is subnormal (ldexp).

Every step is exact integer arithmetic (on float64 or int64 values that are integers below
2^53) except the truncation of step 1 and the one rounding of step 3, so any evaluation order,
FMA contraction or device gives the same bits: the CUDA kernels in kernels/ozaki_crt.cu repeat
these functions operation for operation and must agree with them bit for bit, except that they may
take any residue modulo p_l as w_l (X and n move by multiples of M and 1; C' = X - n M does not).

Error bound (`error_bound`, proof in its docstring): for every entry and each real part,
    |fl(C)_ij - C_ij| <= u |C_ij| + (1 + u) eps(m, k) ||a_i||_2 ||b_j||_2   (u = 2^-53),
plus at most 2^-1075 where the result is subnormal; ||a_i||_2 is the 2-norm of row i of A
(complex moduli), ||b_j||_2 that of column j of B.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np

from ..arrays import array_module
from ..errors import BackendError
from ..registry import moduli_counts

MAX_INNER = (2**31 - 1) // 128**2  # 131071: k * 128 * 128 stays below 2^31 (int32 products exact)
SCALE_BITS = 16  # row bounds use 16-bit ceilings of |x| / 2^e: q <= 2^16, sums of 2 MAX_INNER q^2 < 2^53
LIMB_BITS = 32
MARGIN_BITS = 32  # |C'| <= M/2 - M/2^MARGIN_BITS leaves room for the rounding of n
MAX_MODULUS = 256
WINDOW_BITS = 62  # C' is rounded to odd on 62 bits (>= 53 + 2), then to nearest on 53
_INTEGER_LIMB_SCALES = (2.0**64, 2.0**32)  # a scaled value splits as x2 2^64 + x1 2^32 + x0


# -- moduli and constants ------------------------------------------------------------------------
def gaussian_moduli(count: int) -> tuple:
    """The `count` largest pairwise coprime odd integers <= 256 whose prime factors are all
    1 mod 4 (so that -1 is a square modulo each), greedily: 241, 233, 229, 221, 205, 197, ..."""
    chosen = []
    for candidate in range(MAX_MODULUS - 1, 4, -2):
        if len(chosen) == count:
            break
        if all(f % 4 == 1 for f in _prime_factors(candidate)) and all(math.gcd(candidate, p) == 1 for p in chosen):
            chosen.append(candidate)
    if len(chosen) < count:
        raise BackendError(f"there are only {len(chosen)} Gaussian moduli below {MAX_MODULUS}, not {count}")
    return tuple(chosen)


def _prime_factors(n: int) -> list:
    factors, d = [], 2
    while d * d <= n:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1
    return factors + ([n] if n > 1 else [])


def square_root_of_minus_one(p: int) -> int:
    """The least i in [1, p) with i^2 == -1 (mod p) (p a Gaussian modulus)."""
    return next(i for i in range(1, p) if (i * i + 1) % p == 0)


def pairwise_coprime_moduli(count: int) -> tuple:
    """The `count` largest pairwise coprime integers <= 256, greedily from 256 down:
    256, 255, 253, 251, 247, 241, 239, 233, ..."""
    chosen = []
    for candidate in range(MAX_MODULUS, 1, -1):
        if len(chosen) == count:
            break
        if all(math.gcd(candidate, p) == 1 for p in chosen):
            chosen.append(candidate)
    return tuple(chosen)


@dataclass(frozen=True)
class CrtPlan:
    """Constants of the scheme with m moduli (integers as Python ints, tables as float64).

    moduli (m,), product M, total_bits T (2^T <= M/2 - M/2^32), a_bits + b_bits = T (the row
    norm bounds 2^beta_A, 2^beta_B), limbs L (LIMB_BITS-bit limbs hold M). Tables: p, inv_p
    (fl(1/p)), inverse (y_l), pow2_32 and pow2_64 (2^32, 2^64 mod p, for residues of values
    >= 2^32), partial_limbs (m, L) the limbs of Q_l = M / p_l, product_limbs (L,) those of M.
    gaussian: the moduli are gaussian_moduli; then root (i_p), re_inverse (y_l / 2) and
    im_inverse (y_l / (2 i_p)), all mod p_l, turn P+, P- into w_l of Re and Im directly.
    """

    gaussian: bool
    moduli: tuple
    product: int
    total_bits: int
    a_bits: int
    b_bits: int
    limbs: int
    p: np.ndarray
    inv_p: np.ndarray
    inverse: np.ndarray
    pow2_32: np.ndarray
    pow2_64: np.ndarray
    partial_limbs: np.ndarray
    product_limbs: np.ndarray
    root: np.ndarray
    re_inverse: np.ndarray
    im_inverse: np.ndarray

    @property
    def count(self) -> int:
        return len(self.moduli)

    def parts(self, is_complex: bool) -> int:
        """INT8 products per modulus: 1 real, 3 complex (Karatsuba), 2 complex on Gaussian moduli."""
        return (2 if self.gaussian else 3) if is_complex else 1


@functools.lru_cache(maxsize=None)
def crt_plan(n_moduli: int, gaussian: bool = False) -> CrtPlan:
    span = moduli_counts(gaussian)
    if n_moduli not in span:
        raise BackendError(f"the number of {'Gaussian ' if gaussian else ''}moduli must be in "
                           f"{span.start}..{span.stop - 1}, got {n_moduli}")
    moduli = gaussian_moduli(n_moduli) if gaussian else pairwise_coprime_moduli(n_moduli)
    product = math.prod(moduli)
    below_half = product // 2 - -(-product >> MARGIN_BITS)  # <= M/2 - M/2^32
    total_bits = below_half.bit_length() - 1
    limbs = -(-product.bit_length() // LIMB_BITS)
    partials = [product // p for p in moduli]
    table = functools.partial(np.array, dtype=np.float64)
    inverse = [pow(q, -1, p) for q, p in zip(partials, moduli)]
    roots = [square_root_of_minus_one(p) if gaussian else 0 for p in moduli]
    return CrtPlan(
        gaussian=gaussian, root=table(roots),
        re_inverse=table([y * pow(2, -1, p) % p if gaussian else 0 for y, p in zip(inverse, moduli)]),
        im_inverse=table([y * pow(2 * i, -1, p) % p if gaussian else 0 for y, i, p in zip(inverse, roots, moduli)]),
        moduli=moduli, product=product, total_bits=total_bits, a_bits=total_bits // 2,
        b_bits=total_bits - total_bits // 2, limbs=limbs,
        p=table(moduli), inv_p=table([1.0 / p for p in moduli]),
        inverse=table(inverse),
        pow2_32=table([pow(2, 32, p) for p in moduli]), pow2_64=table([pow(2, 64, p) for p in moduli]),
        partial_limbs=table([_limbs(q, limbs) for q in partials]), product_limbs=table(_limbs(product, limbs)),
    )


def _limbs(value: int, count: int) -> list:
    mask = (1 << LIMB_BITS) - 1
    return [(value >> (LIMB_BITS * j)) & mask for j in range(count)]


# -- error bound ----------------------------------------------------------------------------------
def error_bound(n_moduli: int, k: int, gaussian: bool = False) -> float:
    """eps(m, k): the truncation error of int8-crt-<m> (int8-gcrt-<m> when gaussian) relative
    to ||a_i||_2 ||b_j||_2 (the moduli enter only through T, beta_A and beta_B).

    For A (r, k), B (k, c) real or complex and every entry, each of Re and Im satisfies
        |fl(C)_ij - C_ij| <= u |C_ij| + (1 + u) eps ||a_i||_2 ||b_j||_2,
        eps = 2 sqrt(2k) (1 + g) (2^-beta_A + 2^-beta_B) + 8 k (1 + g)^2 2^-T,  g = sqrt(2k) 2^(1-16),
    (u = 2^-53; add 2^-1075 where fl(C)_ij is subnormal). Since ||a_i||_2 < sqrt(2k) 2^e_i with
    2^e_i above every |Re a_ih|, |Im a_ih| (and likewise f_j for B), the bound relative to the
    scale products is 2k eps 2^(e_i + f_j).

    Proof. Write row i of A as a_h (h < k), its scale s, a'_h = trunc(2^s a_h) per part, so
    2^s a_h = a'_h + d_h with |d_h| < sqrt 2 (each part truncates by less than 1) and
    |a'_h| <= 2^s |a_h|; column j of B likewise with t, b'_h, e_h. Then
        2^(s+t) C_ij - C'_ij = sum_h (a'_h e_h + d_h b'_h + d_h e_h) =: E,
    and each part of E is at most |E| <= sqrt 2 (2^s ||a||_1 + 2^t ||b||_1) + 2k, with
    ||a||_1 <= sqrt(k) ||a||_2. `row_scales` sets s = beta_A - e + 16 - v, where v is the least
    integer with 4^v >= S = sum over the real parts x of q^2, q = ceil(|x| 2^(16-e)) (1 at least
    for x != 0), so q <= |x| 2^(16-e) + 1 and sqrt(S) <= 2^(16-e) ||a||_2 + sqrt(2k). By the
    minimality of v, 2^v < 2 sqrt(S), hence
        2^-s < 2^(1 - beta_A) (||a||_2 + sqrt(2k) 2^(e-16)) <= 2^(1 - beta_A) (1 + g) ||a||_2,
    using 2^(e-1) <= max |x| <= ||a||_2. With the same for t and beta_B,
        |E| 2^(-s-t) <= sqrt(2k) (2^-t ||a||_2 + 2^-s ||b||_2) + 2k 2^(-s-t)
                     < eps ||a||_2 ||b||_2.
    C' is reconstructed exactly (module docstring) and rounded once to nearest: fl(C) =
    (C' 2^(-s-t))(1 + d), |d| <= u, so |fl(C) - C| <= u |C' 2^(-s-t)| + |E| 2^(-s-t)
    <= u |C| + (1 + u) |E| 2^(-s-t). A zero row or column gives exact zeros. QED.
    """
    plan = crt_plan(n_moduli, gaussian)
    growth = 1.0 + math.sqrt(2 * k) * 2.0 ** (1 - SCALE_BITS)
    return (2 * math.sqrt(2 * k) * growth * (2.0**-plan.a_bits + 2.0**-plan.b_bits)
            + 8 * k * growth**2 * 2.0**-plan.total_bits)


def moduli_for_target(target: float, k: int, gaussian: bool = False):
    """The fewest moduli m (in CRT_MODULI; GAUSSIAN_MODULI when gaussian) with
    error_bound(m, k, gaussian) <= target, or None when even the largest m does not reach it.
    target: error relative to ||a_i||_2 ||b_j||_2 (error_bound)."""
    if not target > 0:
        raise BackendError(f"the error target must be a positive number, got {target!r}")
    if not 1 <= k <= MAX_INNER:
        raise BackendError(f"inner size k must be in 1..{MAX_INNER} for int8-crt, got {k}")
    return next((m for m in moduli_counts(gaussian) if error_bound(m, k, gaussian) <= target), None)


# -- step 1: scales -------------------------------------------------------------------------------
def row_scales(rows, bits: int):
    """(s, finite): the exponents s (r,) int32 with ||trunc(2^s_i rows_i)||_2 <= 2^bits, as
    large as the 16-bit bound allows (error_bound), 0 for all-zero rows; and a 0-d bool array,
    False when rows holds NaN or Inf. rows: (r, w) float64, the real parts of the matrix rows
    (the float64 view of complex rows). Every step is exact: frexp, ldexp by a power of two of
    a value below 2^16 (or so small that its ceiling is 1 anyway), ceil, and sums of integers
    below 2^53."""
    xp = array_module(rows)
    magnitude = xp.abs(rows)
    row_max = magnitude.max(axis=1)
    finite = xp.isfinite(row_max).all()
    if not bool(finite):
        return xp.zeros(rows.shape[0], xp.int32), finite
    exponents = xp.frexp(row_max)[1].astype(xp.int32)
    ceilings = xp.ceil(xp.ldexp(magnitude, (SCALE_BITS - exponents)[:, None]))
    ceilings[(ceilings == 0) & (magnitude > 0)] = 1.0  # the quotient underflowed below 2^-1074
    squares = (ceilings * ceilings).sum(axis=1)
    half_log = (xp.frexp(xp.maximum(squares - 1.0, 0.0))[1] + 1) // 2  # least v with 4^v >= squares
    scales = xp.where(squares > 0, bits - exponents + SCALE_BITS - half_log, 0)
    return scales.astype(xp.int32), finite


# -- step 2: residues -----------------------------------------------------------------------------
def symmetric_mod(y, p, inv_p):
    """The residue of the integers y (float64, |y| < 2^50) modulo p in [-floor(p/2), floor((p-1)/2)]:
    y - p rint(y fl(1/p)), exact (p rint(.) is an integer below 2^51). The quotient's rounding
    moves r by at most p: for p = 256 a tie y/p = n + 1/2 goes to even and can give r = 128;
    for odd p y/p stays 1/(2p) away from ties, far beyond the quotient's error, and r is in
    range already; the lower test is a guard."""
    xp = array_module(y)
    r = y - p * xp.rint(y * inv_p)
    r = xp.where(r > (p - 1) // 2, r - p, r)
    return xp.where(r < -(p // 2), r + p, r)


def scaled_limbs(rows, scales) -> tuple:
    """(x2, x1, x0) float64 integers with trunc(2^s_i rows_ih) = x2 2^64 + x1 2^32 + x0, each
    with the value's sign, |x1|, |x0| < 2^32 and |x2| < 2^16 (values stay below 2^80). Exact: the
    products by powers of two, trunc, and differences of integers sharing their high bits."""
    xp = array_module(rows)
    value = xp.trunc(xp.ldexp(rows, scales[:, None]))
    pieces = []
    for scale in _INTEGER_LIMB_SCALES:
        high = xp.trunc(value * (1.0 / scale))
        pieces.append(high)
        value = value - high * scale
    return (*pieces, value)


def residues(rows, scales, plan: CrtPlan, is_complex: bool):
    """(m, G, r, k) int8 symmetric residues of the scaled, truncated rows (r, w) float64
    modulo each p_l; G = plan.parts(is_complex): 1 part for real rows (w = k); for complex rows
    (w = 2k, interleaved re, im) Re, Im and Re + Im, or on Gaussian moduli Re + i_p Im and
    Re - i_p Im (|i_p Im| < 2^15: exact)."""
    xp = array_module(rows)
    x2, x1, x0 = scaled_limbs(rows, scales)
    width = rows.shape[1] // (2 if is_complex else 1)
    out = xp.empty((plan.count, plan.parts(is_complex), rows.shape[0], width), xp.int8)
    for index, (p, inv_p, pow2_32, pow2_64) in enumerate(zip(plan.moduli, plan.inv_p, plan.pow2_32, plan.pow2_64)):
        r = symmetric_mod(x2 * pow2_64 + x1 * pow2_32 + x0, p, inv_p)
        if not is_complex:
            out[index, 0] = r
            continue
        re, im = r[:, 0::2], r[:, 1::2]
        if plan.gaussian:
            turned = plan.root[index] * im
            out[index] = xp.stack([symmetric_mod(re + turned, p, inv_p), symmetric_mod(re - turned, p, inv_p)])
        else:
            out[index] = xp.stack([re, im, symmetric_mod(re + im, p, inv_p)])
    return out


# -- step 3: reconstruction -----------------------------------------------------------------------
class CrtAccumulator:
    """Sum_l w_l Q_l in limbs and sum_l w_l / p_l for an (r, c) block of outputs, modulus by
    modulus (`add`), then the rounded result (`result`). Parts: 1 (real) or 2 (Re, Im)."""

    def __init__(self, plan: CrtPlan, parts: int, shape: tuple, xp=np):
        self.plan = plan
        self.limbs = xp.zeros((parts, plan.limbs) + tuple(shape))
        self.fraction = xp.zeros((parts,) + tuple(shape))

    def add(self, index: int, products) -> None:
        """products: (G, r, c) float64 exact integers, the INT8 products of modulus `index`
        (P1 for real inputs; P1, P2, P3 for complex ones; P+, P- on Gaussian moduli)."""
        plan = self.plan
        p, inv_p = plan.moduli[index], plan.inv_p[index]
        if plan.gaussian and products.shape[0] == 2:  # |P+ +- P-| < 2^32, times < 2^8: exact below 2^50
            xp = array_module(products)
            plus, minus = products
            w = symmetric_mod(xp.stack([(plus + minus) * plan.re_inverse[index],
                                        (plus - minus) * plan.im_inverse[index]]), p, inv_p)
        else:
            w = symmetric_mod(combine_products(products) * plan.inverse[index], p, inv_p)
        self.fraction += w * inv_p
        for j in range(plan.limbs):
            self.limbs[:, j] += w * plan.partial_limbs[index, j]

    def result(self, row_scales, col_scales):
        """(parts, r, c) float64: the nearest double to C' 2^(-s_i - t_j) for every part."""
        xp = array_module(self.limbs)
        multiple = xp.rint(self.fraction)
        digits = self.limbs - multiple[:, None] * xp.asarray(self.plan.product_limbs)[:, None, None]
        exponents = -(row_scales[:, None].astype(xp.int64) + col_scales[None, :])
        return round_limbs(digits, exponents)


def combine_products(products):
    """(parts, r, c): P1 for one real product; Re = P1 - P2, Im = P3 - P1 - P2 (Karatsuba) for
    three; exact (|Im| < 3 * 2^31)."""
    if products.shape[0] == 1:
        return products
    xp = array_module(products)
    p1, p2, p3 = products
    return xp.stack([p1 - p2, p3 - p1 - p2])


def _carry(digits) -> None:
    """Normalise limbs (axis 1, float64 integers below 2^53) in place: all but the top one in
    [0, 2^32), the top one holding the sign. Exact."""
    xp = array_module(digits)
    for j in range(digits.shape[1] - 1):
        carry = xp.floor(digits[:, j] * 2.0**-LIMB_BITS)
        digits[:, j] -= carry * 2.0**LIMB_BITS
        digits[:, j + 1] += carry


def round_limbs(digits, exponents):
    """The nearest float64 (ties to even) to V 2^exponents, V = sum_j digits[:, j] 2^(32 j).

    digits: (parts, L, ...) float64 integers below 2^53 (consumed); exponents: int array
    broadcasting against (...). V is normalised to sign and magnitude, cut to a WINDOW_BITS-bit
    window whose last bit is ORed with every bit below it (round to odd), and the window is
    converted to float64 (round to nearest, which after rounding to odd on >= 55 bits is the
    correct rounding of V) and scaled by ldexp.
    """
    xp = array_module(digits)
    _carry(digits)
    negative = digits[:, -1] < 0
    digits *= xp.where(negative, -1.0, 1.0)[:, None]
    _carry(digits)
    magnitude = digits.astype(xp.int64)
    n_limbs = digits.shape[1]
    positions = LIMB_BITS * xp.arange(n_limbs).reshape((1, n_limbs) + (1,) * (digits.ndim - 2))
    bit_length = xp.where(magnitude > 0, positions + xp.frexp(digits)[1], 0).max(axis=1)
    shift = xp.maximum(bit_length - WINDOW_BITS, 0)
    window = xp.zeros_like(shift)
    sticky = xp.zeros_like(shift)
    for j in range(n_limbs):
        offset = LIMB_BITS * j - shift  # where limb j lands in the window
        limb = magnitude[:, j]
        window |= (limb >> xp.clip(-offset, 0, 63)) << xp.clip(offset, 0, 63)
        sticky |= limb & ((1 << xp.clip(-offset, 0, LIMB_BITS)) - 1)
    window |= (sticky != 0).astype(window.dtype)
    value = xp.ldexp(window.astype(xp.float64), (shift + exponents).astype(xp.int32))
    return xp.where(negative, -value, value)
