"""The exponent spans of a product A B, from the operands' exponents alone (contract.py's
module docstring states the model): the scan's per-side statistics (SpanSummary, gathered in
tiles and merged) and the span estimate of the product (product_spans: the spread of the
product's terms below S_ij, in bits, exceeded by fewer than BEYOND_SPAN_ENTRIES entries).
"""
import math
from dataclasses import dataclass

import numpy as np

from ..arrays import array_module, to_host

# The span estimate may be exceeded by this many entries of the product, in expectation.
BEYOND_SPAN_ENTRIES = 0.1
# Bits of an element below its row scale (alpha) and centres run over 1 .. 2098 (2^1023 down to
# 2^-1074); deviations from a row's centre over -2097 .. 2097. Histograms hold them from index 0.
SPAN_OFFSET = 2112
SPAN_BINS = 2 * SPAN_OFFSET
CENTER_BINS = SPAN_OFFSET
_T_GRID = np.logspace(-2, 14, 97)  # Chernoff parameter t = lambda s, dimensionless


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
    the entry's magnitude (S_ij, or T_ij: product_spans' power): scales (2^e_i 2^f_j),
    (2^e_i ||b_j||), (||a_i|| 2^f_j), (||a_i|| ||b_j||)."""

    exponents: float
    a_exponent_b_norm: float
    a_norm_b_exponent: float
    norms: float


def product_spans(a: SpanSummary, b: SpanSummary, parts: int = 1, power: int = 1):
    """ProductSpans of A B from the summaries of A's rows and B's columns (module docstring), or
    None when either side has no nonzero row (the product is exactly zero). parts: real outputs
    per entry (2 for complex), each its own sum of `inner` terms. power 1: spans relative to
    S_ij = sum_l |a_il b_lj|; power 2: relative to T_ij = (sum_l |a_il b_lj|^2)^(1/2), the same
    model applied to the squared terms (T_ij^2 is their sum), halved. The meeting bound holds
    for both: each is at least its largest term."""
    model = span_model(a, b, parts, power)
    if model is None:
        return None
    return ProductSpans(model.span(False, False), model.span(False, True), model.span(True, False),
                        model.span(True, True))


def span_model(a: SpanSummary, b: SpanSummary, parts: int = 1, power: int = 1):
    """The SpanModel of A B (product_spans' arguments), or None when the product is exactly zero."""
    if a.empty or b.empty:
        return None
    return SpanModel(a, b, parts, power)


class SpanModel:
    """product_spans' four spans one at a time, each computed when first asked for: the norms'
    span alone decides an Ozaki-II plan, and each span costs a search on the host."""

    def __init__(self, a: SpanSummary, b: SpanSummary, parts: int, power: int):
        self.a, self.b, self.power = a, b, power
        self.tail = _DeviationTail(a, b, power)
        self.entries = a.rows * b.rows * parts
        self.meeting = _meeting_span(a, b, self.entries)

    def span(self, a_norm: bool, b_norm: bool) -> float:
        """The span relative to scale (a_i's norm or 2^e_i) times (b_j's norm or 2^f_j), in bits."""
        a_centers = self.a.norm_centers if a_norm else self.a.centers
        b_centers = self.b.norm_centers if b_norm else self.b.centers
        met = self.meeting + (math.log2(self.a.norm) if a_norm else 0.0) + (math.log2(self.b.norm) if b_norm else 0.0)
        modelled = self.tail.largest_span(_center_pmf(a_centers, b_centers), self.entries, self.power * met)
        return min(modelled / self.power, met)


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
    """log P(0 < S' < 2^-x) bounds for S' = sum of `inner` random terms 2^-power(a' + b' + 1)
    (a', b' drawn from the two deviation pools; a zero element on either side gives a zero
    term); power 2 models the squares of the terms."""

    def __init__(self, a: SpanSummary, b: SpanSummary, power: int = 1):
        i, j = np.flatnonzero(a.deviations), np.flatnonzero(b.deviations)
        elements_a, elements_b = a.rows * a.inner, b.rows * b.inner
        pmf = np.convolve(a.deviations[i[0]:i[-1] + 1] / elements_a, b.deviations[j[0]:j[-1] + 1] / elements_b)
        deviation = np.arange(pmf.size) + i[0] + j[0] - 2 * SPAN_OFFSET  # a' + b'
        keep = pmf > 0
        self.log_pmf = np.log(pmf[keep])
        # log2 of each term's geometric middle: |x| lies in [2^(e - alpha - 1), 2^(e - alpha))
        self.log2_terms = -power * (deviation[keep] + 1.0)
        self.power = power
        # P(a term is zero), from the exact zero counts (0.0 exactly when neither side has zeros)
        self.zero = 1.0 - (1.0 - a.zeros / elements_a) * (1.0 - b.zeros / elements_b)
        self.inner = a.inner
        self._cache = {}

    def log_probabilities(self, xs: list) -> list:
        """Chernoff: for every t > 0, P(0 < S' < s) <= e^t E[e^(-t S'/s)] - P(S' = 0)
        = e^t ((z + (1 - z) M)^n - z^n), z the zero probability, M the nonzero terms' transform;
        the best t of _T_GRID, in logs, for each integer x of xs (s = 2^-x; cached per x, the
        missing ones computed together)."""
        missing = sorted({x for x in xs if x not in self._cache})
        if missing:
            with np.errstate(over="ignore", invalid="ignore"):  # huge terms: e^-inf = 0, as they should
                self._cache.update(zip(missing, self._log_probabilities(np.array(missing, np.float64)).tolist()))
        return [self._cache[x] for x in xs]

    def _log_probabilities(self, xs: np.ndarray) -> np.ndarray:
        scaled = np.exp2(self.log2_terms[None, :] + xs[:, None])  # (x, term): terms over the threshold
        # log (1-z) M, (x, t)
        log_nonzero = _logsumexp(self.log_pmf[None, None, :] - _T_GRID[None, :, None] * scaled[:, None, :])
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
        return np.minimum(0.0, bound.min(axis=1))

    def largest_span(self, centers: tuple, entries: int, ceiling: float = math.inf) -> float:
        """The smallest integer L such that entries * P(span > L) <= BEYOND_SPAN_ENTRIES, where an
        entry's span is power (c_i + c_j) + (the span of S'), c_i + c_j drawn from `centers`
        (L is in bits of the power-th sum: the caller divides by power), or any value above
        `ceiling` when L is (a caller that takes the smaller of L and a ceiling needs no more)."""
        values, probabilities = centers
        offsets = [self.power * int(v) for v in values]  # host floats and ints: this runs per call, on the host
        log_weights = np.log(probabilities).tolist()
        limit = math.log(BEYOND_SPAN_ENTRIES / entries)
        low = int(min(offsets) - self.log2_terms.max() - math.ceil(math.log2(self.inner)) - 1)  # S' <= n max term

        def rare(span: int) -> bool:  # P(span > L) falls as L grows: a binary search finds the first rare L
            logs = [w + p for w, p in zip(log_weights, self.log_probabilities([span - v for v in offsets]))]
            top = max(logs)
            return top == -math.inf or top + math.log(sum(math.exp(x - top) for x in logs)) <= limit

        if rare(low):
            return float(low)
        if ceiling < math.inf:  # bracket by the ceiling: past it, the answer does not matter
            high = max(low + 1, math.ceil(ceiling))
            if not rare(high):
                return math.inf
        else:  # gallop to a rare L
            step = 1
            while not rare(low + step):
                low, step = low + step, 2 * step
            high = low + step
        while high - low > 1:  # rare(high), not rare(low)
            middle = (low + high) // 2
            low, high = (low, middle) if rare(middle) else (middle, high)
        return float(high)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    """log sum exp over the last axis, -inf where every term is -inf."""
    top = x.max(axis=-1)
    finite = np.isfinite(top)
    safe = np.where(finite, top, 0.0)
    return np.where(finite, safe + np.log(np.exp(x - safe[..., None]).sum(axis=-1)), -np.inf)
