"""How int8-<s> and int8-auto choose the digits of a product: one SplitRule per rule.

- FixedRule (int8-<s>): s_a = s_b = s, T = s + 1 (the seed paper's triangle).
- Fp64Rule (int8-auto's default, bound="fp64"): the contract that the result is as accurate as
  native FP64 GEMM on the same inputs, entry by entry (contract.py states the analysis). A matmul
  takes Ozaki-I or Ozaki-II, whichever the cost model (cost.py) finds cheaper among the plans
  that meet the contract, or the native product when none does; a gate is planned from the gate
  alone, for every state.
- TargetRule (target_error=X, or bound="worst-case" for X = gamma_n, FP64 GEMM's worst-case
  bound): the cheapest plan whose rigorous a-priori bound (bound.py) is at most X relative to
  ||a_i||_2 ||b_j||_2 per entry; a gate's bound holds for every state.
- RhoRule (rho=): the seed paper's rule, the smallest s whose average mantissa loss is at most
  rho bits; it needs a pass over both operands (the state too, for a gate).

Every rule answers a matmul from the statistics its scan gathers (new_statistics, gather) and a
gate from the gate (gate_choice), with a Choice: Ozaki-I with a plan, Ozaki-II with a number of
moduli, or the native product.
"""
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..arrays import array_module, is_gpu_array, iter_column_chunks, to_host
from ..errors import BackendError
from ..registry import CRT_MODULI, GAUSSIAN_MODULI, INT8_SPLITS, moduli_counts
from .bound import (
    check_target,
    choose_plan,
    fp64_gemm_bound,
    merge_summaries,
    plan_candidates,
    relative_bound,
    summarize_rows,
    worst_case_columns,
)
from .contract import crt_error, crt_moduli, fp64_budget, fp64_product_budget, gate_error_model, matmul_error_model
from .cost import ozaki1_floor_seconds, ozaki1_seconds, ozaki2_gate_passes, ozaki2_seconds
from .crt import error_bound as crt_error_bound
from .crt import moduli_for_target
from .crt_backend import SCHEME as OZAKI2_SCHEME
from .gate import embedded_gate_rows
from .plan import ProductPlan, plan_products
from .spans import ProductSpans, merge_spans, span_model, summarize_spans
from .state_histogram import state_histogram, takes_view
from .split import add_needed_bits_histogram, bits_per_slice, choose_splits, new_histogram, row_exponents

AUTO = "auto"
OZAKI1, OZAKI2 = "ozaki1", OZAKI2_SCHEME  # the schemes int8-auto may take
FP64, WORST_CASE = "fp64", "worst-case"  # int8-auto's bound= (module docstring)
# Amplitudes of the state per chunk while the rho rule builds the state's histogram.
_HISTOGRAM_CHUNK_AMPLITUDES = 1 << 22


@dataclass(frozen=True)
class Choice:
    """What a rule chose for one product: scheme OZAKI1 with its plan, OZAKI2 with its number of
    moduli, or None for the native product; info: what the backend's last_call_info reports
    beside the plan (the rule's bound or modelled error, the cost model's seconds)."""

    scheme: object
    plan: ProductPlan = None
    moduli: int = None
    info: dict = field(default_factory=dict)
    gaussian: bool = False  # OZAKI2 on Gaussian moduli (int8-gcrt)


NATIVE = Choice(None)


class SplitRule:
    """The interface of the rules (module docstring). Attributes:
        name: the rule as reported ("fixed", "rho", "target", "fp64").
        plans_from_gate: a gate's plan depends on the gate alone (not on the state), so it can be
            made once per gate (prepare) and used on scattered targets by the fused kernel.
        may_take_ozaki2: apply_batched may run large gates on Ozaki-II (large_gates).
        fixed_splits, rho, target_error, bound: the options that made the rule (None: not given).
    """

    name = ""
    plans_from_gate = True
    gathers_spans = False  # gather() keeps spans.summarize_spans of each side (statistics_of_spans)
    may_take_ozaki2 = False
    fixed_splits = rho = target_error = bound = None

    def option_report(self, large_gates: str) -> dict:
        """The rule's entries of the backend's options (int8-auto's; none for int8-<s>)."""
        return {"rule": self.name, "rho": self.rho, "target_error": self.target_error, "large_gates": large_gates,
                "bound": self.bound}

    def smallest_plan(self, inner: int) -> ProductPlan:
        """The plan of an empty product (nothing to represent)."""
        return plan_products(INT8_SPLITS.start, inner)

    def largest_plan(self, inner: int) -> ProductPlan:
        """The plan of the most digits a call may use: memory is planned for it before the rule chooses."""
        return plan_products(INT8_SPLITS[-1], inner)

    def new_statistics(self, xp) -> dict:
        """What gather() fills while the matmul's scan passes over the operands."""
        return {}

    def gather(self, statistics: dict, side: str, rows, exps, bits: int) -> None:
        """Add rows (r, w) float64 of operand side "a" or "b" (embedded rows of B^T, one per
        column) with their int32 exponents to statistics."""

    def statistics_of_spans(self, a_spans, b_spans) -> dict:
        """The statistics gather() would have made from the operands whose whole SpanSummaries
        (merged over all rows) are a_spans and b_spans; only where gathers_spans."""
        raise BackendError(f"rule {self.name} gathers no span summaries")

    def matmul_choice(self, m: int, k: int, n: int, is_complex: bool, statistics: dict) -> Choice:
        raise NotImplementedError

    def gate_choice(self, u, x=None) -> Choice:
        """The Ozaki-I plan (or native product) of gate u (K, K) complex128 on state views x
        (L, K, R); x is looked at only where plans_from_gate is False."""
        raise NotImplementedError

    def ozaki2_gate(self, k: int) -> Choice:
        """The Ozaki-II choice for a gate of size k (only where may_take_ozaki2)."""
        raise BackendError(f"rule {self.name} plans no Ozaki-II gates")


class FixedRule(SplitRule):
    name = "fixed"

    def __init__(self, splits: int):
        self.fixed_splits = splits

    def option_report(self, large_gates: str) -> dict:
        return {}

    def smallest_plan(self, inner: int) -> ProductPlan:
        return plan_products(self.fixed_splits, inner)

    def largest_plan(self, inner: int) -> ProductPlan:
        return plan_products(self.fixed_splits, inner)

    def matmul_choice(self, m, k, n, is_complex, statistics) -> Choice:
        return Choice(OZAKI1, plan_products(self.fixed_splits, (2 if is_complex else 1) * k))

    def gate_choice(self, u, x=None) -> Choice:
        return Choice(OZAKI1, plan_products(self.fixed_splits, 2 * u.shape[0]))


class RhoRule(SplitRule):
    name = "rho"
    plans_from_gate = False

    def __init__(self, rho: float):
        self.rho = rho

    def new_statistics(self, xp) -> dict:
        return {"histogram": new_histogram(xp)}

    def gather(self, statistics, side, rows, exps, bits) -> None:
        add_needed_bits_histogram(rows, exps, statistics["histogram"])

    def matmul_choice(self, m, k, n, is_complex, statistics) -> Choice:
        return self._choice((2 if is_complex else 1) * k, statistics["histogram"])

    def gate_choice(self, u, x=None) -> Choice:
        inner = 2 * u.shape[0]
        bits = bits_per_slice(inner)
        gate_rows, gate_exps = _gate_rows(u, bits)
        histogram = to_host(_state_histogram(x, bits)).astype(np.int64)  # the gate's rows are on the host
        add_needed_bits_histogram(gate_rows, gate_exps, histogram)
        return self._choice(inner, histogram)

    def _choice(self, inner: int, histogram) -> Choice:
        splits = choose_splits(to_host(histogram), bits_per_slice(inner), self.rho, INT8_SPLITS)
        return NATIVE if splits is None else Choice(OZAKI1, plan_products(splits, inner))


class TargetRule(SplitRule):
    name = "target"
    may_take_ozaki2 = True

    def __init__(self, target_error, bound):
        self.target_error, self.bound = target_error, bound

    def target(self, inner: int) -> float:
        """The error target at real inner size `inner`: target_error, or FP64 GEMM's gamma_n."""
        return self.target_error if self.target_error is not None else fp64_gemm_bound(inner)

    def gather(self, statistics, side, rows, exps, bits) -> None:
        summary = summarize_rows(rows, exps, bits)
        statistics[side] = merge_summaries(statistics[side], summary) if side in statistics else summary

    def matmul_choice(self, m, k, n, is_complex, statistics) -> Choice:
        return self._choice((2 if is_complex else 1) * k, statistics["a"], statistics["b"])

    def gate_choice(self, u, x=None) -> Choice:
        inner = 2 * u.shape[0]
        bits = bits_per_slice(inner)
        gate_rows, gate_exps = _gate_rows(u, bits)
        return self._choice(inner, worst_case_columns(inner, bits), summarize_rows(gate_rows, gate_exps, bits))

    def _choice(self, inner: int, a, b) -> Choice:
        target = self.target(inner)
        plan, _ = choose_plan(inner, a, b, target, a_range=INT8_SPLITS, b_range=INT8_SPLITS)
        if plan is None:
            raise BackendError(f"no INT8 plan with at most {INT8_SPLITS.stop - 1} digits meets target_error="
                               f"{target:.3g}; raise the target or use a native backend")
        return Choice(OZAKI1, plan, info={"bound": relative_bound(plan, a, b)})

    def ozaki2_gate(self, k: int) -> Choice:
        """The fewest moduli whose bound (crt.error_bound, relative to ||a_i||_2 ||b_j||_2 like
        bound.py's) meets the target, of the kind (ordinary or Gaussian) the gate cost model finds
        cheaper: Gaussian moduli carry about 7 bits each against 8, but take two INT8 products
        per modulus against three."""
        target = self.target(2 * k)
        choice = _cheaper_kind(lambda gaussian: moduli_for_target(target, k, gaussian), ozaki2_gate_passes)
        if choice is None:
            raise BackendError(f"no Ozaki-II plan with at most {CRT_MODULI.stop - 1} moduli (or "
                               f"{GAUSSIAN_MODULI.stop - 1} Gaussian ones) meets the error target {target:.3g} "
                               f"at K = {k}; use a larger target_error or large_gates='ozaki1'")
        return Choice(OZAKI2, moduli=choice.moduli, gaussian=choice.gaussian,
                      info={"bound": crt_error_bound(choice.moduli, k, choice.gaussian)})


class Fp64Rule(SplitRule):
    name = FP64
    may_take_ozaki2 = True
    gathers_spans = True
    bound = FP64

    def gather(self, statistics, side, rows, exps, bits) -> None:
        spans = summarize_spans(rows, exps)
        statistics[side] = merge_spans(statistics[side], spans) if side in statistics else spans

    def statistics_of_spans(self, a_spans, b_spans) -> dict:
        return {"a": a_spans, "b": b_spans}

    def matmul_choice(self, m, k, n, is_complex, statistics) -> Choice:
        """The cheaper (cost.py) of the cheapest Ozaki-I plan and the fewest moduli that meet the
        contract, from the scan's SpanSummaries; info: "estimate" (the modelled error relative to
        T_ij, contract.py), "span_bits" (the operands' estimated span) and "model_s" (the cost
        model's seconds of the cheapest plan of each scheme that meets the contract, None where
        none does; for Ozaki-I, where its floor already exceeds Ozaki-II's time, that floor under
        "ozaki1_floor" in place of "ozaki1")."""
        width = 2 if is_complex else 1
        inner = width * k
        model = span_model(statistics["a"], statistics["b"], width, power=2)
        if model is None:  # a zero operand: every plan gives exact zeros, take the smallest
            first = plan_candidates(inner, tuple(INT8_SPLITS), tuple(INT8_SPLITS))[0]
            return Choice(OZAKI1, plan_products(first[0], inner, first[1], first[2]), info={"estimate": 0.0})
        budget = fp64_product_budget(inner)
        norm_span = model.span(True, True)
        ozaki2 = _cheapest_ozaki2(k, norm_span, budget, _matmul_seconds((m, k, n, is_complex)), is_complex)
        if ozaki2 is not None:
            floor = _ozaki1_floor_seconds(statistics["a"], statistics["b"], budget, (m, k, n, is_complex))
            if floor > ozaki2.info["model"]:  # no Ozaki-I plan can be cheaper: its spans need not be searched
                return _ozaki2_choice(ozaki2, k, norm_span, {OZAKI2: ozaki2.info["model"], "ozaki1_floor": floor})
        least = _least_spans(inner)
        spans = ProductSpans(max(model.span(False, False), least.exponents),
                             max(model.span(False, True), least.a_exponent_b_norm),
                             max(model.span(True, False), least.a_norm_b_exponent), max(norm_span, least.norms))
        ozaki1 = _cheapest_ozaki1(matmul_error_model(statistics["a"], statistics["b"], spans, bits_per_slice(inner)),
                                  inner, budget)
        seconds = {OZAKI1: None if ozaki1.plan is None else ozaki1_seconds(ozaki1.plan, m, k, n, is_complex),
                   OZAKI2: None if ozaki2 is None else ozaki2.info["model"]}
        if ozaki2 is not None and (seconds[OZAKI1] is None or seconds[OZAKI2] < seconds[OZAKI1]):
            return _ozaki2_choice(ozaki2, k, norm_span, seconds)
        if ozaki1.plan is None:
            return NATIVE
        return Choice(OZAKI1, ozaki1.plan, info={"estimate": ozaki1.info["estimate"], "span_bits": spans.exponents,
                                                 "model_s": dict(seconds)})

    def gate_choice(self, u, x=None) -> Choice:
        """The cheapest Ozaki-I plan meeting the contract for every state (entry by entry where
        the gate's rows have no zeros); info: "estimate"."""
        inner = 2 * u.shape[0]
        bits = bits_per_slice(inner)
        gate_rows, gate_exps = _gate_rows(u, bits)
        return _cheapest_ozaki1(gate_error_model(gate_rows, gate_exps, bits), inner, fp64_budget(inner))

    def ozaki2_gate(self, k: int) -> Choice:
        """The cheaper (the gate cost model) of the fewest moduli of either kind whose modelled
        error (contract.crt_error) meets the contract normwise per entry, for every state."""
        # span 0: relative to ||u_i|| ||x||
        choice = _cheapest_ozaki2(k, 0.0, fp64_budget(2 * k), ozaki2_gate_passes)
        if choice is None:
            raise BackendError(f"no Ozaki-II plan with at most {CRT_MODULI.stop - 1} moduli (or "
                               f"{GAUSSIAN_MODULI.stop - 1} Gaussian ones) meets the FP64 contract at K = {k}; "
                               "use large_gates='ozaki1'")
        return Choice(OZAKI2, moduli=choice.moduli, gaussian=choice.gaussian,
                      info={"estimate": crt_error(choice.moduli, k, choice.gaussian)})


def make_rule(splits, rho=None, target_error=None, bound=None) -> SplitRule:
    """The rule of OzakiBackend's options (its docstring), or a clear BackendError."""
    fixed_splits = _check_splits(splits)
    rho = _check_rho(rho, fixed_splits)
    if target_error is not None and (fixed_splits is not None or rho is not None):
        raise BackendError("target_error applies only to int8-auto without rho (the two rules exclude each other)")
    target_error = None if target_error is None else check_target(target_error)
    bound = _check_bound(bound, fixed_splits, rho, target_error)
    if fixed_splits is not None:
        return FixedRule(fixed_splits)
    if rho is not None:
        return RhoRule(rho)
    if target_error is not None or bound == WORST_CASE:
        return TargetRule(target_error, bound)
    return Fp64Rule()


def _check_splits(splits):
    """The fixed s, or None for "auto"."""
    if splits == AUTO:
        return None
    if isinstance(splits, (int, np.integer)) and not isinstance(splits, bool) and int(splits) in INT8_SPLITS:
        return int(splits)
    raise BackendError(
        f"splits must be an integer in {INT8_SPLITS.start}..{INT8_SPLITS.stop - 1} or 'auto', got {splits!r}"
    )


def _check_bound(bound, fixed_splits, rho, target_error):
    """int8-auto's bound (FP64 or WORST_CASE; None for fixed splits), or a clear BackendError."""
    if bound is None:
        return FP64 if fixed_splits is None and rho is None and target_error is None else None
    if bound not in (FP64, WORST_CASE):
        raise BackendError(f"bound must be '{FP64}' or '{WORST_CASE}', got {bound!r}")
    if fixed_splits is not None:
        raise BackendError(f"bound applies only to int8-auto; int8-{fixed_splits} uses a fixed number of splits")
    if rho is not None or target_error is not None:
        raise BackendError("bound applies only to int8-auto without rho or target_error (the rules exclude each other)")
    return bound


def _check_rho(rho, fixed_splits):
    if rho is None:
        return None
    if fixed_splits is not None:
        raise BackendError(f"rho applies only to int8-auto; int8-{fixed_splits} uses a fixed number of splits")
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.integer, np.floating)) or not 0 <= rho < np.inf:
        raise BackendError(f"rho must be a finite number of bits >= 0, got {rho!r}")
    return float(rho)


def _gate_rows(u, bits: int):
    """The gate's embedded rows (2K, 2K) float64 on the host and their int32 exponents, after
    checking that the gate is finite."""
    gate_rows = to_host(embedded_gate_rows(u))
    gate_exps, finite = row_exponents(gate_rows, bits)
    if not finite:
        raise BackendError("the gate matrix contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
    return gate_rows, gate_exps


def _cheapest_ozaki2(k: int, span_bits: float, budget: float, cost, is_complex: bool = True):
    """_cheaper_kind (by cost) of the fewest moduli whose modelled error (contract.crt_moduli)
    meets budget at span_bits."""
    return _cheaper_kind(lambda gaussian: crt_moduli(k, span_bits, budget, moduli_counts(gaussian), gaussian), cost,
                         is_complex)


def _matmul_seconds(shape: tuple):
    """The matmul model's cost (cost.ozaki2_seconds) of Ozaki-II for shape (m, k, n, is_complex),
    as _cheaper_kind takes it."""
    return lambda moduli, gaussian: ozaki2_seconds(moduli, *shape, gaussian=gaussian)


def _cheaper_kind(fewest_moduli, cost, is_complex: bool = True):
    """The Ozaki-II Choice (info "model": its cost) of fewest_moduli(gaussian) (the fewest moduli
    of that kind meeting a rule, None for none), on the kind of moduli whose cost(moduli, gaussian)
    (a model's seconds or passes) is lower, ordinary ones on a tie: Gaussian ones only pay off for
    complex products (two INT8 products per modulus against three); None when neither kind meets
    the rule."""
    best = None
    for gaussian in (False, True) if is_complex else (False,):
        moduli = fewest_moduli(gaussian)
        if moduli is not None:
            model = cost(moduli, gaussian)
            if best is None or model < best.info["model"]:
                best = Choice(OZAKI2, moduli=moduli, gaussian=gaussian, info={"model": model})
    return best


def _ozaki2_choice(ozaki2: Choice, k: int, norm_span: float, seconds: dict) -> Choice:
    """matmul_choice's Ozaki-II Choice, its info completed."""
    estimate = crt_error(ozaki2.moduli, k, ozaki2.gaussian) * 2.0**norm_span
    return Choice(OZAKI2, moduli=ozaki2.moduli, gaussian=ozaki2.gaussian,
                  info={"estimate": estimate, "span_bits": norm_span, "model_s": dict(seconds)})


def _least_spans(inner: int) -> ProductSpans:
    """The spans no product of real inner size `inner` goes below (_ozaki1_floor_seconds)."""
    return ProductSpans(-0.5 * math.log2(inner), 0.0, 0.0, 0.0)


def _ozaki1_floor_seconds(a, b, budget: float, shape: tuple) -> float:
    """A floor of the modelled seconds of every Ozaki-I plan that can meet budget for the product
    of shape (m, k, n, is_complex) with operands summarised by a and b (SpanSummary): the error
    model grows with each span, and no span is below its provable least (T_ij is at most
    sqrt(inner) 2^e_i 2^f_j, and at most ||a_i|| ||b_j||, 2^e_i ||b_j||, ||a_i|| 2^f_j), so
    the fewest pairs meeting budget at those least spans bound every passing plan's pairs;
    inf when no plan meets it even there."""
    m, k, n, is_complex = shape
    inner = (2 if is_complex else 1) * k
    fewest = _cheapest_ozaki1(matmul_error_model(a, b, _least_spans(inner), bits_per_slice(inner)), inner, budget)
    return math.inf if fewest.plan is None else ozaki1_floor_seconds(fewest.plan.pairs, m, k, n, is_complex)


@functools.lru_cache(maxsize=None)
def _candidate_array(inner: int) -> np.ndarray:
    """bound.plan_candidates over INT8_SPLITS as a read-only (c, 3) int array (made once: the
    conversion costs the host more than the search over it)."""
    candidates = np.array(plan_candidates(inner, tuple(INT8_SPLITS), tuple(INT8_SPLITS)))
    candidates.setflags(write=False)
    return candidates


def _cheapest_ozaki1(model, inner: int, budget: float) -> Choice:
    """The Ozaki-I plan with the fewest digit pairs (then digits, then T) whose modelled error
    meets budget (relative to the scale of the model; info: "estimate"), or the native product
    when no plan does."""
    candidates = _candidate_array(inner)
    estimates = model.estimates(candidates)
    passing = np.flatnonzero(estimates <= budget)
    if passing.size == 0:
        return NATIVE
    s_a, s_b, top = (int(v) for v in candidates[passing[0]])
    return Choice(OZAKI1, plan_products(s_a, inner, s_b, top), info={"estimate": float(estimates[passing[0]])})


def _state_histogram(x, bits: int):
    """The needed-bits histogram (split.add_needed_bits_histogram) of the columns of the
    (L, K, R) view x, each column as one row [re, im, re, im, ...], in chunks of whole groups l;
    on the GPU, views that the one-pass kernel takes (state_histogram.takes_view) go through it
    instead of a transposed copy per chunk (the same integer counts)."""
    xp = array_module(x)
    if is_gpu_array(x) and takes_view(x, bits):
        return state_histogram(x)
    histogram = new_histogram(xp)
    n_left, k, n_right = x.shape
    for ls, rs in iter_column_chunks(n_left, n_right, max(1, _HISTOGRAM_CHUNK_AMPLITUDES // k)):
        rows = xp.ascontiguousarray(x[ls, :, rs].transpose(0, 2, 1)).reshape(-1, k).view(xp.float64)
        exps, finite = row_exponents(rows, bits)
        if not bool(finite):
            raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
        add_needed_bits_histogram(rows, exps, histogram)
    return histogram
