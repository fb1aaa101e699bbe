"""The tile path of the Ozaki-I scheme: working memory per row, tile sizes, and the products of
one tile (digits, INT8 GEMMs per product group, accumulation) on numpy or on the GPU.

C ~= diag(2^e) [ sum over kept pairs (p, q) of 2^(-(p+q) b) A_p B_q ] diag(2^f), in the order
plan.py specifies, so that the CPU (float64 GEMMs of integer digits, exact below 2^31) and the
GPU (cuBLAS INT8 GEMMs, one accumulation kernel) give the same bits.
"""
import functools
from pathlib import Path

import numpy as np

from ..arrays import array_module, cupy_module, is_gpu_array
from ..cublas_ex import K_ALIGNMENT, gemm_tn
from ..errors import BackendError
from ..kernel_launch import launch_per_element
from ..workspace import even_step
from .gate import embedded_gate_rows
from .plan import ProductPlan, accumulate
from .split import SlicePlacements, split_rows, split_rows_gpu

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


def tile_sizes(m, n: int, width: int, plan: ProductPlan, workspace: int) -> tuple:
    """(rows of A, columns of B) per tile, as even as the counts allow (workspace.even_step:
    aligned where the workspace holds an aligned side): B's columns (n of them, width embedded
    rows each) take at most half of `workspace` bytes, rows of A (m of them; None for
    unbounded) the rest."""
    per_column = width * b_row_bytes(plan)
    col_step = even_step(n, max(1, workspace // 2 // per_column))
    per_row = a_row_bytes(plan, width * col_step)
    row_step = (workspace - col_step * per_column) // per_row
    if row_step < 1:
        raise BackendError(
            f"workspace_bytes={workspace} is too small for inner size {plan.inner // width}: "
            f"one row and one column need {per_row + per_column} bytes; raise workspace_bytes"
        )
    return (row_step if m is None else even_step(m, row_step)), col_step


def b_tiles(plan: ProductPlan, b, b_exps, width: int, col_step: int):
    """(columns, products) for each tile of col_step columns of b (k, n), made as they are iterated
    (one tile's digits alive at a time); b_exps (width * n,) int32: the exponents of B's embedded
    rows (embedded_b_rows). products: tile_products of the tile."""
    for cols in steps(b.shape[1], col_step):
        embedded = slice(width * cols.start, width * cols.stop)
        yield cols, tile_products(plan, embedded_b_rows(b, cols, width), b_exps[embedded])


def multiply(a_rows, a_exps, tiles, width: int, out_rows, row_step: int) -> None:
    """out_rows (m, width * n) float64 view of the output = the Ozaki product of a_rows (m, width * k)
    float64 (row exponents a_exps (m,) int32) with B given as its column tiles (b_tiles), row_step
    rows of A at a time: B's columns outside, rows of A inside."""
    for cols, products in tiles:
        embedded = slice(width * cols.start, width * cols.stop)
        for rows in steps(a_rows.shape[0], row_step):
            products.multiply(a_rows[rows], a_exps[rows], out_rows[rows, embedded])


def tile_products(plan: ProductPlan, rows, exps):
    """The products of row tiles of A with B's embedded rows `rows` (n_b, inner) float64 and
    their exponents (n_b,) int32, on the device that holds them: an object whose
    multiply(a_rows, a_exps, out) writes out (rows of A, n_b) float64."""
    return (_GpuTileProducts if is_gpu_array(rows) else _CpuTileProducts)(plan, rows, exps)


def embedded_b_rows(b, cols: slice, width: int):
    """The embedded rows of B^T for columns `cols` of b (k, n): (width * n_cols, width * k)
    float64, C-contiguous. Complex: rows [Re b_j, -Im b_j] and [Im b_j, Re b_j], interleaved
    element by element like the float64 view of a complex row of A."""
    xp = array_module(b)
    block = b[:, cols]
    if width == 1:
        return xp.ascontiguousarray(block.T)
    return embedded_gate_rows(block.T)


def steps(total: int, step: int):
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
