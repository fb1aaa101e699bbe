"""Complex GEMM by the INT8 Ozaki scheme: backends int8-<s> (s = 3..18) and int8-auto.

C = A B is computed from exact INT8 x INT8 -> INT32 products of the slices of A and B
(ozaki_split.py; design brief section 4):

    C ~= diag(2^e) [ sum over p + q <= s + 1 of 2^(-(p+q) b) A_p B_q ] diag(2^f).

Complex inputs use the real embedding, with the real and imaginary parts of a row of A (a
column of B) sharing one scale: the rows of A are the float64 views [re, im, re, im, ...] of its
complex rows (no copy), and column j of B becomes two rows of an embedded B^T,
[Re b_j, -Im b_j] and [Im b_j, Re b_j] interleaved the same way, so one real product of inner
size 2k gives Re and Im of C already interleaved as complex128. Chosen over four real products
because Re = ArBr - AiBi and Im = ArBi + AiBr are then formed exactly in int32 (no cancellation
in FP64), the FP64 accumulation touches 2mn values per group instead of 4mn, and the skinny
state-vector GEMMs (k = n = 2^d) get twice the inner and outer size per INT8 GEMM. The cost:
the bits per slice follow from the embedded inner size 2k (b = 7 up to k = 2^16).

Products with equal p + q = t form one INT8 GEMM over slices concatenated along k,
[A_p .. A_p'] @ [B_{t-p}; ..; B_{t-p'}], with as many terms as keep every int32 sum below 2^31
(ProductGroup). FP64 accumulation runs group by group in one fixed order (smallest scale
first), touching values only by int32 -> float64 conversion and multiplication by powers of two
(both exact), additions, and a final ldexp by the row and column exponents, so CPU and GPU
results agree bit for bit. On the CPU the INT8 GEMMs are float64 GEMMs of the integer slices:
every partial sum is an integer below 2^31, hence exact, whatever the BLAS does.

Large products run in tiles (rows of A x columns of B) that keep the working memory within
workspace_bytes. On the GPU the slices of a tile are written by one kernel straight into the
concatenated layout each group's GEMM reads (cublas_ex.gemm_tn takes C-contiguous operands), and
one kernel does the FP64 accumulation and writes the output once.
"""
import collections
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .arrays import array_module, cupy_module, is_gpu_array, to_host
from .base import DEFAULT_WORKSPACE_BYTES, GemmBackend, check_matmul_operands
from .cublas_ex import K_ALIGNMENT, gemm_tn
from .errors import BackendError
from .ozaki_split import (
    INT32_MAX,
    SlicePlacements,
    add_needed_bits_histogram,
    bits_per_slice,
    choose_splits,
    new_histogram,
    row_exponents,
    split_rows,
    split_rows_gpu,
)
from .registry import INT8_SPLITS

AUTO = "auto"
FALLBACK_INFO = {"splits": None, "fallback": "zgemm"}
# Bytes per element of the CPU path's temporaries while splitting or scanning a row
# (frexp outputs, the int64 significand and shifts, the digit before narrowing to int8).
_CPU_SPLIT_TEMPORARY_BYTES = 64
_THREADS = 256
_ACCUMULATE_SOURCE = Path(__file__).with_name("kernels") / "ozaki_accumulate.cu"


# -- which INT8 products, in which order ----------------------------------------------------
@dataclass(frozen=True)
class ProductGroup:
    """Slice products A_p B_{t-p} for p = first..last: one INT8 GEMM of the slices concatenated
    along k, scaled by 2^(-t b) with t = diagonal."""

    diagonal: int
    first: int
    last: int

    @property
    def length(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class ProductPlan:
    """The products of an s-slice Ozaki GEMM of inner size `inner` (the embedded size, 2k for
    complex), groups listed in accumulation order."""

    n_slices: int
    bits: int
    inner: int
    groups: tuple

    @property
    def pairs(self) -> int:
        """Slice pairs (p, q) computed: s(s+1)/2."""
        return sum(group.length for group in self.groups)

    @property
    def weights(self) -> np.ndarray:
        return np.array([2.0 ** (-group.diagonal * self.bits) for group in self.groups])


@functools.lru_cache(maxsize=None)
def plan_products(n_slices: int, inner: int) -> ProductPlan:
    """Groups of the diagonals t = s+1 down to 2 (smallest scale first, so the FP64 sum loses
    least), each split into runs of p short enough that no int32 sum can overflow:
    terms * inner * (2^b - 1)^2 <= 2^31 - 1."""
    bits = bits_per_slice(inner)
    max_terms = INT32_MAX // (max(inner, 1) * ((1 << bits) - 1) ** 2)
    groups = []
    for diagonal in range(n_slices + 1, 1, -1):
        for first in range(1, diagonal, max_terms):
            groups.append(ProductGroup(diagonal, first, min(diagonal - 1, first + max_terms - 1)))
    return ProductPlan(n_slices, bits, inner, tuple(groups))


# -- working memory -------------------------------------------------------------------------
def _padded(inner: int) -> int:
    return -(-inner // K_ALIGNMENT) * K_ALIGNMENT


def a_row_bytes(plan: ProductPlan, b_rows: int) -> int:
    """Working bytes per row of A in a tile with b_rows embedded rows of B: the larger of the
    GPU's (slices in group layout, int32 group products) and the CPU's (int8 and float64
    slices, split temporaries, float64 product and accumulator)."""
    gpu = plan.pairs * _padded(plan.inner) + 4 * len(plan.groups) * b_rows
    cpu = (9 * plan.n_slices + _CPU_SPLIT_TEMPORARY_BYTES) * plan.inner + 24 * b_rows
    return max(gpu, cpu) + 4


def b_row_bytes(plan: ProductPlan) -> int:
    """Working bytes per embedded row of B: the float64 row, its slices, split temporaries."""
    slices = max(plan.pairs * _padded(plan.inner), 9 * plan.n_slices * plan.inner)
    return slices + (8 + _CPU_SPLIT_TEMPORARY_BYTES) * plan.inner + 4


# -- the backend ----------------------------------------------------------------------------
class OzakiBackend(GemmBackend):
    """Complex (or real) GEMM emulated with INT8 x INT8 -> INT32 products (module docstring).

    Arguments:
        splits: number of slices s per operand, an int in 3..18, or "auto" to choose per GEMM
            the smallest s whose average mantissa loss is at most rho (design brief 4.6); when
            no s <= 18 qualifies that GEMM falls back to native complex128 matmul.
        rho: auto only: the average loss threshold in bits per nonzero element (default 0.0:
            no bit lost). Giving it with a fixed s raises BackendError.
        workspace_bytes: working memory a call may use beyond its inputs and output.

    matmul(a, b): (m, k) @ (k, n); complex128 result when either input is complex, float64
    when both are real. last_call_info: {"splits": s}, or {"splits": None, "fallback": "zgemm"}
    for a fallback; over the chunks of apply_batched the largest s, with "fallback": "zgemm"
    added when any chunk fell back. statistics() adds "splits_histogram" {s: GEMMs} and
    "fallbacks" (GEMMs done natively), one count per matmul call (per chunk in apply_batched).
    """

    name = "int8"
    description = "INT8 Ozaki scheme (fixed or automatic number of splits)"
    OPTIONS = ("rho", "workspace_bytes")

    def __init__(self, splits, rho=None, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
        super().__init__(workspace_bytes)
        self.fixed_splits = _check_splits(splits)
        self.rho = _check_rho(rho, self.fixed_splits)
        self.options = {"splits": splits, "workspace_bytes": self.workspace_bytes}
        if self.fixed_splits is None:
            self.options["rho"] = self.rho
        self.reset_statistics()

    # -- interface ----------------------------------------------------------------------
    def matmul(self, a, b):
        a, b, is_complex = _check_operands(a, b)
        xp = array_module(a)
        (m, k), n = a.shape, b.shape[1]
        self._count(m, k, n)
        width = 2 if is_complex else 1
        if m == 0 or n == 0 or k == 0:  # no element that could lose bits: the smallest s
            return self._finish(xp.zeros((m, n), a.dtype), self.fixed_splits or INT8_SPLITS.start)
        a_rows = a.view(xp.float64) if is_complex else a
        scan_plan = self._largest_plan(width * k)
        a_exps, b_exps, histogram = self._scan(a_rows, b, width, scan_plan)
        splits = self.fixed_splits or choose_splits(to_host(histogram), scan_plan.bits, self.rho, INT8_SPLITS)
        if splits is None:
            return self._finish(xp.matmul(a, b), None)
        out = xp.empty((m, n), a.dtype)
        self._multiply(plan_products(splits, width * k), a_rows, a_exps, b, b_exps, width,
                       out.view(xp.float64) if is_complex else out)
        return self._finish(out, splits)

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """Workspace per row of A for a complex (m, k) @ (k, n), B's slices included: the
        workspace over the rows one tile can hold beside them (for the largest s this backend
        may use), so that a chunk of workspace_bytes // (this + copies) rows is one tile."""
        row_step, _ = self._tile_sizes(None, n, 2, self._largest_plan(2 * k))
        return -(-self.workspace_bytes // row_step)

    def reset_statistics(self) -> None:
        super().reset_statistics()
        self.split_counts = collections.Counter()
        self.fallbacks = 0

    def statistics(self) -> dict:
        stats = super().statistics()
        stats["splits_histogram"] = dict(sorted(self.split_counts.items()))
        stats["fallbacks"] = self.fallbacks
        return stats

    # -- steps --------------------------------------------------------------------------
    def _largest_plan(self, inner: int) -> ProductPlan:
        """The plan of the largest s a call may use: memory is planned for it before auto chooses."""
        return plan_products(self.fixed_splits or INT8_SPLITS[-1], inner)

    def _multiply(self, plan, a_rows, a_exps, b, b_exps, width: int, out_rows) -> None:
        """out_rows (m, width * n) float64 view of the output = the Ozaki product, tile by tile:
        B's columns outside (their slices made once per tile), rows of A inside."""
        m, n = a_rows.shape[0], b.shape[1]
        row_step, col_step = self._tile_sizes(m, n, width, plan)
        tile_products = _TILE_PRODUCTS[is_gpu_array(a_rows)]
        for cols in _steps(n, col_step):
            embedded = slice(width * cols.start, width * cols.stop)
            b_tile = tile_products(plan, _b_rows(b, cols, width), b_exps[embedded])
            for rows in _steps(m, row_step):
                b_tile.multiply(a_rows[rows], a_exps[rows], out_rows[rows, embedded])

    def _scan(self, a_rows, b, width: int, plan: ProductPlan):
        """Row exponents of A (m,) and of the embedded rows of B (width * n,), int32, after
        checking that both are finite; for auto, also the needed-bits histogram of both."""
        xp = array_module(a_rows)
        m, n = a_rows.shape[0], b.shape[1]
        row_step, col_step = self._tile_sizes(m, n, width, plan)
        histogram = new_histogram(xp) if self.fixed_splits is None else None
        a_exps, b_exps = xp.empty(m, xp.int32), xp.empty(width * n, xp.int32)
        a_finite = b_finite = True
        for rows in _steps(m, row_step):
            a_exps[rows], finite = row_exponents(a_rows[rows])
            a_finite = a_finite & finite
            if histogram is not None:
                add_needed_bits_histogram(a_rows[rows], a_exps[rows], histogram)
        for cols in _steps(n, col_step):
            b_tile = _b_rows(b, cols, width)
            exps, finite = row_exponents(b_tile)
            b_exps[width * cols.start:width * cols.stop] = exps
            b_finite = b_finite & finite
            if histogram is not None:  # every other embedded row holds all of a column's parts
                add_needed_bits_histogram(b_tile[::width], xp.ascontiguousarray(exps[::width]), histogram)
        for name, finite in (("a", a_finite), ("b", b_finite)):
            if not bool(finite):
                raise BackendError(
                    f"matmul operand {name} contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
        return a_exps, b_exps, histogram

    def _tile_sizes(self, m, n: int, width: int, plan: ProductPlan) -> tuple:
        """(rows of A, columns of B) per tile, as even as the counts allow: B's columns take at
        most half the workspace, rows of A (m of them; None for unbounded) the rest."""
        per_column = width * b_row_bytes(plan)
        col_step = _even_step(n, max(1, self.workspace_bytes // 2 // per_column))
        per_row = a_row_bytes(plan, width * col_step)
        row_step = (self.workspace_bytes - col_step * per_column) // per_row
        if row_step < 1:
            raise BackendError(
                f"workspace_bytes={self.workspace_bytes} is too small for inner size {plan.inner // width}: "
                f"one row and one column need {per_row + per_column} bytes; raise workspace_bytes"
            )
        return (row_step if m is None else _even_step(m, row_step)), col_step

    def _finish(self, out, splits):
        if splits is None:
            info = dict(FALLBACK_INFO)
            self.fallbacks += 1
        else:
            info = {"splits": splits}
            self.split_counts[splits] += 1
        self.last_call_info = info  # GemmBackend.apply_batched merges the chunks' infos
        return out


def _check_splits(splits):
    """The fixed s, or None for "auto"."""
    if splits == AUTO:
        return None
    if isinstance(splits, (int, np.integer)) and not isinstance(splits, bool) and int(splits) in INT8_SPLITS:
        return int(splits)
    raise BackendError(
        f"splits must be an integer in {INT8_SPLITS.start}..{INT8_SPLITS.stop - 1} or 'auto', got {splits!r}"
    )


def _check_rho(rho, fixed_splits):
    if rho is None:
        return 0.0 if fixed_splits is None else None
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

def _b_rows(b, cols: slice, width: int):
    """The embedded rows of B^T for columns `cols` of b (k, n): (width * n_cols, width * k)
    float64, C-contiguous. Complex: rows [Re b_j, -Im b_j] and [Im b_j, Re b_j], interleaved
    element by element like the float64 view of a complex row of A."""
    xp = array_module(b)
    block = b[:, cols]
    if width == 1:
        return xp.ascontiguousarray(block.T)
    n_cols, k = block.shape[1], block.shape[0]
    rows = xp.empty((n_cols, 2, k, 2), xp.float64)
    real, imag = block.real.T, block.imag.T
    rows[:, 0, :, 0] = real
    xp.negative(imag, out=rows[:, 0, :, 1])
    rows[:, 1, :, 0] = imag
    rows[:, 1, :, 1] = real
    return rows.reshape(2 * n_cols, 2 * k)


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
    GEMMs of the integer slices, exact because every partial sum is an integer below 2^31."""

    def __init__(self, plan: ProductPlan, b_rows, b_exps):
        self.plan = plan
        self.b_exps = b_exps
        # Stacked B_s, ..., B_1 so that a group's B_{t-first} .. B_{t-last} are adjacent.
        slices = split_rows(b_rows, b_exps, plan.n_slices, plan.bits, np.float64)
        self.b_slices = np.ascontiguousarray(slices[:, ::-1, :])

    def multiply(self, a_rows, a_exps, out) -> None:
        """out (rows, b_rows) = the scaled Ozaki product of a_rows (rows, inner) float64."""
        plan = self.plan
        a_slices = split_rows(a_rows, a_exps, plan.n_slices, plan.bits, np.float64)
        acc = np.zeros(out.shape)
        for group, weight in zip(plan.groups, plan.weights):
            a_side = a_slices[:, group.first - 1:group.last, :].reshape(a_slices.shape[0], -1)
            b_start = plan.n_slices - (group.diagonal - group.first)
            b_side = self.b_slices[:, b_start:b_start + group.length, :].reshape(self.b_slices.shape[0], -1)
            acc += (a_side @ b_side.T) * weight
        out[...] = np.ldexp(acc, a_exps[:, None] + self.b_exps[None, :])


class _GpuTileProducts:
    """The same on the GPU: slices written by one kernel into each group's concatenated
    layout, one cublas_ex.gemm_tn INT8 GEMM per group, one accumulation kernel."""

    def __init__(self, plan: ProductPlan, b_rows, b_exps):
        cp = cupy_module()
        self.plan = plan
        self.b_exps = b_exps
        self.padded = _padded(plan.inner)
        self.spans = _group_spans(plan, self.padded)
        self.weights = cp.asarray(plan.weights)
        self.a_placements = _placements(plan, self.padded, self.spans, lambda group, p: p)
        self.a_device_placements = self.a_placements.on_device()
        b_placements = _placements(plan, self.padded, self.spans, lambda group, p: group.diagonal - p)
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
        count = n_rows * n_cols
        max_blocks = cp.cuda.Device().attributes["MultiProcessorCount"] * 32
        blocks = max(1, min(max_blocks, -(-count // _THREADS)))
        _accumulate_kernel()((blocks,), (_THREADS,), (
            products, cp.int32(len(self.spans)), self.weights, cp.int64(n_rows), cp.int32(n_cols),
            a_exps, self.b_exps, out, cp.int64(out.strides[0] // out.itemsize)))


_TILE_PRODUCTS = {False: _CpuTileProducts, True: _GpuTileProducts}


def _group_spans(plan: ProductPlan, padded: int) -> list:
    """(start, width) of each group's operand, in bytes per row, groups side by side."""
    spans, start = [], 0
    for group in plan.groups:
        spans.append((start, group.length * padded))
        start += group.length * padded
    return spans


def _placements(plan: ProductPlan, padded: int, spans: list, slice_at) -> SlicePlacements:
    """Where each slice goes in the group layout; slice_at(group, p) is the slice standing at
    A-slice p's position (p itself for A, t - p for B)."""
    entries = []
    for group, (start, width) in zip(plan.groups, spans):
        for position, p in enumerate(range(group.first, group.last + 1)):
            entries.append((slice_at(group, p), start, width, position * padded))
    return SlicePlacements(entries, plan.n_slices)


@functools.lru_cache(maxsize=None)
def _accumulate_kernel():
    module = cupy_module().RawModule(code=_ACCUMULATE_SOURCE.read_text(), options=("--std=c++17",))
    return module.get_function("ozaki_accumulate")
