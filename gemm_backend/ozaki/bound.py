"""A-priori error bound of the Ozaki-I product, and the cheapest plan that meets an error target.

Setting (ozaki_split.py, ozaki_plan.py): real C = A B with A (m, n), B (n, k) (a complex product
is its real embedding, n = 2k), b-bit balanced digits, u = 2^-53. Row i of A has exponent e_i,
s_a digits A_p[i, :] and the integers X = rint(a_il 2^(b s_a - e_i)); column j of B likewise
(f_j, s_b, B_q). The plan keeps the pairs P = {(p, q): p <= s_a, q <= s_b, p + q <= T}.

Facts used (each from the definitions in ozaki_split.py):
(F1) |a_il - ahat_il| <= delta_i = 2^(e_i - b s_a - 1) for ahat_il = 2^(e_i - b s_a) X_il, and
     ahat_il = 0 when a_il = 0.
(F2) ahat_il = sum_p 2^(e_i - b p) A_p[i, l]   (the digits of X).
(F3) |A_p[i, l]| <= min(2^(b-1), 2^(b p - e_i) |a_il| + 1), and 0 when a_il = 0. Proof: if
     |X| fits in s_a - p + 1 balanced digits, the leading p - 1 digits are 0 and
     |A_p| 2^(b(s_a - p)) <= |X| + |tail| with |tail| < 2^(b-1) / (2^b - 1) 2^(b(s_a - p)) and
     |X| <= |a| 2^(b s_a - e) + 1/2, giving |A_p| < 2^(bp - e)|a| + 1; otherwise
     2^(bp - e)|a| > 2^(b-1) - 1 and the bound is at least 2^(b-1) >= |A_p|.
     Hence N^A_{ip} = min(2^(b-1) nnz_i, 2^(bp - e_i) ||a_i||_1 + nnz_i) >= sum_l |A_p[i, l]|, and
     pi_pq(i, j) = sum_l |A_p[i, l]| |B_q[l, j]| <= 2^(b-1) min(N^A_{ip}, N^B_{jq}).
(F4) 2^(e_i) <= (2^(b+1) / (2^(b-1) - 1)) max_l |a_il|, from the exponent rule (512/127 for b = 8).

Theorem. With S = sum over P of 2^(e_i + f_j - b(p + q)) (A_p B_q)_ij (computed exactly
chunk by chunk, ozaki_plan.py) and Chat its FP64 accumulation,

    |Chat_ij - C_ij| <= beta_ij + u g |C_ij|,     g = (1 + u)^chunks,
    beta_ij = (1 + u g)(E1 + E2) + u g P + 2^-1075,
    E1 = delta_i ||b_j||_1 + (||a_i||_1 + nnz_i delta_i) delta'_j          (truncation, F1)
    E2 = sum over (p, q) in [1..s_a] x [1..s_b] \\ P of 2^(e_i + f_j - b(p+q)) pi_pq(i, j)
                                                                        (dropped pairs, F2-F3)
    P  = sum over chunks c but the last of the exact partial sum bound
         sum over kept pairs with p + q in chunks 0..c of 2^(e_i + f_j - b(p+q)) pi_pq(i, j).
Proof: C - S = sum_l (a - ahat) b + ahat (b - bhat) + [ahat bhat - S], the last bracket being
the dropped pairs by F2. Each FP64 addition of the chunk loop adds at most u times the exact
partial sum so far (plus the propagated error), the last partial sum is S with
|S| <= |C| + E1 + E2, and the final ldexp is exact unless the result is subnormal (error at most
2^-1075).

The target: every beta_ij <= tau ||a_i||_2 ||b_j||_2. FP64 GEMM guarantees
|dC_ij| <= gamma_n (|A||B|)_ij <= gamma_n ||a_i||_2 ||b_j||_2 (gamma_n = n u / (1 - n u)), so the
default tau = gamma_n promises FP64 accuracy in that normwise-per-entry sense; the u g |C_ij|
part is the rounding of the result itself, which FP64 pays too. Every term above is a product
of a row factor and a column factor (or a min of two), so max over (i, j) of beta_ij / (||a_i||
||b_j||) is bounded by combining per-side maxima (OperandSummary): cheap, and still rigorous.
The 2^-1075 underflow term is left out of that normalised check (as FP64's bound leaves out
underflow); it stays in the per-entry bound.

worst_case_columns() gives the summary every column of length n satisfies (F4 with
max |b| <= ||b||_2, ||b||_1 <= sqrt(n) ||b||_2): a plan chosen from the gate and it alone meets
the target for ANY state, so the simulator needs no pass over the state to choose.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np

from ..arrays import array_module, to_host
from ..errors import BackendError
from .plan import plan_products
from .split import bits_per_slice, max_digit

UNIT_ROUNDOFF = 2.0**-53
MAX_DIGITS = 18
MIN_DIGITS = 3


def fp64_gemm_bound(inner: int) -> float:
    """gamma_n = n u / (1 - n u) for the (embedded) inner size n: FP64 GEMM's error bound."""
    n = max(int(inner), 1)
    return n * UNIT_ROUNDOFF / (1 - n * UNIT_ROUNDOFF)


@dataclass(frozen=True)
class OperandSummary:
    """Per-side maxima over the nonzero rows of A (or columns of B) of the ratios the bound needs.

    scale: max 2^e / ||x||_2; l1: max ||x||_1 / ||x||_2; nnz_scale: max nnz 2^e / ||x||_2;
    digits: (MAX_DIGITS,) max 2^e N_p / ||x||_2 for p = 1..MAX_DIGITS (F3); empty: no nonzero row.
    """

    scale: float
    l1: float
    nnz_scale: float
    digits: tuple
    bits: int
    empty: bool = False


def summarize_rows(x, exponents, bits: int) -> OperandSummary:
    """The summary of the rows of x (rows, n) float64 (numpy or cupy) with their row exponents."""
    xp = array_module(x)
    l2 = xp.sqrt((x * x).sum(axis=1)) if x.size else xp.zeros(x.shape[0])
    nonzero = l2 > 0
    if not bool(nonzero.any()):
        return OperandSummary(0.0, 0.0, 0.0, (0.0,) * MAX_DIGITS, bits, empty=True)
    x, l2 = x[nonzero], l2[nonzero]
    scale = xp.ldexp(1.0, xp.asarray(exponents)[nonzero].astype(xp.int32)) / l2
    l1 = xp.abs(x).sum(axis=1) / l2
    nnz_scale = (x != 0).sum(axis=1) * scale
    p = xp.arange(1, MAX_DIGITS + 1, dtype=xp.int32)[:, None]
    digits = xp.minimum(max_digit(bits) * nnz_scale, xp.ldexp(l1, bits * p) + nnz_scale).max(axis=1)
    maxima = to_host(xp.concatenate([xp.stack([scale.max(), l1.max(), nnz_scale.max()]), digits]))
    return OperandSummary(float(maxima[0]), float(maxima[1]), float(maxima[2]), tuple(float(d) for d in maxima[3:]),
                          bits)


def merge_summaries(first: OperandSummary, second: OperandSummary) -> OperandSummary:
    """The summary of the union of two sets of rows."""
    if first.empty or second.empty:
        return second if first.empty else first
    return OperandSummary(max(first.scale, second.scale), max(first.l1, second.l1),
                          max(first.nnz_scale, second.nnz_scale),
                          tuple(max(x, y) for x, y in zip(first.digits, second.digits)), first.bits)


def worst_case_columns(n: int, bits: int) -> OperandSummary:
    """A summary every column of length n obeys, whatever its values (module docstring)."""
    scale = 2.0 ** (bits + 1) / (max_digit(bits) - 1)
    l1 = math.sqrt(n)
    nnz_scale = n * scale
    digits = tuple(min(max_digit(bits) * nnz_scale, 2.0 ** (bits * p) * l1 + nnz_scale)
                   for p in range(1, MAX_DIGITS + 1))
    return OperandSummary(scale, l1, nnz_scale, digits, bits)


def relative_bound(plan, a: OperandSummary, b: OperandSummary) -> float:
    """max over (i, j) of beta_ij / (||a_i||_2 ||b_j||_2), underflow term left out (module
    docstring); 0 when either side has no nonzero row."""
    if a.empty or b.empty:
        return 0.0
    pair = _pair_bounds(a, b, plan.bits)
    s_a, s_b = plan.a_slices, plan.b_slices
    shift_a, shift_b = 2.0 ** (-plan.bits * s_a - 1), 2.0 ** (-plan.bits * s_b - 1)
    truncation = shift_a * a.scale * b.l1 + (a.l1 + a.nnz_scale * shift_a) * shift_b * b.scale
    p, q = np.meshgrid(np.arange(1, s_a + 1), np.arange(1, s_b + 1), indexing="ij")
    within = pair[:s_a, :s_b]
    dropped = float(within[p + q > plan.top].sum())
    per_diagonal = {t: float(within[p + q == t].sum()) for t in plan.diagonals}
    partial, running = 0.0, 0.0
    for chunk in plan.chunks[:-1]:
        running += sum(per_diagonal[t] for t in chunk)
        partial += running
    grow = (1 + UNIT_ROUNDOFF) ** len(plan.chunks)
    return (1 + UNIT_ROUNDOFF * grow) * (truncation + dropped) + UNIT_ROUNDOFF * grow * partial


def _pair_bounds(a: OperandSummary, b: OperandSummary, bits: int) -> np.ndarray:
    """(MAX_DIGITS, MAX_DIGITS): 2^(-b(p+q)) 2^(b-1) min(A.digits[p] B.scale, A.scale B.digits[q])."""
    p = np.arange(1, MAX_DIGITS + 1)
    weights = np.ldexp(1.0, -bits * (p[:, None] + p[None, :]) + bits - 1)
    return weights * np.minimum(np.outer(a.digits, np.full(MAX_DIGITS, b.scale)),
                                np.outer(np.full(MAX_DIGITS, a.scale), b.digits))


def choose_plan(inner: int, a: OperandSummary, b: OperandSummary, target: float,
                a_range=range(MIN_DIGITS, MAX_DIGITS + 1), b_range=range(MIN_DIGITS, MAX_DIGITS + 1)):
    """(plan, bound): the cheapest plan (fewest digit pairs, then fewest digits, then smallest T)
    whose relative_bound is at most target; None, None when none is. Candidates are screened
    with the bound without its partial-sum term (a lower bound of it), then confirmed in order."""
    candidates = plan_candidates(inner, tuple(a_range), tuple(b_range))
    if a.empty or b.empty:
        first = candidates[0]
        return plan_products(first[0], inner, first[1], first[2]), 0.0
    screen = _screening_bounds(np.array(candidates), a, b, bits_per_slice(inner))
    for index in np.flatnonzero(screen <= target):
        plan = plan_products(int(candidates[index][0]), inner, int(candidates[index][1]), int(candidates[index][2]))
        bound = relative_bound(plan, a, b)
        if bound <= target:
            return plan, bound
    return None, None


def _screening_bounds(candidates: np.ndarray, a: OperandSummary, b: OperandSummary, bits: int) -> np.ndarray:
    """relative_bound without the partial-sum term, for every (s_a, s_b, T) row at once."""
    pair = _pair_bounds(a, b, bits)
    p = np.arange(1, MAX_DIGITS + 1)
    diagonal = p[:, None] + p[None, :]
    # suffix[s_a - 1, s_b - 1, T]: sum of pair over p <= s_a, q <= s_b, p + q > T
    suffix = np.zeros((MAX_DIGITS, MAX_DIGITS, 2 * MAX_DIGITS + 2))
    for top in range(2 * MAX_DIGITS, -1, -1):
        beyond = np.where(diagonal > top, pair, 0.0)
        suffix[:, :, top] = beyond.cumsum(axis=0).cumsum(axis=1)
    s_a, s_b, top = candidates[:, 0], candidates[:, 1], candidates[:, 2]
    shift_a, shift_b = np.ldexp(1.0, -bits * s_a - 1), np.ldexp(1.0, -bits * s_b - 1)
    truncation = shift_a * a.scale * b.l1 + (a.l1 + a.nnz_scale * shift_a) * shift_b * b.scale
    return truncation + suffix[s_a - 1, s_b - 1, top]


@functools.lru_cache(maxsize=None)
def plan_candidates(inner: int, a_range: tuple, b_range: tuple) -> tuple:
    """Every (s_a, s_b, T) with s_a in a_range, s_b in b_range, max(s_a, s_b) < T <= s_a + s_b,
    cheapest first: fewest digit pairs, then fewest digits, then smallest T."""
    rows = []
    for s_a in a_range:
        for s_b in b_range:
            for top in range(max(s_a, s_b) + 1, s_a + s_b + 1):
                pairs = sum(min(s_a, t - 1) - max(1, t - s_b) + 1 for t in range(2, top + 1))
                rows.append((pairs, s_a + s_b, top, s_a, s_b))
    rows.sort()
    return tuple((s_a, s_b, top) for _, _, top, s_a, s_b in rows)


def check_target(target) -> float:
    """The error target as a float in (0, 1), or a clear BackendError."""
    if isinstance(target, bool) or not isinstance(target, (int, float, np.integer, np.floating)) \
            or not 0 < target < 1:
        raise BackendError(f"target_error must be a number in (0, 1) (relative to ||a_i|| ||b_j||), got {target!r}")
    return float(target)
