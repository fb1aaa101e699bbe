"""int8-auto's default rule ("fp64"): a result as accurate as native FP64 GEMM on the same inputs.

What FP64 GEMM achieves, entry by entry. Its error in C_ij = sum_l a_il b_lj is made of one
rounding per product and per addition, each at most u times a partial sum (u = 2^-53), so it is
a multiple of u S_ij with S_ij = (|A| |B|)_ij: at most gamma_k S_ij in the worst case, about
lambda sqrt(k) u S_ij with high probability (rounding errors modelled as independent, mean zero:
Higham and Mary's probabilistic analysis), and in practice less again, because BLAS libraries
accumulate in blocks and registers so that no rounding sees a partial sum of more than a few
hundred terms. Measured against a double-double product (numpy's OpenBLAS, complex inputs):
mean |error| / (u S_ij) is about FP64_TYPICAL_ERROR (0.3-0.5) for real inner sizes n up to
FP64_CHAIN and falls like sqrt(FP64_CHAIN / n) beyond, for inputs of every dynamic range (more
for all-positive inputs, whose partial sums grow). The error is elementwise: a small entry of C
built from small products keeps its digits.

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
when this is at most fp64_budget(n) S_ij = CONTRACT_MARGIN FP64_TYPICAL_ERROR u S_ij /
sqrt(max(1, n / FP64_CHAIN)) for every entry: half of what FP64 itself typically commits there.
The quotients such as 2^(e_i + f_j) / S_ij are "spans" (in bits): how far the entry's scale sits
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

from ..arrays import array_module, to_host
from .crt import MAX_INNER, crt_plan
from .bound import MAX_DIGITS, UNIT_ROUNDOFF
from .split import max_digit

# FP64 GEMM's mean error over u S_ij for inner sums within one chain (module docstring), and the
# fraction of it an accepted plan's modelled error may reach.
FP64_TYPICAL_ERROR = 0.4
CONTRACT_MARGIN = 0.5
# Real inner size over which FP64 GEMM's rounding errors add up in one chain before the library
# starts a new block (module docstring); past it FP64's error grows like sqrt(n), not like S_ij.
FP64_CHAIN = 512
# The span estimate may be exceeded by this many entries of the product, in expectation.
BEYOND_SPAN_ENTRIES = 0.1
# Bits of an element below its row scale (alpha) and centres run over 1 .. 2098 (2^1023 down to
# 2^-1074); deviations from a row's centre over -2097 .. 2097. Histograms hold them from index 0.
SPAN_OFFSET = 2112
SPAN_BINS = 2 * SPAN_OFFSET
CENTER_BINS = SPAN_OFFSET
# F4 of ozaki_bound.py: 2^e <= (2^(b+1) / (2^(b-1) - 1)) max|x| for b-bit digits; b = 8.
SCALE_OVER_MAX = 512 / 127
_T_GRID = np.logspace(-2, 14, 97)  # Chernoff parameter t = lambda s, dimensionless


def fp64_budget(inner: int) -> float:
    """The error an accepted plan may make, relative to S_ij: CONTRACT_MARGIN times FP64's typical
    error for the real inner size `inner` (2k for a complex product)."""
    chains = max(1.0, max(int(inner), 1) / FP64_CHAIN)
    return CONTRACT_MARGIN * FP64_TYPICAL_ERROR * UNIT_ROUNDOFF / math.sqrt(chains)


# -- the scan: per-side statistics ------------------------------------------------------------
@dataclass(frozen=True)
class SpanSummary:
    """What the rule needs of one operand's rows (rows of A, or columns of B as rows), each row
    with its exponent e (ozaki_split.row_exponents). Counts are exact integers.

    inner: row length (real); rows: rows with a nonzero element; zeros: zero elements in them;
    deviations: (SPAN_BINS,) counts of alpha - centre + SPAN_OFFSET over the nonzero elements;
    centers: (CENTER_BINS,) counts of the rows' centres (floor of their mean alpha);
    norm_centers: likewise of centre + round(log2(||x||_2 / 2^e)) (the centre relative to the norm);
    norm: max ||x||_2 / 2^e; nnz: max nonzero elements of a row; alphas: (CENTER_BINS,) counts of
    alpha itself over the nonzero elements.
    """

    inner: int
    rows: int
    zeros: int
    deviations: np.ndarray
    centers: np.ndarray
    norm_centers: np.ndarray
    norm: float
    nnz: int
    alphas: np.ndarray

    @property
    def empty(self) -> bool:
        return self.rows == 0


def summarize_spans(rows, exponents) -> SpanSummary:
    """The SpanSummary of rows (r, n) float64 (numpy or cupy, finite) with exponents (r,) int32."""
    xp = array_module(rows)
    n_rows, inner = rows.shape
    nonzero = rows != 0
    nnz = nonzero.sum(axis=1)
    live = nnz > 0
    if not bool(live.any()):
        empty = np.zeros(CENTER_BINS, np.int64)
        return SpanSummary(int(inner), 0, 0, np.zeros(SPAN_BINS, np.int64), empty, empty.copy(), 0.0, 0,
                           empty.copy())
    alpha = exponents.astype(xp.int64)[:, None] - xp.frexp(rows)[1].astype(xp.int64)
    sums = xp.where(nonzero, alpha, 0).sum(axis=1)
    centers = sums // xp.maximum(nnz, 1)
    deviations = xp.clip(alpha - centers[:, None] + SPAN_OFFSET, 0, SPAN_BINS - 1)[nonzero]
    scaled = xp.ldexp(rows, -exponents.astype(xp.int32)[:, None])  # exact, below 1/2: no overflow
    norms = xp.sqrt((scaled * scaled).sum(axis=1))
    norm_exponents = xp.rint(xp.log2(xp.where(live, norms, 1.0))).astype(xp.int64)  # nearest log2 of the norm
    live_centers = centers[live]
    return SpanSummary(
        inner=int(inner), rows=int(live.sum()), zeros=int(live.sum()) * int(inner) - int(nnz.sum()),
        deviations=to_host(xp.bincount(deviations.ravel(), minlength=SPAN_BINS)).astype(np.int64),
        centers=_center_counts(xp, live_centers),
        norm_centers=_center_counts(xp, live_centers + norm_exponents[live]),
        norm=float(norms.max()), nnz=int(nnz.max()), alphas=_center_counts(xp, alpha[nonzero]))


def _center_counts(xp, centers) -> np.ndarray:
    return to_host(xp.bincount(xp.clip(centers, 0, CENTER_BINS - 1).astype(xp.int64),
                               minlength=CENTER_BINS)).astype(np.int64)


def merge_spans(first: SpanSummary, second: SpanSummary) -> SpanSummary:
    """The summary of the union of two sets of rows of one length."""
    return SpanSummary(first.inner, first.rows + second.rows, first.zeros + second.zeros,
                       first.deviations + second.deviations, first.centers + second.centers,
                       first.norm_centers + second.norm_centers, max(first.norm, second.norm),
                       max(first.nnz, second.nnz), first.alphas + second.alphas)


# -- the span model -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProductSpans:
    """Estimated largest spans (bits) over the entries of a product, each log2 of a scale over
    S_ij: scales (2^e_i 2^f_j), (2^e_i ||b_j||), (||a_i|| 2^f_j), (||a_i|| ||b_j||)."""

    exponents: float
    a_exponent_b_norm: float
    a_norm_b_exponent: float
    norms: float


def product_spans(a: SpanSummary, b: SpanSummary, parts: int = 1):
    """ProductSpans of A B from the summaries of A's rows and B's columns (module docstring), or
    None when either side has no nonzero row (the product is exactly zero). parts: real outputs
    per entry (2 for complex), each its own sum of `inner` terms."""
    if a.empty or b.empty:
        return None
    tail = _DeviationTail(a, b)
    entries = a.rows * b.rows * parts
    spans = [tail.largest_span(_center_pmf(ca, cb), entries)
             for ca, cb in ((a.centers, b.centers), (a.centers, b.norm_centers),
                            (a.norm_centers, b.centers), (a.norm_centers, b.norm_centers))]
    meeting = _meeting_span(a, b, entries)
    log_a, log_b = math.log2(a.norm), math.log2(b.norm)
    return ProductSpans(min(spans[0], meeting), min(spans[1], meeting + log_b), min(spans[2], meeting + log_a),
                        min(spans[3], meeting + log_a + log_b))


def _meeting_span(a: SpanSummary, b: SpanSummary, entries: int) -> float:
    """The span bound from the largest elements: row i's largest element (alpha <= 2) meets some
    element of column j, and column j's largest some element of row i, so
    span_ij <= 4 + min(beta at row i's largest, alpha at column j's largest). Those two elements
    are modelled as drawn from the pools of B's and A's elements (a zero counts as never
    meeting): the smallest integer L with entries * P(alpha > L - 4) P(beta > L - 4) <=
    BEYOND_SPAN_ENTRIES; inf when the zeros alone exceed that. The Chernoff model treats the
    largest elements as random draws too, which on short rows (k = 8) overstates the span."""
    tails = []
    for side in (a, b):
        total = side.rows * side.inner
        beyond = side.zeros + (side.alphas.sum() - np.cumsum(side.alphas))  # [x]: elements with alpha > x, or zero
        tails.append(beyond / total)
    product = tails[0] * tails[1]
    meets = np.flatnonzero(entries * product <= BEYOND_SPAN_ENTRIES)
    return float(meets[0] + 4) if meets.size else math.inf


def _center_pmf(first: np.ndarray, second: np.ndarray) -> tuple:
    """(values, probabilities) of c_i + c_j for a random row and column."""
    i, j = np.flatnonzero(first), np.flatnonzero(second)
    pmf = np.convolve(first[i[0]:i[-1] + 1] / first.sum(), second[j[0]:j[-1] + 1] / second.sum())
    values = np.arange(pmf.size) + i[0] + j[0]
    keep = pmf > 0
    return values[keep], pmf[keep]


class _DeviationTail:
    """log P(0 < S' < 2^-x) bounds for S' = sum of `inner` random terms 2^-(a' + b' + 1) (a', b'
    drawn from the two deviation pools; a zero element on either side gives a zero term)."""

    def __init__(self, a: SpanSummary, b: SpanSummary):
        i, j = np.flatnonzero(a.deviations), np.flatnonzero(b.deviations)
        elements_a, elements_b = a.rows * a.inner, b.rows * b.inner
        pmf = np.convolve(a.deviations[i[0]:i[-1] + 1] / elements_a, b.deviations[j[0]:j[-1] + 1] / elements_b)
        deviation = np.arange(pmf.size) + i[0] + j[0] - 2 * SPAN_OFFSET  # a' + b'
        keep = pmf > 0
        self.log_pmf = np.log(pmf[keep])
        # log2 of each term's geometric middle: |x| lies in [2^(e - alpha - 1), 2^(e - alpha))
        self.log2_terms = -(deviation[keep] + 1.0)
        # P(a term is zero), from the exact zero counts (0.0 exactly when neither side has zeros)
        self.zero = 1.0 - (1.0 - a.zeros / elements_a) * (1.0 - b.zeros / elements_b)
        self.inner = a.inner
        self._cache = {}

    def log_probability(self, x: int) -> float:
        """Chernoff: for every t > 0, P(0 < S' < s) <= e^t E[e^(-t S'/s)] - P(S' = 0)
        = e^t ((z + (1 - z) M)^n - z^n), z the zero probability, M the nonzero terms' transform;
        the best t of _T_GRID, in logs (cached per integer x, s = 2^-x)."""
        if x not in self._cache:
            with np.errstate(over="ignore", invalid="ignore"):  # huge terms: e^-inf = 0, as they should
                self._cache[x] = self._log_probability(x)
        return self._cache[x]

    def _log_probability(self, x: int) -> float:
        scaled = np.exp2(self.log2_terms + x)  # terms over the threshold
        log_nonzero = _logsumexp(self.log_pmf[None, :] - _T_GRID[:, None] * scaled[None, :])  # log (1-z) M
        n = self.inner
        if self.zero == 0.0:
            bound = _T_GRID + n * log_nonzero
        else:
            log_z = math.log(self.zero)
            log_ratio = log_nonzero - log_z  # (1-z) M / z
            # log((z + (1-z) M)^n - z^n) = n log z + log(e^(n log1p(ratio)) - 1), kept finite when
            # the ratio underflows (then it is n log z + log(n ratio))
            grow = n * np.log1p(np.exp(np.minimum(log_ratio, 700.0)))
            tail = np.where(log_ratio < -30.0, math.log(n) + log_ratio,
                            grow + np.log(-np.expm1(-np.maximum(grow, 1e-300))))
            bound = _T_GRID + n * log_z + tail
        return float(min(0.0, bound.min()))

    def largest_span(self, centers: tuple, entries: int) -> float:
        """The smallest integer L such that entries * P(span > L) <= BEYOND_SPAN_ENTRIES, where an
        entry's span is c_i + c_j + (the span of S' ), c_i + c_j drawn from `centers`."""
        values, probabilities = centers
        log_weights = np.log(probabilities)
        limit = math.log(BEYOND_SPAN_ENTRIES / entries)
        span = int(values.min() - self.log2_terms.max() - math.ceil(math.log2(self.inner)) - 1)  # S' <= n max term
        while True:
            logs = [w + self.log_probability(span - int(v)) for w, v in zip(log_weights, values)]
            if _logsumexp(np.array(logs)[None, :])[0] <= limit:
                return float(span)
            span += 1


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1)
    finite = np.isfinite(top)
    safe = np.where(finite, top, 0.0)
    return np.where(finite, safe + np.log(np.exp(x - safe[:, None]).sum(axis=1)), -np.inf)


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
        beyond = np.empty((MAX_DIGITS, MAX_DIGITS, 2 * MAX_DIGITS + 1))
        for top in range(2 * MAX_DIGITS + 1):
            beyond[:, :, top] = np.where(diagonal > top, squares, 0.0).cumsum(axis=0).cumsum(axis=1)
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


def gate_error_model(gate_rows, gate_exponents, bits: int) -> ErrorModel:
    """The ErrorModel of y = U x for every state column x (module docstring), from the gate's
    embedded rows (2K, 2K) float64 (rows 2i, 2i + 1 of output i, ozaki_gate.embedded_gate_rows)
    and their exponents, on the host. A = the states' columns, B = the gate.

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
    state_scale = np.where(significant.all(axis=1), smallest, row_norm)  # per row: mu_i, or ||u_i|| (normwise)
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
def crt_error(n_moduli: int, k: int) -> float:
    """The modelled error of int8-crt-<m> per real part of an entry, relative to ||a_i|| ||b_j||:
    the probabilistic counterpart of crt.error_bound (its proof's terms, with the truncations
    uniform and independent): (2 / sqrt 3) (1 + g) sqrt(2^(-2 beta_A) + 2^(-2 beta_B)), the
    sqrt(2k) of the worst case gone."""
    plan = crt_plan(n_moduli)
    growth = 1.0 + math.sqrt(2 * k) * 2.0**-15
    return 2.0 / math.sqrt(3.0) * growth * math.hypot(2.0**-plan.a_bits, 2.0**-plan.b_bits)


def crt_moduli(k: int, span_bits: float, inner: int, candidates) -> int:
    """The fewest moduli in candidates whose crt_error, times 2^span_bits (the norms over S_ij),
    meets fp64_budget(inner); None when none does or k is too large for the scheme."""
    if not 1 <= k <= MAX_INNER:
        return None
    budget = fp64_budget(inner)
    return next((m for m in candidates if crt_error(m, k) * _exp2(span_bits) <= budget), None)
