"""int8-auto's default rule ("fp64"): a result as accurate as native FP64 GEMM on the same inputs.

What FP64 GEMM achieves, entry by entry. Its error in C_ij = sum_l a_il b_lj is made of one
rounding per product and per addition, each at most u times a partial sum (u = 2^-53), so it is
a multiple of u S_ij with S_ij = (|A| |B|)_ij: at most gamma_k S_ij in the worst case, about
lambda sqrt(k) u S_ij with high probability (rounding errors modelled as independent, mean zero:
Higham and Mary's probabilistic analysis), and in practice less again, because BLAS libraries
accumulate in blocks and registers so that no rounding sees a partial sum of more than a few
hundred terms. Measured against a double-double product (numpy's OpenBLAS, complex inputs), the
scale that fits every input family is T_ij = ||(a_il b_lj)_l||_2, the 2-norm of the entry's terms
(the partial sums a rounding sees grow like it): the median of |error| / (u T_ij) is about
FP64_SPREAD_ERROR (1.8-2.7 for signed inputs of every dynamic range, more for all-positive ones,
whose partial sums grow) for real inner sizes n from a few hundred to 32768, and grows like
sqrt(n) below FP64_SPREAD_SATURATION. In units of S_ij the same error is 0.4-0.5 for n up to
FP64_CHAIN and falls like sqrt(FP64_CHAIN / n) beyond on narrow-range inputs, but stays near 2 on
wide-range ones (phi = 4: the few largest terms dominate both S_ij and the rounding errors), which
is why matmul plans are measured against T_ij. The error is elementwise: a small entry of C built
from small products keeps its digits.

What Ozaki-I achieves (ozaki_split.py, ozaki_plan.py). Row i of A is a fixed-point number of
s_a b-bit digits under the row scale 2^e_i (the row's largest entry), so its representation
error is absolute: at most 2^(e_i - b s_a - 1) per element, whatever the element's size; column
j of B likewise under 2^f_j, and the plan drops the digit products with p + q > T. Every error
term of entry (i, j) is therefore a multiple of 2^(e_i + f_j - b s), not of S_ij: entries whose
S_ij lies far below 2^(e_i + f_j) (rows or columns of a wide dynamic range, whose large entries
do not meet) lose the bits in between. This is how the former default (a normwise target
relative to ||a_i|| ||b_j||, FP64's worst-case gamma_n) lost up to 1e6x per entry on wide-range
inputs (the Abdelfattah et al. note in the design's papers makes the same point with its
kappa_A, kappa_B: the per-element accuracy of a fixed-point split is the row's max/min ratio
times its unit), and 20-40x normwise on ordinary ones, because real DGEMM beats its worst case.
Ozaki-II (crt.py) scales rows by their 2-norm instead: the same story with ||a_i||_2 ||b_j||_2
in place of 2^(e_i + f_j).

The rule. For a plan (s_a, s_b, T) (or m moduli) the error of entry (i, j) is modelled as a
root-sum-square of independent, mean-zero terms (the probabilistic model again: truncations
are uniform on their interval, digits of non-leading positions uniform on [-2^(b-1), 2^(b-1)),
so sums of n of them grow like sqrt(n), not n):

    truncation of A   2^(e_i - b s_a) ||b_j||_2 / sqrt(12)
    truncation of B   2^(f_j - b s_b) ||a_i||_2 / sqrt(12)
    pair (p, q) > T   2^(e_i + f_j - b (p + q)) d min(N_A(p), N_B(q))   (d = 2^b / sqrt 12, the
                      digits' RMS; N_X(p) >= ||X_p||_2 the 2-norm of digit p of the row,
                      min(d sqrt(nnz), 2^(bp) ||x||_2 / 2^e + sqrt(nnz)), F3 of ozaki_bound.py)

(Ozaki-II: crt_error, the same treatment of crt.error_bound's proof), and the plan is accepted
when this is at most half of what FP64 itself typically commits there, for every entry: for a
matmul, fp64_product_budget(n) T_ij = CONTRACT_MARGIN FP64_SPREAD_ERROR u T_ij (times
sqrt(n / FP64_SPREAD_SATURATION) for short sums); for a gate, planned without the state, the
bound fp64_budget(n) S_ij = CONTRACT_MARGIN FP64_TYPICAL_ERROR u S_ij / sqrt(max(1, n / FP64_CHAIN)).
The quotients such as 2^(e_i + f_j) / S_ij (or / T_ij) are "spans" (in bits): how far the entry's scale sits
below the scales the scheme works with. They decide the digit count, and they are estimated from
the operands' exponents alone (product_spans): a scan that counts, per side, the exponent of
every element relative to its row (integer histograms, exact on either device), so that the
plan, which must be the same on the CPU and the GPU for the bits to agree, depends on the order
of a floating-point sum only through the rows' 2-norms (as the target rule's bound did).

The span model. With alpha_il = e_i - exponent(a_il) (bits below the row scale; |a_il| lies in
[2^(e_i - alpha_il - 1), 2^(e_i - alpha_il))) and beta_lj likewise, each term of S_ij is within
a factor 2 of 2^(e_i + f_j - alpha_il - beta_lj - 1). The positions of large and small elements
within a row of A and a column of B are modelled as unrelated (random alignment): row i's alphas
are its own centre c_i (the floor of the mean alpha of its nonzero elements) plus deviations
drawn from the pool of all rows' deviations, likewise for the columns of B, and the n terms of
an entry independent draws. A Chernoff bound on the lower tail of such a sum (exact zeros
excluded: a zero product is exact in every scheme), mixed over the pairs of centres, bounds the
fraction of entries whose span exceeds a threshold; the estimate is the smallest span exceeded
by fewer than BEYOND_SPAN_ENTRIES of the entries; or, where smaller, the same from the largest
elements alone (_meeting_span: row i's largest element meets some element of column j, and
column j's largest some element of row i). Against the spans measured directly (|A| |B| in
float64) on the seed paper's inputs (phi = 0.1 .. 6, k = 8 .. 4096) and on normal and uniform
ones, the estimate was at most about two bits below the largest span and typically 1-4 bits
above it (more for very short rows of very wide range). The model does not hold for inputs whose
small elements are placed against the other operand's support on purpose (say a row [X, eps Y]
times a column [0; Z], the large elements never meeting anything): `target_error=` gives a
rigorous (normwise) guarantee for such inputs, and `bound="worst-case"` the former default.

Spans relative to T_ij apply the same model to the squared terms, whose sum is T_ij^2
(product_spans(power=2)); against the measured ones they sit the same 0-3 bits above.

Gates (apply_batched, the simulator) are planned without looking at the state (a pass over it
costs more than the gate), and for every state: where every entry of a gate row is significant,
S_i >= mu_i ||x||_1 >= mu_i max_l |x_l| (mu_i the row's smallest |u_il|) bounds the state's
truncation, the gate's and the dropped pairs entry by entry, with 2^e_x <= (512/127) max|x| (F4)
and the state's digits at most 2^(b-1); in a row with zero entries only the gate's truncation is
certified entry by entry (zeros multiply exactly; S_i >= mu_i times the state on the row's
support), the state's terms normwise per entry, relative to ||u_i||_2 ||x||_2 (which S_i
approaches for states whose columns are spread). Gate entries below u ||u_i||_2 count as zeros:
their products sit below FP64's own rounding of the row's sum. Large gates on Ozaki-II are
planned normwise on both sides (crt_error relative to ||u_i|| ||x||).
"""
import math
from dataclasses import dataclass

import numpy as np

from .crt import MAX_INNER, crt_plan
from .bound import MAX_DIGITS, UNIT_ROUNDOFF
from .spans import ProductSpans, SpanSummary
from .split import max_digit

# FP64 GEMM's mean error over u S_ij for inner sums within one chain (module docstring), and the
# fraction of it an accepted plan's modelled error may reach.
FP64_TYPICAL_ERROR = 0.4
CONTRACT_MARGIN = 0.5
# Real inner size over which FP64 GEMM's rounding errors add up in one chain before the library
# starts a new block (module docstring); past it FP64's error grows like sqrt(n), not like S_ij.
FP64_CHAIN = 512
# FP64 GEMM's typical error over u T_ij for real inner sizes n >= FP64_SPREAD_SATURATION, and
# below it times sqrt(n / FP64_SPREAD_SATURATION) (module docstring: "The product rule").
FP64_SPREAD_ERROR = 2.5
FP64_SPREAD_SATURATION = 192
# F4 of ozaki_bound.py: 2^e <= (2^(b+1) / (2^(b-1) - 1)) max|x| for b-bit digits; b = 8.
SCALE_OVER_MAX = 512 / 127


def fp64_budget(inner: int) -> float:
    """The error an accepted gate plan may make, relative to S_ij: CONTRACT_MARGIN times FP64's
    typical error for the real inner size `inner` (2k for a complex product)."""
    chains = max(1.0, max(int(inner), 1) / FP64_CHAIN)
    return CONTRACT_MARGIN * FP64_TYPICAL_ERROR * UNIT_ROUNDOFF / math.sqrt(chains)


def fp64_product_budget(inner: int) -> float:
    """The error an accepted matmul plan may make, relative to T_ij = ||(a_il b_lj)_l||_2:
    CONTRACT_MARGIN times FP64's typical error there for the real inner size `inner`."""
    growth = math.sqrt(min(max(int(inner), 1), FP64_SPREAD_SATURATION) / FP64_SPREAD_SATURATION)
    return CONTRACT_MARGIN * FP64_SPREAD_ERROR * UNIT_ROUNDOFF * growth


# -- Ozaki-I: error coefficients of a plan ------------------------------------------------------
@dataclass(frozen=True)
class ErrorModel:
    """The modelled error of an Ozaki-I plan, relative to the scale the contract compares with:

        estimate(s_a, s_b, T)^2 = (trunc_a 2^(-b s_a))^2 + (trunc_b 2^(-b s_b))^2
                                  + sum over p <= s_a, q <= s_b, p + q > T of (pair[p, q] 2^(-b(p+q)))^2

    pair: (MAX_DIGITS, MAX_DIGITS), index [p - 1, q - 1]."""

    bits: int
    trunc_a: float
    trunc_b: float
    pair: np.ndarray

    def estimates(self, candidates: np.ndarray) -> np.ndarray:
        """estimate for every row (s_a, s_b, T) of candidates (c, 3) int, at once."""
        with np.errstate(over="ignore", invalid="ignore"):  # spans beyond the range: inf, no plan
            return self._estimates(candidates)

    def _estimates(self, candidates: np.ndarray) -> np.ndarray:
        b = self.bits
        p = np.arange(1, MAX_DIGITS + 1)
        squares = (self.pair * np.ldexp(1.0, -b * (p[:, None] + p[None, :]))) ** 2
        diagonal = p[:, None] + p[None, :]
        # beyond[s_a - 1, s_b - 1, T]: sum of squares over p <= s_a, q <= s_b, p + q > T
        tops = np.arange(2 * MAX_DIGITS + 1)
        beyond = np.where(diagonal[:, :, None] > tops, squares[:, :, None], 0.0).cumsum(axis=0).cumsum(axis=1)
        s_a, s_b, top = candidates[:, 0], candidates[:, 1], candidates[:, 2]
        total = (self.trunc_a * np.ldexp(1.0, -b * s_a)) ** 2 + (self.trunc_b * np.ldexp(1.0, -b * s_b)) ** 2 \
            + beyond[s_a - 1, s_b - 1, top]
        return np.sqrt(total)

    def estimate(self, plan) -> float:
        return float(self.estimates(np.array([[plan.a_slices, plan.b_slices, plan.top]]))[0])


def digit_norms(norm: float, nnz: int, bits: int) -> np.ndarray:
    """(MAX_DIGITS,) N(p) >= ||X_p||_2 for a row of 2-norm norm 2^e with nnz nonzero elements
    (module docstring): min(d sqrt(nnz), 2^(bp) norm + sqrt(nnz)), d the digits' RMS."""
    p = np.arange(1, MAX_DIGITS + 1)
    root = math.sqrt(nnz)
    return np.minimum(digit_rms(bits) * root, np.ldexp(norm, bits * p) + root)


def digit_rms(bits: int) -> float:
    """The RMS of a digit uniform on [-2^(b-1), 2^(b-1))."""
    return 2.0**bits / math.sqrt(12.0)


def matmul_error_model(a: SpanSummary, b: SpanSummary, spans: ProductSpans, bits: int) -> ErrorModel:
    """The ErrorModel of A B relative to S_ij (module docstring), the spans turning each term's
    own scale into S_ij."""
    rms = digit_rms(bits)
    pair = rms * np.minimum(digit_norms(a.norm, a.nnz, bits)[:, None], digit_norms(b.norm, b.nnz, bits)[None, :])
    return ErrorModel(bits, _exp2(spans.a_exponent_b_norm) / math.sqrt(12.0),
                      _exp2(spans.a_norm_b_exponent) / math.sqrt(12.0), pair * _exp2(spans.exponents))


def _exp2(bits: float) -> float:
    """2^bits, inf beyond the float64 range (a span that large meets no plan)."""
    return math.inf if bits > 1023 else 2.0**bits


def gate_error_model(gate_rows, gate_exponents, bits: int, every_state: bool = True) -> ErrorModel:
    """The ErrorModel of y = U x for every state column x (module docstring), from the gate's
    embedded rows (2K, 2K) float64 (rows 2i, 2i + 1 of output i, ozaki_gate.embedded_gate_rows)
    and their exponents, on the host. A = the states' columns, B = the gate. every_state=False
    compares the state's terms normwise on every row, as for rows with zeros: no per-entry
    guarantee for a column whose largest amplitude meets the row's smallest entry (no rule uses
    it; scripts/dev/gate_alignment_cost.py measures what the guarantee costs).

    Scales: S_i = sum_l |u_il| |x_l| >= mu_i ||x||_1 >= mu_i max_l |x_l| when every entry of row
    i is significant (mu_i its smallest |u_il|); otherwise the state's terms are compared with
    ||u_i|| ||x|| (normwise) and the gate's with mu_i (over the significant entries) times the
    state on the row's support. With 2^e_x <= (512/127) max|x| (F4) and complex entries (two real
    parts, each truncated uniformly):
        state truncation   delta_x sqrt(2/3) ||u_i||,        delta_x = 2^(e_x - b s_a - 1)
        gate truncation    delta_u sqrt(2/3) ||x||_2,         delta_u = 2^(f_i - b s_b - 1)
        pair (p, q)        sqrt 2 2^(e_x + f_i - b(p+q)) 2^(b-1) N_U(i, q)   (state digits <= 2^(b-1))
    each divided by its scale; the maximum over rows of each coefficient is taken."""
    gate_rows = np.asarray(gate_rows, np.float64)
    re, im = gate_rows[0::2, 0::2], gate_rows[1::2, 0::2]  # Re u_il, Im u_il
    magnitude = np.hypot(re, im)
    row_norm = np.sqrt((magnitude * magnitude).sum(axis=1))
    live = row_norm > 0
    if not live.any():
        return ErrorModel(bits, 0.0, 0.0, np.zeros((MAX_DIGITS, MAX_DIGITS)))
    magnitude, row_norm = magnitude[live], row_norm[live]
    significant = magnitude >= UNIT_ROUNDOFF * row_norm[:, None]
    smallest = np.where(significant, magnitude, np.inf).min(axis=1)
    entrywise = significant.all(axis=1) & every_state
    state_scale = np.where(entrywise, smallest, row_norm)  # per row: mu_i, or ||u_i|| (normwise)
    exponent_scale = np.ldexp(1.0, gate_exponents[0::2].astype(np.int64))[live]  # 2^f_i
    factor = math.sqrt(2.0 / 3.0)
    trunc_a = float((0.5 * SCALE_OVER_MAX * factor * row_norm / state_scale).max())
    trunc_b = float((0.5 * factor * exponent_scale / smallest).max())
    nnz = int(np.count_nonzero(gate_rows, axis=1).max())
    gate_digits = digit_norms(float((row_norm / exponent_scale).max()), nnz, bits)
    worst_scale = float((exponent_scale / state_scale).max())
    per_q = math.sqrt(2.0) * SCALE_OVER_MAX * max_digit(bits) * gate_digits * worst_scale
    return ErrorModel(bits, trunc_a, trunc_b, np.broadcast_to(per_q[None, :], (MAX_DIGITS, MAX_DIGITS)).copy())


# -- Ozaki-II -------------------------------------------------------------------------------------
def crt_error(n_moduli: int, k: int, gaussian: bool = False) -> float:
    """The modelled error of int8-crt-<m> (int8-gcrt-<m> when gaussian) per real part of an
    entry, relative to ||a_i|| ||b_j||:
    the probabilistic counterpart of crt.error_bound (its proof's terms, with the truncations
    uniform and independent): (2 / sqrt 3) (1 + g) sqrt(2^(-2 beta_A) + 2^(-2 beta_B)), the
    sqrt(2k) of the worst case gone."""
    plan = crt_plan(n_moduli, gaussian)
    growth = 1.0 + math.sqrt(2 * k) * 2.0**-15
    return 2.0 / math.sqrt(3.0) * growth * math.hypot(2.0**-plan.a_bits, 2.0**-plan.b_bits)


def crt_moduli(k: int, span_bits: float, budget: float, candidates, gaussian: bool = False) -> int:
    """The fewest moduli in candidates (of the Gaussian kind when gaussian) whose crt_error,
    times 2^span_bits (the norms over the entry's scale), meets budget (relative to that scale);
    None when none does or k is too large for the scheme."""
    if not 1 <= k <= MAX_INNER:
        return None
    return next((m for m in candidates if crt_error(m, k, gaussian) * _exp2(span_bits) <= budget), None)
