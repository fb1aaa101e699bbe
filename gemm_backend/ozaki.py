"""Complex GEMM by the INT8 Ozaki scheme (Ozaki-I): backends int8-<s> (s = 3..18) and int8-auto.

C = A B from exact INT8 x INT8 -> INT32 products of balanced 8-bit digits (ozaki_split.py), in
the order ozaki_plan.py specifies, so that every path gives the same bits:

    C ~= diag(2^e) [ sum over kept pairs (p, q) of 2^(-(p+q) b) A_p B_q ] diag(2^f).

Complex inputs use the real embedding, the real and imaginary parts of a row of A (a column of
B) sharing one scale: the rows of A are the float64 views [re, im, re, im, ...] of its complex
rows, and column j of B becomes two rows of an embedded B^T, [Re b_j, -Im b_j] and
[Im b_j, Re b_j] interleaved the same way, so one real product of inner size 2k gives Re and Im
of C already interleaved. Re = ArBr - AiBi and Im = ArBi + AiBr are then exact in int32.

How many digits (the plan: s_a, s_b and the largest p + q kept, T), and which scheme:
- int8-<s>: s_a = s_b = s, T = s + 1 (the seed paper's triangle).
- int8-auto (default, rule "fp64"): the contract that the result is as accurate as native FP64
  GEMM on the same inputs, entry by entry (ozaki_contract.py states the analysis): the digits
  (or moduli) go where the operands' exponent spans say FP64 would keep them. matmul scans
  both operands (exponents and norms, no product) and takes Ozaki-I or Ozaki-II (ozaki_crt.py),
  whichever the cost model (ozaki_cost.py) finds cheaper among the plans that meet the
  contract, or the native product when none does. apply_batched plans from the gate alone,
  for every state (entry by entry where the gate's rows have no zeros), so no pass over the
  state is needed.
- int8-auto with target_error=X: the cheapest plan whose rigorous a-priori bound
  (ozaki_bound.py) is at most X relative to ||a_i||_2 ||b_j||_2 per entry; bound="worst-case"
  takes X = gamma_n, FP64 GEMM's worst-case bound (the default before the contract). For
  matmul the bound uses both operands' row and column statistics; for apply_batched the gate
  and a bound that holds for every state.
- int8-auto with rho: the seed paper's rule, the smallest s whose average mantissa loss is at
  most rho bits (needs a pass over both operands).
- int8-auto (fp64 and target rules) gives the simulator's gates from K = 512 to Ozaki-II instead
  (ozaki_crt.py, the fewest moduli that meet the rule), where it was measured
  faster than Ozaki-I's tiles (H100, N = 30, BENCHMARKS.md round 4: 239 against 254 ms at
  d = 9; at d = 10 252 ms, against Ozaki-I's 338 in round 3; Ozaki-I is faster at d = 7, 8:
  213 / 221 against 237 / 247 ms). Both run unfused there (large_gates=).

Where the work runs:
- apply_batched and apply_scattered (gates on any target bits) on the GPU: the fused gate kernel
  (ozaki_gate.py) for K <= 64, in place, every amplitude read and written once.
- otherwise tile by tile: digits written by one kernel (or numpy) in each INT8 GEMM's
  concatenated layout, one cuBLAS INT8 GEMM (or exact float64 matmul on the CPU) per product
  group, one accumulation kernel (or numpy). Working memory: workspace_bytes, by default
  three quarters of the device memory free at call time (at least 64 MiB; 1 GiB on the CPU).
"""
import collections
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .arrays import array_module, cupy_module, gpu_available, is_gpu_array, iter_column_chunks, to_host
from .base import GemmBackend, check_matmul_operands
from .cublas_ex import K_ALIGNMENT, gemm_tn
from .errors import BackendError
from .gate_cost import CPU_FLOPS_PER_BYTE, GPU_FLOPS_PER_BYTE, INT8_FUSED_GPU_PASSES, measured_passes, roofline_passes
from .kernel_launch import launch_per_element
from .ozaki_bound import (
    check_target,
    choose_plan,
    fp64_gemm_bound,
    merge_summaries,
    plan_candidates,
    relative_bound,
    summarize_rows,
    worst_case_columns,
)
from .crt import error_bound as crt_error_bound
from .crt import moduli_for_target
from .ozaki_contract import (
    crt_error,
    crt_moduli,
    fp64_budget,
    gate_error_model,
    matmul_error_model,
    merge_spans,
    product_spans,
    summarize_spans,
)
from .ozaki_cost import ozaki1_seconds, ozaki2_seconds
from .ozaki_crt import SCHEME as OZAKI2_SCHEME
from .ozaki_crt import OzakiCrtBackend
from .ozaki_gate import FUSED_DIMS, apply_fused_gate, build_kernel, embedded_gate_rows, plan_launch
from .ozaki_plan import ProductPlan, accumulate, plan_products
from .ozaki_split import (
    SlicePlacements,
    add_needed_bits_histogram,
    bits_per_slice,
    choose_splits,
    new_histogram,
    row_exponents,
    split_rows,
    split_rows_gpu,
)
from .registry import CRT_MODULI, INT8_SPLITS

AUTO = "auto"
OZAKI1, OZAKI2 = "ozaki1", OZAKI2_SCHEME  # the schemes int8-auto may take
FP64, WORST_CASE = "fp64", "worst-case"  # int8-auto's bound= (module docstring)
OZAKI2_FROM_K = 512  # large_gates="auto": Ozaki-II from this gate size (module docstring)
TYPICAL_DIGIT_PAIRS = 43  # digit products of a default gate plan (8-9 x 8 digits, diagonals to 10), for gate_passes
FALLBACK_INFO = {"splits": None, "fallback": "zgemm"}
# Bytes per element of the CPU path's temporaries while splitting a row (frexp outputs, int64
# significand, shifts, carry, the digit before narrowing).
_CPU_SPLIT_TEMPORARY_BYTES = 80
_ACCUMULATE_SOURCE = Path(__file__).with_name("kernels") / "ozaki_accumulate.cu"


# -- working memory -------------------------------------------------------------------------
def _padded(inner: int) -> int:
    return -(-inner // K_ALIGNMENT) * K_ALIGNMENT


def a_row_bytes(plan: ProductPlan, b_rows: int) -> int:
    """Working bytes per row of A in a tile with b_rows embedded rows of B: the larger of the
    GPU's (digits in group layout, int32 group products) and the CPU's (int8 and float64
    digits, split temporaries, float64 diagonal sums and accumulator)."""
    diagonals = len(plan.diagonals)
    gpu = plan.pairs * _padded(plan.inner) + 4 * len(plan.groups) * b_rows
    cpu = (9 * plan.a_slices + _CPU_SPLIT_TEMPORARY_BYTES) * plan.inner + 8 * (diagonals + 3) * b_rows
    return max(gpu, cpu) + 4


def b_row_bytes(plan: ProductPlan) -> int:
    """Working bytes per embedded row of B: the float64 row, its digits, split temporaries."""
    slices = max(plan.pairs * _padded(plan.inner), 9 * plan.b_slices * plan.inner)
    return slices + (8 + _CPU_SPLIT_TEMPORARY_BYTES) * plan.inner + 4


# -- the backend ----------------------------------------------------------------------------
class OzakiBackend(GemmBackend):
    """Complex (or real) GEMM emulated with INT8 x INT8 -> INT32 products (module docstring).

    Arguments:
        splits: digits per operand, an int in 3..18, or "auto".
        bound: auto only: "fp64" (the default: the contract that the result is as accurate as
            native FP64 GEMM, ozaki_contract.py) or "worst-case" (the error-target rule with
            FP64 GEMM's worst-case bound gamma_n as the target, the default before the contract).
        target_error: auto only: the error-target rule with this target, relative to
            ||a_i||_2 ||b_j||_2 per entry, guaranteed by a rigorous bound (ozaki_bound.py).
        rho: auto only: use the seed paper's rule instead, average mantissa bits lost per
            element <= rho; when no s <= 18 qualifies that GEMM falls back to native matmul.
        workspace_bytes: working memory of the tile path (default: module docstring).
        fused: use the fused gate kernel on the GPU where it applies (default True).
        large_gates: the scheme of apply_batched for gates above the fused kernel's K = 64:
            "auto" (int8-auto's default with the fp64 and target rules: Ozaki-II from
            K = OZAKI2_FROM_K, where it was measured faster), "ozaki2" (every such gate) or
            "ozaki1" (the only one for fixed splits and rho). The choice depends on K alone, so
            the CPU and GPU paths still give the same bits.

    matmul(a, b): (m, k) @ (k, n); complex128 result when either input is complex, float64
    when both are real. last_call_info: {"scheme": "ozaki1", "splits": max(s_a, s_b),
    "splits_a", "splits_b", "top", "pairs", "rule", "kernel"}, with "bound" (the rigorous
    relative error bound) under the target rule; under the fp64 rule the choice is Ozaki-I or
    {"scheme": "ozaki2", "moduli": m, "kernel": "ozaki2"}, with "span_bits" (the operands'
    estimated span, ozaki_contract.py), "estimate" (the modelled error relative to S_ij, at most
    the contract's budget) and "model_s" ({"ozaki1": s or None, "ozaki2": s or None}, the cost
    model's figures of the cheapest plan of each scheme that meets the contract); and
    {"splits": None, "fallback": "zgemm"} for a native fallback. In apply_batched A is the state
    and B the gate, reported as "splits_state" and "splits_gate".
    """

    name = "int8"
    description = "INT8 Ozaki scheme (fixed or automatic number of splits)"
    OPTIONS = ("rho", "target_error", "workspace_bytes", "fused", "large_gates", "bound")
    AUTOMATIC_WORKSPACE = True

    def __init__(self, splits, rho=None, target_error=None, workspace_bytes=None, fused: bool = True,
                 large_gates=None, bound=None):
        super().__init__(workspace_bytes)
        self.fixed_splits = _check_splits(splits)
        self.rho = _check_rho(rho, self.fixed_splits)
        if target_error is not None and (self.fixed_splits is not None or self.rho is not None):
            raise BackendError("target_error applies only to int8-auto without rho (the two rules exclude each other)")
        self.target_error = None if target_error is None else check_target(target_error)
        self.bound = _check_bound(bound, self.fixed_splits, self.rho, self.target_error)
        if not isinstance(fused, bool):
            raise BackendError(f"fused must be True or False, got {fused!r}")
        self.fused = fused
        self.large_gates = self._check_large_gates(large_gates)
        self._prepared = {}  # id(u) -> (u, plan, statistics), from prepare()
        self._deferred_flag = None  # a device int32 set by the fused kernel on NaN/Inf, while a run defers checks
        self.options = {"splits": splits, "workspace_bytes": "auto" if self.auto_workspace else self.workspace_bytes,
                        "fused": fused}
        if self.fixed_splits is None:
            self.options.update({"rule": self.rule, "rho": self.rho, "target_error": self.target_error,
                                 "large_gates": self.large_gates, "bound": self.bound})
        self.reset_statistics()

    def _check_large_gates(self, large_gates) -> str:
        gate_only = self.rule in ("target", FP64)  # rules that plan a gate without the state
        if large_gates is None:
            return AUTO if gate_only else OZAKI1
        if large_gates not in (AUTO, OZAKI1, OZAKI2):
            raise BackendError(f"large_gates must be '{AUTO}', '{OZAKI1}' or '{OZAKI2}', got {large_gates!r}")
        if large_gates != OZAKI1 and not gate_only:
            raise BackendError(f"large_gates={large_gates!r} needs int8-auto's target rule or fp64 rule "
                               "(not fixed splits or rho)")
        return large_gates

    @property
    def rule(self) -> str:
        """"fixed" (int8-<s>), "rho", "target" (target_error= or bound="worst-case") or "fp64"."""
        if self.fixed_splits is not None:
            return "fixed"
        if self.rho is not None:
            return "rho"
        return "target" if self.target_error is not None or self.bound == WORST_CASE else FP64

    def works_in_place(self, k: int, on_gpu: bool = True) -> bool:
        return on_gpu and self.fused and plan_launch(k, plan_products(7, 2 * k)) is not None

    def contiguous_gate_passes(self, k: int, on_gpu: bool) -> float:
        """The fused kernel's and the GPU's tiled paths' measured passes at int8-auto's plans;
        elsewhere (CPU, the rho rule) the roofline of the emulated product: every digit pair is
        one more product, so it is compute-bound from small gates on."""
        if on_gpu and self.fused and self.rule != "rho":
            return measured_passes(INT8_FUSED_GPU_PASSES, k, super().contiguous_gate_passes(k, on_gpu))
        balance = GPU_FLOPS_PER_BYTE if on_gpu else CPU_FLOPS_PER_BYTE
        return roofline_passes(k, balance, flops_per_multiply_add=8.0 * TYPICAL_DIGIT_PAIRS)

    # -- interface ----------------------------------------------------------------------
    def matmul(self, a, b):
        a, b, is_complex = _check_operands(a, b)
        xp = array_module(a)
        (m, k), n = a.shape, b.shape[1]
        self._count(m, k, n)
        width = 2 if is_complex else 1
        inner = width * k
        if m == 0 or n == 0 or k == 0:  # nothing to represent: the smallest plan
            plan = plan_products(self.fixed_splits or INT8_SPLITS.start, max(inner, 1))
            return self._finish(xp.zeros((m, n), a.dtype), plan, "tiles")
        a_rows = a.view(xp.float64) if is_complex else a
        bits = bits_per_slice(inner)
        workspace = self.call_workspace(is_gpu_array(a))
        a_exps, b_exps, statistics = self._scan(a_rows, b, width, bits, workspace)
        if self.rule == FP64:
            choice = _contract_choice(m, k, n, is_complex, bits, statistics)
            if choice.scheme is None:
                return self._finish(xp.matmul(a, b), None, "zgemm")
            if choice.scheme == OZAKI2:
                # the automatic workspace is measured again inside, after the output exists
                own_workspace = None if self.auto_workspace else self.workspace_bytes
                out = OzakiCrtBackend(choice.moduli, workspace_bytes=own_workspace).matmul(a, b)
                self.ozaki2_matmuls += 1
                self.last_call_info = {"scheme": OZAKI2, "moduli": choice.moduli, "rule": self.rule,
                                       "kernel": OZAKI2, **choice.info()}
                return out
            plan = choice.plan
            statistics = {"contract": choice}
        else:
            plan = self._plan(inner, statistics)
        if plan is None:
            return self._finish(xp.matmul(a, b), None, "zgemm")
        out = xp.empty((m, n), a.dtype)
        self._multiply(plan, a_rows, a_exps, b, b_exps, width, out.view(xp.float64) if is_complex else out, workspace)
        return self._finish(out, plan, "tiles", statistics)

    def apply_batched(self, u, x, out):
        """out[l] = u @ x[l] for every l (GemmBackend.apply_batched), with one plan per gate.
        Each column (l, r) is one row of A with its own exponent, whatever the view's shape, so
        the bits do not depend on where the gate's qubits sit in memory (nor on the device)."""
        n_left, k, n_right = x.shape
        self._count(n_left * n_right, k, k)
        on_gpu = is_gpu_array(x)
        if self._takes_ozaki2(k):
            self._apply_ozaki2(u, x, out, on_gpu)
            return
        plan, statistics = self._plan_of(u, x)
        if plan is None:  # rho found no s: native, as matmul does
            _native_apply(u, x, out)
            self._finish(None, None, "zgemm")
            return
        launch = plan_launch(k, plan) if on_gpu and self.fused and _fused_view(x, out) else None
        if launch is not None:
            apply_fused_gate(u, x, out, plan, launch, self._deferred_flag)
            kernel = "fused"
        else:
            self._apply_tiles(u, x, out, plan, self.call_workspace(on_gpu))
            kernel = "tiles"
        self._finish(None, plan, kernel, statistics, gate=True)

    def takes_scattered(self, k: int, on_gpu: bool) -> bool:
        """The fused kernel addresses any targets; the rho rule needs the state's columns as a view."""
        return on_gpu and self.fused and self.rule != "rho" and k in FUSED_DIMS and not self._takes_ozaki2(k)

    def apply_scattered(self, u, state, targets) -> bool:
        """The fused kernel on the columns at `targets` (GemmBackend.apply_scattered), with the plan
        apply_batched would use, so the bits are those of the transposed copy's columns."""
        k = u.shape[0]
        if not self.takes_scattered(k, is_gpu_array(state)):
            return False
        plan, statistics = self._plan_of(u)
        launch = None if plan is None else plan_launch(k, plan)
        if launch is None:  # the engine then takes the transposed copy, and apply_batched the gate
            return False
        self._count(state.size // k, k, k)
        apply_fused_gate(u, state, state, plan, launch, self._deferred_flag, targets=targets)
        self._finish(None, plan, "fused", statistics, gate=True)
        return True

    def _takes_ozaki2(self, k: int) -> bool:
        if self.large_gates == AUTO:
            return k >= OZAKI2_FROM_K
        return self.large_gates == OZAKI2 and k > FUSED_DIMS[-1]

    def ozaki2_moduli(self, k: int) -> int:
        """Moduli of the Ozaki-II product for a gate of size k: under the fp64 rule the fewest
        whose modelled error (ozaki_contract.crt_error) meets the contract normwise per entry,
        for every state; under the target rule the fewest whose bound (crt.error_bound, relative
        to ||a_i||_2 ||b_j||_2 like ozaki_bound's) meets the target."""
        if self.rule == FP64:
            moduli = crt_moduli(k, 0.0, 2 * k, CRT_MODULI)  # span 0: relative to ||u_i|| ||x||
            if moduli is None:
                raise BackendError(f"no Ozaki-II plan with at most {CRT_MODULI.stop - 1} moduli meets the FP64 contract "
                                   f"at K = {k}; use large_gates='ozaki1'")
            return moduli
        target = self.target_error if self.target_error is not None else fp64_gemm_bound(2 * k)
        moduli = moduli_for_target(target, k)
        if moduli is None:
            raise BackendError(f"no Ozaki-II plan with at most {CRT_MODULI.stop - 1} moduli meets the error target "
                               f"{target:.3g} at K = {k}; use a larger target_error or large_gates='ozaki1'")
        return moduli

    def _apply_ozaki2(self, u, x, out, on_gpu: bool) -> None:
        k = x.shape[1]
        moduli = self.ozaki2_moduli(k)
        OzakiCrtBackend(moduli, workspace_bytes=self.call_workspace(on_gpu)).apply_batched(u, x, out)
        self.ozaki2_gates += 1
        self.last_call_info = {"scheme": OZAKI2, "moduli": moduli, "rule": self.rule, "kernel": OZAKI2}
        if self.rule == FP64:
            self.last_call_info["estimate"] = crt_error(moduli, k)
        else:
            self.last_call_info["bound"] = crt_error_bound(moduli, k)

    def gate_plan(self, u, x=None):
        """(plan, statistics) for a gate u (K, K) on state views x (L, K, R); the state is
        looked at only by the rho rule. plan is None where no plan meets the rule (rho or fp64):
        the gate then runs natively."""
        k = u.shape[0]
        inner = 2 * k
        if self.fixed_splits is not None:
            return plan_products(self.fixed_splits, inner), {}
        bits = bits_per_slice(inner)
        gate_rows = to_host(embedded_gate_rows(u))
        gate_exps, finite = row_exponents(gate_rows, bits)
        if not finite:
            raise BackendError("the gate matrix contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
        if self.rho is not None:
            histogram = to_host(_state_histogram(x, bits)).astype(np.int64)  # the gate's rows are on the host
            add_needed_bits_histogram(gate_rows, gate_exps, histogram)
            return self._plan(inner, {"histogram": histogram}), {}
        if self.rule == FP64:
            choice = _cheapest_ozaki1(gate_error_model(gate_rows, gate_exps, bits), inner)
            return choice.plan, {"contract": choice}
        statistics = {"a": worst_case_columns(inner, bits), "b": summarize_rows(gate_rows, gate_exps, bits)}
        return self._plan(inner, statistics), statistics

    def _plan_of(self, u, x=None):
        """(plan, statistics) that prepare() kept for this u object, else gate_plan(u, x)."""
        prepared = self._prepared.get(id(u))
        return prepared[1:] if prepared is not None and prepared[0] is u else self.gate_plan(u, x)

    def prepare(self, u) -> None:
        """Choose u's plan now (the fp64 and target rules look at the gate alone), for
        apply_batched, and build the fused kernel variant that plan compiles to."""
        if self.rule in ("target", FP64) and not self._takes_ozaki2(u.shape[0]):
            plan, statistics = self.gate_plan(u)
            self._prepared[id(u)] = (u, plan, statistics)
            launch = plan_launch(u.shape[0], plan) if is_gpu_array(u) and self.fused and plan is not None else None
            if launch is not None:
                build_kernel(launch)

    def start_run(self) -> None:
        cp = cupy_module()
        self._deferred_flag = cp.zeros(1, cp.int32) if cp is not None and gpu_available() else None

    def finish_run(self) -> None:
        flag, self._deferred_flag = self._deferred_flag, None
        self._prepared.clear()
        if flag is not None and int(flag[0]):
            raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """Workspace per row of A for a complex (m, k) @ (k, n), B's digits included: the
        workspace over the rows one tile can hold beside them (for the largest plan this backend
        may use), so that a chunk of workspace_bytes // (this + copies) rows is one tile."""
        row_step, _ = self._tile_sizes(None, n, 2, self._largest_plan(2 * k), self.workspace_bytes)
        return -(-self.workspace_bytes // row_step)

    def reset_statistics(self) -> None:
        super().reset_statistics()
        self.split_counts = collections.Counter()
        self.pair_count = 0
        self.fallbacks = 0
        self.ozaki2_gates = 0
        self.ozaki2_matmuls = 0

    def statistics(self) -> dict:
        stats = super().statistics()
        stats["splits_histogram"] = dict(sorted(self.split_counts.items()))
        stats["pairs"] = self.pair_count
        stats["fallbacks"] = self.fallbacks
        stats["ozaki2_gates"] = self.ozaki2_gates
        stats["ozaki2_matmuls"] = self.ozaki2_matmuls
        return stats

    # -- plans ----------------------------------------------------------------------------
    def _plan(self, inner: int, statistics: dict):
        """The plan of this backend's rule, or None (rho found no s: native fallback)."""
        if self.fixed_splits is not None:
            return plan_products(self.fixed_splits, inner)
        bits = bits_per_slice(inner)
        if self.rho is not None:
            splits = choose_splits(to_host(statistics["histogram"]), bits, self.rho, INT8_SPLITS)
            return None if splits is None else plan_products(splits, inner)
        target = self.target_error if self.target_error is not None else fp64_gemm_bound(inner)
        plan, _ = choose_plan(inner, statistics["a"], statistics["b"], target,
                              a_range=INT8_SPLITS, b_range=INT8_SPLITS)
        if plan is None:
            raise BackendError(f"no INT8 plan with at most {INT8_SPLITS.stop - 1} digits meets target_error="
                               f"{target:.3g}; raise the target or use a native backend")
        return plan

    def _largest_plan(self, inner: int) -> ProductPlan:
        """The plan of the most digits a call may use: memory is planned for it before auto chooses."""
        return plan_products(self.fixed_splits or INT8_SPLITS[-1], inner)

    # -- tiles ----------------------------------------------------------------------------
    def _apply_tiles(self, u, x, out, plan: ProductPlan, workspace: int) -> None:
        """The tile path of apply_batched: columns of the view in chunks as rows of A, B = u^T."""
        n_left, k, n_right = x.shape
        xp = array_module(x)
        row_bytes = a_row_bytes(plan, 2 * k) + 32 * k  # + transposed copy and result
        b_bytes = 2 * k * b_row_bytes(plan)
        max_columns = max(1, (workspace - b_bytes) // row_bytes)
        u_t = xp.asarray(u, dtype=xp.complex128).T
        for ls, rs in iter_column_chunks(n_left, n_right, max_columns):
            block = x[ls, :, rs]
            lc, _, rc = block.shape
            rows = xp.ascontiguousarray(block.transpose(0, 2, 1)).reshape(lc * rc, k)
            a_rows = rows.view(xp.float64)
            a_exps, finite = row_exponents(a_rows, plan.bits)
            if not bool(finite):
                raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
            b_exps, _ = row_exponents(_b_rows(u_t, slice(0, k), 2), plan.bits)
            product = xp.empty((lc * rc, k), xp.complex128)
            self._multiply(plan, a_rows, a_exps, u_t, b_exps, 2, product.view(xp.float64), workspace)
            out[ls, :, rs] = product.reshape(lc, rc, k).transpose(0, 2, 1)

    def _multiply(self, plan, a_rows, a_exps, b, b_exps, width: int, out_rows, workspace: int) -> None:
        """out_rows (m, width * n) float64 view of the output = the Ozaki product, tile by tile:
        B's columns outside (their digits made once per tile), rows of A inside."""
        m, n = a_rows.shape[0], b.shape[1]
        row_step, col_step = self._tile_sizes(m, n, width, plan, workspace)
        tile_products = _TILE_PRODUCTS[is_gpu_array(a_rows)]
        for cols in _steps(n, col_step):
            embedded = slice(width * cols.start, width * cols.stop)
            b_tile = tile_products(plan, _b_rows(b, cols, width), b_exps[embedded])
            for rows in _steps(m, row_step):
                b_tile.multiply(a_rows[rows], a_exps[rows], out_rows[rows, embedded])

    def _scan(self, a_rows, b, width: int, bits: int, workspace: int):
        """Row exponents of A (m,) and of the embedded rows of B (width * n,), int32, after
        checking that both are finite, and what the auto rule needs: {"histogram"} for rho,
        {"a", "b"} summaries for the error target (OperandSummary) and for fp64 (SpanSummary)."""
        xp = array_module(a_rows)
        m, n = a_rows.shape[0], b.shape[1]
        row_step, col_step = self._tile_sizes(m, n, width, self._largest_plan(width * b.shape[0]), workspace)
        a_exps, b_exps = xp.empty(m, xp.int32), xp.empty(width * n, xp.int32)
        statistics = {"histogram": new_histogram(xp)} if self.rule == "rho" else {}
        for rows in _steps(m, row_step):
            a_exps[rows], finite = row_exponents(a_rows[rows], bits)
            _require_finite(finite, "a")
            self._gather(statistics, "a", a_rows[rows], a_exps[rows], bits)
        for cols in _steps(n, col_step):
            b_tile = _b_rows(b, cols, width)
            exps, finite = row_exponents(b_tile, bits)
            _require_finite(finite, "b")
            b_exps[width * cols.start:width * cols.stop] = exps
            # every other embedded row holds all of a column's parts
            self._gather(statistics, "b", b_tile[::width], xp.ascontiguousarray(exps[::width]), bits)
        return a_exps, b_exps, statistics

    def _gather(self, statistics: dict, side: str, rows, exps, bits: int) -> None:
        if self.rule == "rho":
            add_needed_bits_histogram(rows, exps, statistics["histogram"])
        elif self.rule == "target":
            summary = summarize_rows(rows, exps, bits)
            statistics[side] = merge_summaries(statistics[side], summary) if side in statistics else summary
        elif self.rule == FP64:
            spans = summarize_spans(rows, exps)
            statistics[side] = merge_spans(statistics[side], spans) if side in statistics else spans

    def _tile_sizes(self, m, n: int, width: int, plan: ProductPlan, workspace: int) -> tuple:
        """(rows of A, columns of B) per tile, as even as the counts allow: B's columns take at
        most half the workspace, rows of A (m of them; None for unbounded) the rest."""
        per_column = width * b_row_bytes(plan)
        col_step = _even_step(n, max(1, workspace // 2 // per_column))
        per_row = a_row_bytes(plan, width * col_step)
        row_step = (workspace - col_step * per_column) // per_row
        if row_step < 1:
            raise BackendError(
                f"workspace_bytes={workspace} is too small for inner size {plan.inner // width}: "
                f"one row and one column need {per_row + per_column} bytes; raise workspace_bytes"
            )
        return (row_step if m is None else _even_step(m, row_step)), col_step

    def _finish(self, out, plan, kernel: str, statistics: dict = None, gate: bool = False):
        if plan is None:
            info = dict(FALLBACK_INFO)
            self.fallbacks += 1
        else:
            a_name, b_name = ("splits_state", "splits_gate") if gate else ("splits_a", "splits_b")
            info = {"scheme": OZAKI1, "splits": plan.n_slices, a_name: plan.a_slices, b_name: plan.b_slices,
                    "top": plan.top, "pairs": plan.pairs, "rule": self.rule, "kernel": kernel}
            if statistics and "a" in statistics and self.rule == "target":
                info["bound"] = relative_bound(plan, statistics["a"], statistics["b"])
            if statistics and "contract" in statistics:
                info.update(statistics["contract"].info())
            self.split_counts[plan.n_slices] += 1
            self.pair_count += plan.pairs
        self.last_call_info = info
        return out


def _require_finite(finite, name: str) -> None:
    if not bool(finite):
        raise BackendError(f"matmul operand {name} contains NaN or Inf; the INT8 Ozaki scheme needs finite input")


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


def _check_operands(a, b):
    """(a, b, is_complex): a C-contiguous, both complex128 when either is complex, else float64."""
    xp, a, b = check_matmul_operands(a, b)
    is_complex = "c" in (a.dtype.kind, b.dtype.kind)
    dtype = xp.complex128 if is_complex else xp.float64
    return xp.ascontiguousarray(a, dtype=dtype), b.astype(dtype, copy=False), is_complex


@dataclass(frozen=True)
class ContractChoice:
    """What the fp64 rule chose for one product: scheme (OZAKI1, OZAKI2, or None for the native
    product), the Ozaki-I plan or the number of moduli, the span estimate behind it (bits; None
    for a gate), the modelled error of the choice relative to S_ij, and the cost model's
    seconds of the cheapest plan of each scheme that meets the contract (None: none does)."""

    scheme: object
    plan: object = None
    moduli: object = None
    span_bits: object = None
    estimate: object = None
    model_s: dict = None

    def info(self) -> dict:
        info = {"estimate": self.estimate}
        if self.span_bits is not None:
            info["span_bits"] = self.span_bits
        if self.model_s is not None:
            info["model_s"] = dict(self.model_s)
        return info


def _cheapest_ozaki1(model, inner: int) -> ContractChoice:
    """The Ozaki-I plan with the fewest digit pairs (then digits, then T) whose modelled error
    meets the contract's budget, as a ContractChoice (scheme None when no plan does)."""
    candidates = np.array(plan_candidates(inner, tuple(INT8_SPLITS), tuple(INT8_SPLITS)))
    estimates = model.estimates(candidates)
    passing = np.flatnonzero(estimates <= fp64_budget(inner))
    if passing.size == 0:
        return ContractChoice(None)
    s_a, s_b, top = (int(v) for v in candidates[passing[0]])
    return ContractChoice(OZAKI1, plan=plan_products(s_a, inner, s_b, top), estimate=float(estimates[passing[0]]))


def _contract_choice(m: int, k: int, n: int, is_complex: bool, bits: int, statistics: dict) -> ContractChoice:
    """The fp64 rule for a matmul (module docstring): the cheaper (ozaki_cost) of the cheapest
    Ozaki-I plan and the fewest moduli that meet the contract, from the scan's SpanSummaries."""
    inner = (2 if is_complex else 1) * k
    spans = product_spans(statistics["a"], statistics["b"], 2 if is_complex else 1)
    if spans is None:  # a zero operand: every plan gives exact zeros, take the smallest
        first = plan_candidates(inner, tuple(INT8_SPLITS), tuple(INT8_SPLITS))[0]
        return ContractChoice(OZAKI1, plan=plan_products(first[0], inner, first[1], first[2]), estimate=0.0)
    ozaki1 = _cheapest_ozaki1(matmul_error_model(statistics["a"], statistics["b"], spans, bits), inner)
    moduli = crt_moduli(k, spans.norms, inner, CRT_MODULI)
    seconds = {OZAKI1: None if ozaki1.plan is None else ozaki1_seconds(ozaki1.plan, m, k, n, is_complex),
               OZAKI2: None if moduli is None else ozaki2_seconds(moduli, m, k, n, is_complex)}
    if moduli is not None and (seconds[OZAKI1] is None or seconds[OZAKI2] < seconds[OZAKI1]):
        return ContractChoice(OZAKI2, moduli=moduli, span_bits=spans.norms,
                              estimate=crt_error(moduli, k) * 2.0**spans.norms, model_s=seconds)
    if ozaki1.plan is None:
        return ContractChoice(None, model_s=seconds)
    return ContractChoice(OZAKI1, plan=ozaki1.plan, span_bits=spans.exponents, estimate=ozaki1.estimate,
                          model_s=seconds)


def _fused_view(x, out) -> bool:
    """The fused kernel takes C-contiguous views whose stride R is a power of two."""
    n_right = x.shape[2]
    return x.flags.c_contiguous and out.flags.c_contiguous and not n_right & (n_right - 1)


def _native_apply(u, x, out) -> None:
    xp = array_module(x)
    out[...] = xp.matmul(xp.asarray(u, dtype=xp.complex128), x)


def _state_histogram(x, bits: int):
    """The needed-bits histogram (ozaki_split.add_needed_bits_histogram) of the columns of the
    (L, K, R) view x, each column as one row [re, im, re, im, ...], in chunks of whole groups l."""
    xp = array_module(x)
    histogram = new_histogram(xp)
    n_left, k, n_right = x.shape
    for ls, rs in iter_column_chunks(n_left, n_right, max(1, (1 << 22) // k)):
        rows = xp.ascontiguousarray(x[ls, :, rs].transpose(0, 2, 1)).reshape(-1, k).view(xp.float64)
        exps, finite = row_exponents(rows, bits)
        if not bool(finite):
            raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
        add_needed_bits_histogram(rows, exps, histogram)
    return histogram


def _b_rows(b, cols: slice, width: int):
    """The embedded rows of B^T for columns `cols` of b (k, n): (width * n_cols, width * k)
    float64, C-contiguous. Complex: rows [Re b_j, -Im b_j] and [Im b_j, Re b_j], interleaved
    element by element like the float64 view of a complex row of A."""
    xp = array_module(b)
    block = b[:, cols]
    if width == 1:
        return xp.ascontiguousarray(block.T)
    return embedded_gate_rows(block.T)


def _even_step(total: int, limit: int) -> int:
    """The step that cuts total into as few pieces of at most limit as possible, evenly."""
    pieces = max(1, -(-total // limit))
    return max(1, -(-total // pieces))


def _steps(total: int, step: int):
    for start in range(0, total, step):
        yield slice(start, min(total, start + step))


# -- products of one tile -------------------------------------------------------------------
class _CpuTileProducts:
    """Ozaki products of row tiles of A with one tile of B's embedded rows, with numpy: float64
    GEMMs of the integer digits, exact because every partial sum is an integer below 2^31."""

    def __init__(self, plan: ProductPlan, b_rows, b_exps):
        self.plan = plan
        self.b_exps = b_exps
        self.b_digits = split_rows(b_rows, b_exps, plan.b_slices, plan.bits, np.float64)

    def multiply(self, a_rows, a_exps, out) -> None:
        """out (rows, b_rows) = the scaled Ozaki product of a_rows (rows, inner) float64."""
        plan = self.plan
        a_digits = split_rows(a_rows, a_exps, plan.a_slices, plan.bits, np.float64)
        sums = {}
        for group in plan.groups:
            ps = np.arange(group.first, group.last + 1)
            a_side = a_digits[:, ps - 1, :].reshape(a_digits.shape[0], -1)
            b_side = self.b_digits[:, group.diagonal - ps - 1, :].reshape(self.b_digits.shape[0], -1)
            product = a_side @ b_side.T
            sums[group.diagonal] = sums[group.diagonal] + product if group.diagonal in sums else product
        out[...] = accumulate(plan, sums, a_exps[:, None] + self.b_exps[None, :])


class _GpuTileProducts:
    """The same on the GPU: digits written by one kernel into each group's concatenated
    layout, one cublas_ex.gemm_tn INT8 GEMM per group, one accumulation kernel."""

    def __init__(self, plan: ProductPlan, b_rows, b_exps):
        cp = cupy_module()
        self.plan = plan
        self.b_exps = b_exps
        self.padded = _padded(plan.inner)
        self.spans = _group_spans(plan, self.padded)
        self.group_terms = tuple(cp.asarray(a) for a in _group_accumulation(plan))
        self.a_placements = _placements(plan, self.padded, self.spans, plan.a_slices, lambda group, p: p)
        self.a_device_placements = self.a_placements.on_device()
        b_placements = _placements(plan, self.padded, self.spans, plan.b_slices, lambda group, p: group.diagonal - p)
        self.b_groups = self._split(b_rows, b_exps, b_placements, b_placements.on_device())

    def _split(self, rows, exps, placements, device_placements) -> list:
        """Each group's (rows, width) int8 operand, all in one buffer."""
        cp = cupy_module()
        n_rows = rows.shape[0]
        buffer = cp.empty(n_rows * self.plan.pairs * self.padded, cp.int8)
        split_rows_gpu(rows, exps, self.plan.bits, self.padded, placements, device_placements, buffer)
        return [buffer[start * n_rows:(start + width) * n_rows].reshape(n_rows, width) for start, width in self.spans]

    def multiply(self, a_rows, a_exps, out) -> None:
        cp = cupy_module()
        a_groups = self._split(a_rows, a_exps, self.a_placements, self.a_device_placements)
        n_rows, n_cols = a_rows.shape[0], self.b_exps.size
        products = cp.empty((len(self.spans), n_rows, n_cols), cp.int32)
        for a_side, b_side, product in zip(a_groups, self.b_groups, products):
            gemm_tn(a_side, b_side, out=product)
        shifts, chunk_ends, weights = self.group_terms
        launch_per_element(_accumulate_kernel(), n_rows * n_cols, (
            products, cp.int32(len(self.spans)), shifts, chunk_ends, weights, cp.int64(n_rows), cp.int32(n_cols),
            a_exps, self.b_exps, out, cp.int64(out.strides[0] // out.itemsize)))


_TILE_PRODUCTS = {False: _CpuTileProducts, True: _GpuTileProducts}


def _group_accumulation(plan: ProductPlan) -> tuple:
    """Per group: its shift b (t_top - t) inside its chunk (int32), whether it ends its chunk
    (int32 0/1), and the chunk's weight 2^(-b t_top) (float64): ozaki_plan steps 2-3."""
    chunk_of = {t: chunk for chunk in plan.chunks for t in chunk}
    shifts, ends, weights = [], [], []
    for index, group in enumerate(plan.groups):
        chunk = chunk_of[group.diagonal]
        following = plan.groups[index + 1] if index + 1 < len(plan.groups) else None
        shifts.append(plan.bits * (chunk[0] - group.diagonal))
        ends.append(int(following is None or chunk_of[following.diagonal] != chunk))
        weights.append(2.0 ** (-plan.bits * chunk[0]))
    return np.array(shifts, np.int32), np.array(ends, np.int32), np.array(weights)


def _group_spans(plan: ProductPlan, padded: int) -> list:
    """(start, width) of each group's operand, in bytes per row, groups side by side."""
    spans, start = [], 0
    for group in plan.groups:
        spans.append((start, group.length * padded))
        start += group.length * padded
    return spans


def _placements(plan: ProductPlan, padded: int, spans: list, n_slices: int, slice_at) -> SlicePlacements:
    """Where each digit goes in the group layout; slice_at(group, p) is the digit standing at
    A-digit p's position (p itself for A, t - p for B)."""
    entries = []
    for group, (start, width) in zip(plan.groups, spans):
        for position, p in enumerate(range(group.first, group.last + 1)):
            entries.append((slice_at(group, p), start, width, position * padded))
    return SlicePlacements(entries, n_slices)


@functools.lru_cache(maxsize=None)
def _accumulate_kernel():
    module = cupy_module().RawModule(code=_ACCUMULATE_SOURCE.read_text(), options=("--std=c++17",))
    return module.get_function("ozaki_accumulate")
