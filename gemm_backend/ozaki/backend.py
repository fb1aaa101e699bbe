"""Complex GEMM by the INT8 Ozaki scheme (Ozaki-I): backends int8-<s> (s = 3..18) and int8-auto.

C = A B from exact INT8 x INT8 -> INT32 products of balanced 8-bit digits (split.py), in the
order plan.py specifies, so that every path gives the same bits:

    C ~= diag(2^e) [ sum over kept pairs (p, q) of 2^(-(p+q) b) A_p B_q ] diag(2^f).

Complex inputs use the real embedding, the real and imaginary parts of a row of A (a column of
B) sharing one scale: the rows of A are the float64 views [re, im, re, im, ...] of its complex
rows, and column j of B becomes two rows of an embedded B^T, [Re b_j, -Im b_j] and
[Im b_j, Re b_j] interleaved the same way, so one real product of inner size 2k gives Re and Im
of C already interleaved. Re = ArBr - AiBi and Im = ArBi + AiBr are then exact in int32.

How many digits, and which scheme: the backend's split rule (rules.py: fixed, rho, target,
fp64). Under the fp64 and target rules (large_gates="auto"), gates above K = WIDE_GATE_K run on
Ozaki-II (crt_backend.py, the fewest moduli that meet the rule), which is faster there on the
H100 (BENCHMARKS.md), and gates of K = WIDE_GATE_K on the scheme the gate cost model
(cost.py) finds cheaper for the gate's Ozaki-I plan and the size's moduli. The choice depends on
the gate alone, so CPU and GPU give the same bits.

Where the work runs:
- apply_batched and apply_scattered (gates on any target bits) on the GPU: the fused gate kernels
  (gate.py) for K <= 512, in place, every amplitude read and written once; Ozaki-II's gates on
  kernels that address the columns where they sit, for any targets (crt_backend.apply_at).
- otherwise tile by tile (tiles.py): digits written by one kernel (or numpy) in each INT8 GEMM's
  concatenated layout, one cuBLAS INT8 GEMM (or exact float64 matmul on the CPU) per product
  group, one accumulation kernel (or numpy). Working memory: workspace_bytes, by default
  three quarters of the device memory free at call time (at least 64 MiB; 1 GiB on the CPU), for
  a gate (Ozaki-I tiles, Ozaki-II) at most workspace.GATE_WORKSPACE_LIMIT.
"""
import collections

from ..arrays import array_module, cupy_module, gpu_available, is_gpu_array, iter_column_chunks
from ..base import GemmBackend, check_matmul_operands
from ..errors import BackendError
from ..gate_cost import CPU_FLOPS_PER_BYTE, GPU_FLOPS_PER_BYTE, INT8_FUSED_GPU_PASSES, measured_passes, roofline_passes
from ..transpose import transpose_into
from ..workspace import Workspace
from .cost import WIDE_GATE_K, ozaki2_gate_passes, wide_gate_passes
from .crt_backend import OzakiCrtBackend, addresses_targets
from .gate import FUSED_DIMS, WIDE_DIMS, apply_fused_gate, build_kernel, plan_launch
from .plan import ProductPlan
from .rules import AUTO, OZAKI1, OZAKI2, Choice, make_rule
from .span_scan import scan_gpu
from .split import bits_per_slice, row_exponents
from .tiles import a_row_bytes, b_row_bytes, b_tiles, embedded_b_rows, multiply, steps, tile_sizes

TYPICAL_DIGIT_PAIRS = 43  # digit products of a default gate plan (8-9 x 8 digits, diagonals to 10), for gate_passes
FALLBACK_INFO = {"splits": None, "fallback": "zgemm"}


class OzakiBackend(GemmBackend):
    """Complex (or real) GEMM emulated with INT8 x INT8 -> INT32 products (module docstring).

    Arguments:
        splits: digits per operand, an int in 3..18, or "auto".
        bound: auto only: "fp64" (the default: the contract that the result is as accurate as
            native FP64 GEMM, contract.py) or "worst-case" (the error-target rule with
            FP64 GEMM's worst-case bound gamma_n as the target, the default before the contract).
        target_error: auto only: the error-target rule with this target, relative to
            ||a_i||_2 ||b_j||_2 per entry, guaranteed by a rigorous bound (bound.py).
        rho: auto only: use the seed paper's rule instead, average mantissa bits lost per
            element <= rho; when no s <= 18 qualifies that GEMM falls back to native matmul.
        workspace_bytes: working memory of the tile path (default: module docstring).
        fused: use the fused gate kernel on the GPU where it applies (default True).
        large_gates: the scheme of apply_batched for gates above K = 64:
            "auto" (int8-auto's default with the fp64 and target rules: Ozaki-II above
            K = WIDE_GATE_K, and at it where the gate cost model finds it cheaper than the
            gate's Ozaki-I plan), "ozaki2" (every such gate) or "ozaki1" (the only one for
            fixed splits and rho). The choice depends on the gate alone, so the CPU and GPU
            paths still give the same bits.

    matmul(a, b): (m, k) @ (k, n); complex128 result when either input is complex, float64
    when both are real. last_call_info: {"scheme": "ozaki1", "splits": max(s_a, s_b),
    "splits_a", "splits_b", "top", "pairs", "rule", "kernel"}, with "bound" (the rigorous
    relative error bound) under the target rule; under the fp64 rule the choice is Ozaki-I or
    {"scheme": "ozaki2", "moduli": m, "kernel": "ozaki2"}, with "span_bits" (the operands'
    estimated span, contract.py), "estimate" (the modelled error relative to S_ij, at most
    the contract's budget) and "model_s" ({"ozaki1": s or None, "ozaki2": s or None}, the cost
    model's figures of the cheapest plan of each scheme that meets the contract); and
    {"splits": None, "fallback": "zgemm"} for a native fallback. In apply_batched A is the state
    and B the gate, reported as "splits_state" and "splits_gate".
    """

    name = "int8"
    OPTIONS = ("rho", "target_error", "workspace_bytes", "fused", "large_gates", "bound")
    AUTOMATIC_WORKSPACE = True

    def __init__(self, splits, rho=None, target_error=None, workspace_bytes=None, fused: bool = True,
                 large_gates=None, bound=None):
        super().__init__(workspace_bytes)
        self.split_rule = make_rule(splits, rho, target_error, bound)
        if not isinstance(fused, bool):
            raise BackendError(f"fused must be True or False, got {fused!r}")
        self.fused = fused
        self.large_gates = self._check_large_gates(large_gates)
        self._prepared = {}  # id(u) -> (u, Choice), from prepare()
        self._running = False  # between start_run and finish_run
        self._latest = None  # (u, Choice) of the last gate chosen for in this run, not prepared
        self._ozaki2_backends = {}  # (moduli, gaussian) -> the OzakiCrtBackend of Ozaki-II gates and products
        self._deferred_flag = None  # a device int32 set by the fused kernels and Ozaki-II gates on NaN/Inf, while a run defers checks
        self.options = {"splits": splits, "workspace_bytes": self.workspace.report(),
                        "fused": fused, **self.split_rule.option_report(self.large_gates)}
        self.reset_statistics()

    def _check_large_gates(self, large_gates) -> str:
        if large_gates is None:
            return AUTO if self.split_rule.may_take_ozaki2 else OZAKI1
        if large_gates not in (AUTO, OZAKI1, OZAKI2):
            raise BackendError(f"large_gates must be '{AUTO}', '{OZAKI1}' or '{OZAKI2}', got {large_gates!r}")
        if large_gates != OZAKI1 and not self.split_rule.may_take_ozaki2:
            raise BackendError(f"large_gates={large_gates!r} needs int8-auto's target rule or fp64 rule "
                               "(not fixed splits or rho)")
        return large_gates

    @property
    def rule(self) -> str:
        """"fixed" (int8-<s>), "rho", "target" (target_error= or bound="worst-case") or "fp64"."""
        return self.split_rule.name

    # The options that made the rule (SplitRule's; None where not given).
    fixed_splits = property(lambda self: self.split_rule.fixed_splits)
    rho = property(lambda self: self.split_rule.rho)
    target_error = property(lambda self: self.split_rule.target_error)
    bound = property(lambda self: self.split_rule.bound)

    def works_in_place(self, k: int, on_gpu: bool = True) -> bool:
        """On the GPU every gate size: the fused kernels write in place, and the tile paths (Ozaki-I
        tiles, Ozaki-II) compute each chunk of columns into a temporary and copy it to out, so
        out = x costs the same and a second state buffer would only take memory."""
        return on_gpu

    def contiguous_gate_passes(self, k: int, on_gpu: bool) -> float:
        """The fused kernel's and the GPU's tiled paths' measured passes at int8-auto's plans;
        elsewhere (CPU, the rho rule) the roofline of the emulated product: every digit pair is
        one more product, so it is compute-bound from small gates on."""
        if on_gpu and self.fused and self.split_rule.plans_from_gate:
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
        if m == 0 or n == 0 or k == 0:  # nothing to represent: the smallest plan
            return self._finish(xp.zeros((m, n), a.dtype), Choice(OZAKI1, self.split_rule.smallest_plan(max(width * k, 1))),
                                "tiles")
        a_rows = a.view(xp.float64) if is_complex else a
        workspace = self.workspace.for_call(is_gpu_array(a))
        a_exps, b_exps, statistics = self._scan(a_rows, b, width, workspace)
        choice = self.split_rule.matmul_choice(m, k, n, is_complex, statistics)
        if choice.scheme == OZAKI2:  # its automatic workspace is measured again inside, after the output exists
            out = self._ozaki2_backend(choice, self.workspace).matmul(a, b)
            self.ozaki2_matmuls += 1
            self.last_call_info = {"scheme": OZAKI2, "moduli": choice.moduli, "gaussian": choice.gaussian,
                                   "rule": self.rule, "kernel": OZAKI2,
                                   **choice.info}
            return out
        if choice.scheme is None:
            return self._finish(xp.matmul(a, b), choice, "zgemm")
        out = xp.empty((m, n), a.dtype)
        out_rows = out.view(xp.float64) if is_complex else out

        def tiles(workspace: int) -> None:  # sized after `out`, like the Ozaki-II path (the bits do not depend on tiling)
            row_step, col_step = tile_sizes(m, n, width, choice.plan, workspace)
            multiply(a_rows, a_exps, b_tiles(choice.plan, b, b_exps, width, col_step), width, out_rows, row_step)

        self.workspace.run(is_gpu_array(a), tiles)
        return self._finish(out, choice, "tiles")

    def apply_batched(self, u, x, out):
        """out[l] = u @ x[l] for every l (GemmBackend.apply_batched), with one plan per gate.
        Each column (l, r) is one row of A with its own exponent, whatever the view's shape, so
        the bits do not depend on where the gate's qubits sit in memory (nor on the device)."""
        n_left, k, n_right = x.shape
        self._count(n_left * n_right, k, k)
        on_gpu = is_gpu_array(x)
        choice = self._choice_of(u, x)
        if choice.scheme == OZAKI2:
            self._apply_ozaki2(choice, u, x, out, on_gpu)
            return
        if choice.scheme is None:  # no plan meets the rule: native, as matmul does
            _native_apply(u, x, out)
            self._finish(None, choice, "zgemm")
            return
        launch = plan_launch(k, choice.plan) if on_gpu and self.fused and _fused_view(x, out) else None
        if launch is not None:
            apply_fused_gate(u, x, out, choice.plan, launch, self._deferred_flag)
            kernel = "fused"
        else:
            self._apply_tiles(u, x, out, choice.plan, self.workspace.for_gate_call(on_gpu))
            kernel = "tiles"
        self._finish(None, choice, kernel, gate=True)

    def takes_scattered(self, k: int, on_gpu: bool) -> bool:
        """Whether every gate of size k runs in place at any targets, on whichever scheme it takes:
        the fused kernels (Ozaki-I) and Ozaki-II's kernels (OzakiCrtBackend.apply_at) address any
        targets; the rho rule needs the state's columns as a view."""
        if not (on_gpu and self.split_rule.plans_from_gate):
            return False
        ozaki1 = self._fused_scattered(k, on_gpu)
        ozaki2 = addresses_targets(k, on_gpu)
        if self._ozaki2_only(k):
            return ozaki2
        if self._scheme_per_gate(k):
            return ozaki1 and ozaki2
        return ozaki1

    def _fused_scattered(self, k: int, on_gpu: bool) -> bool:
        """Whether a fused kernel may take a gate of size k at any targets on this device."""
        return (on_gpu and self.fused and self.split_rule.plans_from_gate and k in FUSED_DIMS + WIDE_DIMS
                and not self._ozaki2_only(k))

    def apply_scattered(self, u, state, targets) -> bool:
        """The gate on the columns at `targets` in place (GemmBackend.apply_scattered), with the
        choice apply_batched would make, so the bits are those of the transposed copy's columns:
        Ozaki-II's kernels or the fused kernel; False where neither takes it."""
        k = u.shape[0]
        on_gpu = is_gpu_array(state)
        if not (on_gpu and self.split_rule.plans_from_gate):
            return False
        if not (self._ozaki2_only(k) or self._scheme_per_gate(k) or self._fused_scattered(k, on_gpu)):
            return False
        choice = self._choice_of(u)
        if choice.scheme == OZAKI2:
            if not addresses_targets(k, on_gpu):
                return False
            self._count(state.size // k, k, k)
            self._ozaki2_gate(choice, on_gpu).apply_at(u, state, targets, self._deferred_flag)
            return True
        launch = plan_launch(k, choice.plan) if choice.scheme == OZAKI1 and self._fused_scattered(k, on_gpu) else None
        if launch is None:  # the engine then takes the transposed copy, and apply_batched the gate
            return False
        self._count(state.size // k, k, k)
        apply_fused_gate(u, state, state, choice.plan, launch, self._deferred_flag, targets=targets)
        self._finish(None, choice, "fused", gate=True)
        return True

    def _ozaki2_only(self, k: int) -> bool:
        """Whether every gate of size k runs on Ozaki-II (large_gates), whatever its Ozaki-I plan."""
        if self.large_gates == AUTO:
            return k > WIDE_GATE_K
        return self.large_gates == OZAKI2 and k > FUSED_DIMS[-1]

    def _scheme_per_gate(self, k: int) -> bool:
        """Whether a gate of size k, where not Ozaki-II's alone, takes the scheme its own plan makes
        cheaper (large_gates="auto" at K = WIDE_GATE_K, _cheaper_scheme)."""
        return self.large_gates == AUTO and k >= WIDE_GATE_K

    def _gate_choice(self, u, x=None) -> Choice:
        """The Choice of gate u (K, K) on state views x: the rule's Ozaki-I plan (or native product),
        or Ozaki-II's moduli where large_gates sends the gate there (class docstring)."""
        k = u.shape[0]
        if self._ozaki2_only(k):
            return self.split_rule.ozaki2_gate(k)
        if not self._scheme_per_gate(k):
            return self.split_rule.gate_choice(u, x)
        return self._cheaper_scheme(u)

    def _cheaper_scheme(self, u) -> Choice:
        """At K = WIDE_GATE_K under large_gates="auto": the gate's Ozaki-I plan where the cost model
        (cost.py) finds it cheaper than the size's Ozaki-II moduli, or where no moduli meet the
        rule; Ozaki-II where they are no dearer or the rule has no Ozaki-I plan. The rule's
        error where neither scheme meets it."""
        ozaki1, ozaki1_error = _attempt(self.split_rule.gate_choice, u)
        ozaki2, ozaki2_error = _attempt(self.split_rule.ozaki2_gate, u.shape[0])
        if ozaki1 is not None and ozaki1.plan is None:  # the fp64 rule: no plan within its digits
            ozaki1 = None
        if ozaki1 is not None and ozaki2 is not None:
            cheaper = ozaki2_gate_passes(ozaki2.moduli, ozaki2.gaussian) <= wide_gate_passes(ozaki1.plan)
            return ozaki2 if cheaper else ozaki1
        if ozaki1 is None and ozaki2 is None:
            raise ozaki1_error or ozaki2_error
        return ozaki1 or ozaki2

    def _apply_ozaki2(self, choice: Choice, u, x, out, on_gpu: bool) -> None:
        self._ozaki2_gate(choice, on_gpu).apply_gate(u, x, out, self._deferred_flag if on_gpu else None)

    def _ozaki2_gate(self, choice: Choice, on_gpu: bool) -> OzakiCrtBackend:
        """The Ozaki-II backend of a gate's OZAKI2 choice, within the gate workspace, with the
        gate counted and reported (last_call_info) as one."""
        ozaki2 = self._ozaki2_backend(choice, Workspace(self.workspace.for_gate_call(on_gpu)))
        self.ozaki2_gates += 1
        self.last_call_info = {"scheme": OZAKI2, "moduli": choice.moduli, "gaussian": choice.gaussian,
                               "rule": self.rule, "kernel": OZAKI2,
                               **choice.info}
        return ozaki2

    def _ozaki2_backend(self, choice: Choice, workspace: Workspace) -> OzakiCrtBackend:
        """The Ozaki-II backend of an OZAKI2 choice (made once per number and kind of moduli),
        working within `workspace` for this call."""
        key = (choice.moduli, choice.gaussian)
        backend = self._ozaki2_backends.get(key)
        if backend is None:
            backend = self._ozaki2_backends[key] = OzakiCrtBackend(choice.moduli, choice.gaussian)
        backend.workspace = workspace
        return backend

    def gate_plan(self, u, x=None):
        """(plan, choice) for a gate u (K, K) on state views x (L, K, R) (rules.SplitRule.gate_choice);
        plan is None where no plan meets the rule (rho or fp64): the gate then runs natively."""
        choice = self.split_rule.gate_choice(u, x)
        return choice.plan, choice

    def _choice_of(self, u, x=None) -> Choice:
        """The Choice prepare() kept for this u object, else _gate_choice's for u (and x). During a
        run the last one made for a gate of the rule's own is kept too: apply_scattered and every
        chunk of the transposed copy ask for the same gate again."""
        prepared = self._prepared.get(id(u))
        if prepared is not None and prepared[0] is u:
            return prepared[1]
        if self._latest is not None and self._latest[0] is u:
            return self._latest[1]
        choice = self._gate_choice(u, x)
        if self._running and self.split_rule.plans_from_gate:
            self._latest = (u, choice)
        return choice

    def prepare(self, u) -> None:
        """Choose u's plan now (the fp64 and target rules look at the gate alone), for
        apply_batched, and build the fused kernel variant that plan compiles to."""
        k = u.shape[0]
        if self.split_rule.may_take_ozaki2 and not self._ozaki2_only(k):
            choice = self._gate_choice(u)
            self._prepared[id(u)] = (u, choice)
            fused = is_gpu_array(u) and self.fused and choice.scheme == OZAKI1
            launch = plan_launch(k, choice.plan) if fused else None
            if launch is not None:
                build_kernel(launch)

    def release(self, u) -> None:
        self._prepared.pop(id(u), None)

    def start_run(self) -> None:
        cp = cupy_module()
        self._deferred_flag = cp.zeros(1, cp.int32) if cp is not None and gpu_available() else None
        self._running = True

    def finish_run(self) -> None:
        flag, self._deferred_flag = self._deferred_flag, None
        self._prepared.clear()
        self._running, self._latest = False, None
        if flag is not None and int(flag[0]):
            raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """Workspace per row of A for a complex (m, k) @ (k, n), B's digits included: the
        workspace over the rows one tile can hold beside them (for the largest plan this backend
        may use), so that a chunk of workspace_bytes // (this + copies) rows is one tile."""
        row_step, _ = tile_sizes(None, n, 2, self.split_rule.largest_plan(2 * k), self.workspace_bytes)
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

    # -- steps ----------------------------------------------------------------------------
    def _apply_tiles(self, u, x, out, plan: ProductPlan, workspace: int) -> None:
        """The tile path of apply_batched: columns of the view in chunks as rows of A, B = u^T.
        The gate's digits are made once per call when one column tile holds all of B."""
        n_left, k, n_right = x.shape
        xp = array_module(x)
        row_bytes = a_row_bytes(plan, 2 * k) + 32 * k  # + transposed copy and result
        b_bytes = 2 * k * b_row_bytes(plan)
        max_columns = max(1, (workspace - b_bytes) // row_bytes)  # workspace: this call's bytes
        u_t = xp.asarray(u, dtype=xp.complex128).T
        b_exps, _ = row_exponents(embedded_b_rows(u_t, slice(0, k), 2), plan.bits)
        whole_gate = None  # the gate's one column tile, made on first use
        for ls, rs in iter_column_chunks(n_left, n_right, max_columns):
            block = x[ls, :, rs]
            lc, _, rc = block.shape
            rows = xp.empty((lc * rc, k), xp.complex128)
            transpose_into(block, rows.reshape(lc, rc, k))
            a_rows = rows.view(xp.float64)
            a_exps, finite = row_exponents(a_rows, plan.bits)
            if not bool(finite):
                raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
            row_step, col_step = tile_sizes(lc * rc, k, 2, plan, workspace)
            if col_step < k:
                tiles = b_tiles(plan, u_t, b_exps, 2, col_step)
            else:
                whole_gate = whole_gate or list(b_tiles(plan, u_t, b_exps, 2, col_step))
                tiles = whole_gate
            product = xp.empty((lc * rc, k), xp.complex128)
            multiply(a_rows, a_exps, tiles, 2, product.view(xp.float64), row_step)
            transpose_into(product.reshape(lc, rc, k), out[ls, :, rs])

    def _scan(self, a_rows, b, width: int, workspace: int):
        """Row exponents of A (m,) and of the embedded rows of B (width * n,), int32, after
        checking that both are finite, and the statistics the rule gathers (SplitRule.gather).
        On the GPU, rules that gather span summaries take them from span_scan.scan_gpu, which
        reads each operand in place; elsewhere tile by tile, B's tiles as embedded rows."""
        xp = array_module(a_rows)
        m, n = a_rows.shape[0], b.shape[1]
        bits = bits_per_slice(width * b.shape[0])
        if is_gpu_array(a_rows) and self.split_rule.gathers_spans:  # one kernel per operand, the same results
            a_exps, b_exps, a_spans, b_spans = scan_gpu(a_rows, b, width, bits)
            return a_exps, b_exps, self.split_rule.statistics_of_spans(a_spans, b_spans)
        row_step, col_step = tile_sizes(m, n, width, self.split_rule.largest_plan(width * b.shape[0]), workspace)
        a_exps, b_exps = xp.empty(m, xp.int32), xp.empty(width * n, xp.int32)
        statistics = self.split_rule.new_statistics(xp)
        for rows in steps(m, row_step):
            a_exps[rows], finite = row_exponents(a_rows[rows], bits)
            _require_finite(finite, "a")
            self.split_rule.gather(statistics, "a", a_rows[rows], a_exps[rows], bits)
        for cols in steps(n, col_step):
            b_tile = embedded_b_rows(b, cols, width)
            exps, finite = row_exponents(b_tile, bits)
            _require_finite(finite, "b")
            b_exps[width * cols.start:width * cols.stop] = exps
            # every other embedded row holds all of a column's parts
            self.split_rule.gather(statistics, "b", b_tile[::width], xp.ascontiguousarray(exps[::width]), bits)
        return a_exps, b_exps, statistics

    def _finish(self, out, choice: Choice, kernel: str, gate: bool = False):
        plan = choice.plan
        if plan is None:
            info = dict(FALLBACK_INFO)
            self.fallbacks += 1
        else:
            a_name, b_name = ("splits_state", "splits_gate") if gate else ("splits_a", "splits_b")
            info = {"scheme": OZAKI1, "splits": plan.n_slices, a_name: plan.a_slices, b_name: plan.b_slices,
                    "top": plan.top, "pairs": plan.pairs, "rule": self.rule, "kernel": kernel, **choice.info}
            self.split_counts[plan.n_slices] += 1
            self.pair_count += plan.pairs
        self.last_call_info = info
        return out


def _attempt(choose, argument):
    """(choose(argument), None), or (None, the BackendError it raised)."""
    try:
        return choose(argument), None
    except BackendError as error:
        return None, error


def _require_finite(finite, name: str) -> None:
    if not bool(finite):
        raise BackendError(f"matmul operand {name} contains NaN or Inf; the INT8 Ozaki scheme needs finite input")


def _check_operands(a, b):
    """(a, b, is_complex): a C-contiguous, both complex128 when either is complex, else float64."""
    xp, a, b = check_matmul_operands(a, b)
    is_complex = "c" in (a.dtype.kind, b.dtype.kind)
    dtype = xp.complex128 if is_complex else xp.float64
    return xp.ascontiguousarray(a, dtype=dtype), b.astype(dtype, copy=False), is_complex


def _fused_view(x, out) -> bool:
    """The fused kernel takes C-contiguous views whose stride R is a power of two."""
    n_right = x.shape[2]
    return x.flags.c_contiguous and out.flags.c_contiguous and not n_right & (n_right - 1)


def _native_apply(u, x, out) -> None:
    xp = array_module(x)
    out[...] = xp.matmul(xp.asarray(u, dtype=xp.complex128), x)
