"""int8-auto's scan of a matmul's operands on the GPU in one kernel per operand
(kernels/span_scan.cu): what backend._scan gathers with the fp64 rule, read straight from A's
float64 row view and from B's (k, n) layout, each operand read twice (no transposed or embedded
copy of B, no temporaries per element).

The row exponents equal split.row_exponents' and every integer field of the SpanSummary equals
spans.summarize_spans' on the same rows (the rows of A; for B one row per column, its real and
imaginary parts); the norm differs from numpy's only by the order of its sum of squares.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..arrays import cupy_module
from ..errors import BackendError
from ..kernel_launch import include_options, kernel_path, persistent_blocks
from .spans import CENTER_BINS, SPAN_BINS, SPAN_OFFSET, SpanSummary

_THREADS = 256
_BLOCKS_PER_SM = 4  # 64 registers a thread (ptxas, sm_90), 36 KB of shared memory a block
_ROWS_PER_WARP_TILE = 32  # rows of a tile whose lanes go across rows (span_scan.cu)
_COUNTER_LIMIT = 2**32 - 1  # the kernel's shared counters are 32-bit: a tile must count fewer values
_FLOAT64_BYTES = 8

# Where the kernel's totals (uint64 words) keep each field; passed to the compiler with -D.
DEVIATIONS_AT = 0
ALPHAS_AT = DEVIATIONS_AT + SPAN_BINS
CENTERS_AT = ALPHAS_AT + CENTER_BINS
NORM_CENTERS_AT = CENTERS_AT + CENTER_BINS
LIVE_ROWS_AT = NORM_CENTERS_AT + CENTER_BINS
NONZEROS_AT = LIVE_ROWS_AT + 1
MOST_NONZEROS_AT = NONZEROS_AT + 1
NORM_BITS_AT = MOST_NONZEROS_AT + 1
TOTAL_WORDS = NORM_BITS_AT + 1


def compile_definitions() -> tuple:
    """The -D options of kernels/span_scan.cu: spans.SPAN_OFFSET, the totals' layout and the
    launch shape (the kernel's __launch_bounds__)."""
    values = {"MAX_THREADS": _THREADS, "BLOCKS_PER_SM": _BLOCKS_PER_SM, "SPAN_OFFSET": SPAN_OFFSET, "DEVIATIONS_AT": DEVIATIONS_AT, "ALPHAS_AT": ALPHAS_AT,
              "CENTERS_AT": CENTERS_AT, "NORM_CENTERS_AT": NORM_CENTERS_AT, "LIVE_ROWS_AT": LIVE_ROWS_AT,
              "NONZEROS_AT": NONZEROS_AT, "MOST_NONZEROS_AT": MOST_NONZEROS_AT, "NORM_BITS_AT": NORM_BITS_AT}
    return tuple(f"-D{name}={value}" for name, value in values.items())


@dataclass(frozen=True)
class RowLayout:
    """An operand as the kernel reads it: `rows` rows of `elements` elements of `width` adjacent
    float64 values; value c of element i of row r at float64 offset r * row_step +
    i * element_step + c from the first element."""

    rows: int
    elements: int
    width: int
    row_step: int
    element_step: int

    @property
    def lanes_across_rows(self) -> bool:
        """Whether a warp's lanes take 32 neighbouring rows (rows closer together in memory than
        elements, as B's columns in row-major layout) rather than the elements of one row; only
        where a tile of 32 rows counts fewer values than the kernel's 32-bit counters hold."""
        return (abs(self.row_step) < abs(self.element_step)
                and _ROWS_PER_WARP_TILE * self.elements * self.width <= _COUNTER_LIMIT)


def a_layout(a_rows) -> RowLayout:
    """A's rows: a_rows (m, w) float64 (the float64 view of a complex A), one value an element."""
    row_step, element_step = _float64_steps(a_rows)
    return RowLayout(a_rows.shape[0], a_rows.shape[1], 1, row_step, element_step)


def b_layout(b, width: int) -> RowLayout:
    """B's columns as rows: b (k, n) float64 (width 1) or complex128 (width 2, its parts adjacent)."""
    element_step, row_step = _float64_steps(b)
    return RowLayout(b.shape[1], b.shape[0], width, row_step, element_step)


def _float64_steps(x) -> tuple:
    """x's strides in float64 units."""
    if any(stride % _FLOAT64_BYTES for stride in x.strides):
        raise BackendError(f"the scan needs strides in whole float64 values, got {x.strides}")
    return tuple(stride // _FLOAT64_BYTES for stride in x.strides)


def summary_from_totals(totals: np.ndarray, inner: int) -> SpanSummary:
    """The SpanSummary of the kernel's totals (TOTAL_WORDS,) uint64, rows of `inner` values."""
    totals = np.asarray(totals, np.uint64)
    live_rows, nonzeros = int(totals[LIVE_ROWS_AT]), int(totals[NONZEROS_AT])
    return SpanSummary(
        inner=int(inner), rows=live_rows, zeros=live_rows * int(inner) - nonzeros,
        deviations=totals[DEVIATIONS_AT:DEVIATIONS_AT + SPAN_BINS].astype(np.int64),
        centers=totals[CENTERS_AT:CENTERS_AT + CENTER_BINS].astype(np.int64),
        norm_centers=totals[NORM_CENTERS_AT:NORM_CENTERS_AT + CENTER_BINS].astype(np.int64),
        norm=float(totals[NORM_BITS_AT:NORM_BITS_AT + 1].view(np.float64)[0]),
        nnz=int(totals[MOST_NONZEROS_AT]),
        alphas=totals[ALPHAS_AT:ALPHAS_AT + CENTER_BINS].astype(np.int64))


def scan_gpu(a_rows, b, width: int, bits: int):
    """(a_exps, b_exps, a_summary, b_summary) of backend._scan under the fp64 rule, on the GPU.

    a_rows: (m, width * k) float64 cupy (A's float64 row view); b: (k, n) cupy, complex128 when
    width is 2, else float64, any strides; bits: the digit width (split.bits_per_slice of
    width * k). a_exps (m,) and b_exps (width * n,) are int32 cupy arrays (B's embedded rows 2j
    and 2j + 1 both take column j's exponent); the summaries are spans.summarize_spans' of A's
    rows and of B's columns (its real and imaginary parts). BackendError, with _scan's
    messages, when either operand holds NaN or Inf (A's first).
    """
    if width not in (1, 2):
        raise BackendError(f"the scan reads float64 (width 1) or complex128 (width 2) elements, not width {width}")
    cp = cupy_module()
    m, (k, n) = a_rows.shape[0], b.shape
    if a_rows.shape[1] != width * k:
        raise BackendError(f"a_rows has {a_rows.shape[1]} columns, not width * k = {width * k}")
    a_exps, b_exps = cp.empty(m, cp.int32), cp.empty(width * n, cp.int32)
    totals = cp.zeros((2, TOTAL_WORDS), cp.uint64)
    nonfinite = cp.zeros(2, cp.int32)
    for side, (operand, layout, exps) in enumerate(((a_rows, a_layout(a_rows), a_exps),
                                                    (b, b_layout(b, width), b_exps))):
        _launch(operand, layout, bits, exps, nonfinite[side:], totals[side])
    flags, host_totals = nonfinite.get(), totals.get()
    for name, flag in zip("ab", flags):
        if flag:
            raise BackendError(f"matmul operand {name} contains NaN or Inf; the INT8 Ozaki scheme needs finite input")
    inner = width * k
    return a_exps, b_exps, summary_from_totals(host_totals[0], inner), summary_from_totals(host_totals[1], inner)


def _launch(operand, layout: RowLayout, bits: int, exps, nonfinite, totals) -> None:
    cp = cupy_module()
    if layout.rows == 0:
        return
    tile_rows = _ROWS_PER_WARP_TILE if layout.lanes_across_rows else _THREADS // 32
    blocks = persistent_blocks(-(-layout.rows // tile_rows), _BLOCKS_PER_SM)
    _kernel()((blocks,), (_THREADS,), (
        operand, cp.int64(layout.rows), cp.int64(layout.elements), cp.int32(layout.width), cp.int64(layout.row_step),
        cp.int64(layout.element_step), cp.int32(layout.lanes_across_rows), cp.int32(bits), exps, nonfinite, totals))


@functools.lru_cache(maxsize=None)
def _kernel():
    path = kernel_path("span_scan.cu")
    module = cupy_module().RawModule(code=path.read_text(), options=include_options(path) + compile_definitions())
    return module.get_function("span_scan")
