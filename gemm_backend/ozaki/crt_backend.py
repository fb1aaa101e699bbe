"""Complex GEMM by the Ozaki-II (Chinese remainder) scheme on INT8: backends int8-crt-<m>.

The rows of A and the columns of B are scaled by powers of two and truncated to integers small
enough that the exact integer product C' fits below M/2, M the product of m pairwise coprime
moduli <= 256; C' is computed modulo each modulus from INT8 x INT8 -> INT32 GEMMs of the int8
residues (one per modulus for real inputs, three with Karatsuba for complex ones), and rebuilt
exactly by the Chinese remainder theorem, then rounded once and scaled back. crt.py holds the
arithmetic, its exactness argument and the error bound (crt.error_bound, crt.moduli_for_target);
this module tiles the product and runs it on numpy or on the GPU. Cost: 3m INT8 GEMMs of the
operands' own size per complex GEMM, linear in m (Ozaki-I needs O(s^2)).

Large products run in tiles (rows of A x columns of B) that keep the working memory within
workspace_bytes; the columns of B are the outer loop, so their residues are made once per tile.
A simulator's gate (apply_gate) makes the gate's residues once and takes the state's columns in
chunks of one tile, each reusing the same buffers.
CPU: the INT8 products are float64 GEMMs of the residues, exact because k 128^2 < 2^53; the
reconstruction is crt.CrtAccumulator. GPU (kernels/ozaki_crt.cu): one kernel writes the residues
of every modulus and part side by side in each row, one cublas_ex.gemm_tn_blocks call
takes all 3m products of a tile, one kernel reconstructs and writes the output once. Both paths
compute the same exact integers and round them once, so they agree bit for bit.
"""
import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..arrays import array_module, cupy_module, is_gpu_array, iter_column_chunks
from ..base import GemmBackend, check_matmul_operands
from .crt import MAX_INNER, CrtAccumulator, CrtPlan, crt_plan, residues, row_scales
from .crt_products import reduced_products, reduces_on_chip
from ..cublas_ex import K_ALIGNMENT, gemm_tn_blocks
from ..errors import BackendError
from ..kernel_launch import (THREADS, include_options, kernel_path, launch_per_column_group, launch_per_element,
                             launch_per_row, per_row_int32, row_stride, shared_limit)
from ..registry import moduli_counts
from ..target_layout import (MAX_KERNEL_TARGETS, check_layout, contiguous_targets, has_view_layout, pack_targets,
                             view_layout)
from ..transpose import transpose_into
from ..workspace import even_step

SCHEME = "ozaki2"
# float64 arrays of a row's size that the CPU path holds at once while scaling and reducing a
# row (magnitudes, ceilings, the scaled value and its three limbs, a residue, temporaries).
_CPU_INPUT_TEMPORARIES = 10
# float64 values per output and part held by the CPU reconstruction besides its limbs
# (fraction, the combined product, w, the rounding's digits, window, shifts and temporaries).
_CPU_OUTPUT_TEMPORARIES = 24
_SOURCE = kernel_path("ozaki_crt.cu")
GATE_RESIDUE_BLOCKS_PER_SM = 4  # crt_gate_residues' __launch_bounds__ (ozaki_crt.cu)
RECONSTRUCT_BLOCKS_PER_SM = 4  # the one-output reconstructions' __launch_bounds__ (ozaki_crt.cu)
QUAD_RECONSTRUCT_BLOCKS_PER_SM = 2  # crt_gate_reconstruct_residues_quads' __launch_bounds__ (ozaki_crt.cu)
QUAD_STAGES = 2  # its products staged in shared memory: the next four outputs' while it reconstructs these
MMA_RECONSTRUCT_BLOCKS_PER_SM = 3  # crt_gate_reconstruct_gaussian_mma's __launch_bounds__ (ozaki_crt.cu)
MMA_STAGES = 4  # its ring of a warp's tiles of products in shared memory (ozaki_crt.cu)
MMA_TILE = 32  # its outputs a warp takes at once
MMA_MAX_LIMBS = 4  # its limbs: 16 bytes of each E_l (M < 2^128)


@dataclass(frozen=True)
class CrtLayout:
    """Shapes of one product: the plan, inner size k, complex or real.

    parts: INT8 products per modulus (3 with Karatsuba, 1 real); outputs: float64 values per
    output entry (2 or 1); width: float64 values per input element; padded: k rounded up to
    K_ALIGNMENT, the length of each residue block in the GPU layout.
    """

    plan: CrtPlan
    k: int
    is_complex: bool

    @property
    def parts(self) -> int:
        return self.plan.parts(self.is_complex)

    @property
    def inverse_table(self) -> str:
        """The CrtPlan table that multiplies the first combination of a modulus's products in the
        reconstruction: re_inverse (y_l / 2, of P+ + P-) for Gaussian moduli's two products, else
        inverse (y_l, of P1 or P1 - P2)."""
        return "re_inverse" if self.parts == 2 else "inverse"

    @property
    def outputs(self) -> int:
        return 2 if self.is_complex else 1

    @property
    def width(self) -> int:
        return 2 if self.is_complex else 1

    @property
    def padded(self) -> int:
        return -(-self.k // K_ALIGNMENT) * K_ALIGNMENT

    @property
    def blocks(self) -> int:
        """Residue blocks per row: one per modulus and part."""
        return self.plan.count * self.parts

    def a_row_bytes(self, cols: int, on_gpu: bool, products_reduced: bool = False) -> int:
        """Working bytes per row of A in a tile of `cols` columns of B. GPU: residues and int32
        products (int8 where products_reduced: every product of the tiles reduced on the chip).
        CPU: residues, float64 temporaries, one modulus's float64 residues, products and the
        reconstruction."""
        if on_gpu:
            return self.blocks * self.padded + (1 if products_reduced else 4) * self.blocks * cols + 4
        per_output = self.parts + self.outputs * (self.plan.limbs + _CPU_OUTPUT_TEMPORARIES)
        return (self.blocks + 8 * self.parts + 8 * _CPU_INPUT_TEMPORARIES * self.width) * self.k \
            + 8 * per_output * cols + 4

    def b_col_bytes(self, on_gpu: bool) -> int:
        """Working bytes per column of B: its float64 row of B^T and its residues (the CPU also
        converts one modulus's to float64 and needs the temporaries of making them)."""
        if on_gpu:
            return self.blocks * self.padded + 8 * self.width * self.k + 4
        return (self.blocks + 8 * self.parts + 8 * (_CPU_INPUT_TEMPORARIES + 1) * self.width) * self.k + 4


class OzakiCrtBackend(GemmBackend):
    """Complex (or real) GEMM by the Ozaki-II scheme with a fixed number of moduli (module docstring).

    Arguments:
        moduli: the number m of moduli, an int in CRT_MODULI (8..20); the moduli are the m
            largest pairwise coprime integers <= 256. crt.error_bound(m, k) bounds the error,
            crt.moduli_for_target(target, k) gives the m for a target.
        gaussian: take the m largest Gaussian moduli instead (m in GAUSSIAN_MODULI, 8..22;
            int8-gcrt-<m>): two INT8 products per modulus for complex inputs, not three
            (crt.py's step 2), with about 7 bits per modulus instead of 8.
        workspace_bytes: working memory a call may use beyond its inputs and output; None (the
            default): three quarters of the device memory free at call time on the GPU (at
            least 64 MiB), 1 GiB on the CPU (workspace.Workspace). A small workspace
            cuts small tiles, which run far slower (BENCHMARKS.md).

    matmul(a, b): (r, k) @ (k, c) with k <= crt.MAX_INNER (131071); complex128 result when either
    input is complex, float64 when both are real. last_call_info: {"scheme": "ozaki2",
    "moduli": m}.
    """

    name = "int8-crt"
    OPTIONS = ("workspace_bytes",)
    AUTOMATIC_WORKSPACE = True

    def __init__(self, moduli, gaussian: bool = False, workspace_bytes: Optional[int] = None):
        super().__init__(workspace_bytes)
        span = moduli_counts(gaussian)
        if isinstance(moduli, bool) or not isinstance(moduli, (int, np.integer)) or int(moduli) not in span:
            raise BackendError(f"moduli must be an integer in {span.start}..{span.stop - 1}, got {moduli!r}")
        self.plan = crt_plan(int(moduli), bool(gaussian))
        if gaussian:
            self.name = "int8-gcrt"
        self.options = {"moduli": self.plan.count,
                        "workspace_bytes": self.workspace.report()}
        self.last_call_info = self._info()

    # -- interface ----------------------------------------------------------------------
    def matmul(self, a, b):
        xp, a, b, layout = self._operands(a, b)
        (n_rows, k), n_cols = a.shape, b.shape[1]
        self._count(n_rows, k, n_cols)
        self.last_call_info = self._info()
        if n_rows == 0 or n_cols == 0 or k == 0:
            return xp.zeros((n_rows, n_cols), a.dtype)
        a_rows = a.view(xp.float64) if layout.is_complex else a
        out = xp.empty((n_rows, n_cols), a.dtype)
        out_rows = out.view(xp.float64) if layout.is_complex else out
        # measured after `out`: an automatic workspace is what is left (the bits do not depend on tiling)
        self.workspace.run(is_gpu_array(a), lambda workspace: self._multiply_tiles(a_rows, b, out_rows, layout, workspace))
        return out

    def _multiply_tiles(self, a_rows, b, out_rows, layout: CrtLayout, workspace: int) -> None:
        """out_rows = the product of a_rows with b, tile by tile within `workspace` bytes."""
        on_gpu = is_gpu_array(a_rows)
        row_step, col_step = self._tile_sizes(a_rows.shape[0], b.shape[1], layout, on_gpu, workspace)
        a_scales = self._scales(a_rows, self.plan.a_bits, "a", row_step)
        tiles = _TILES[on_gpu](layout, row_step, col_step)
        for cols in _steps(b.shape[1], col_step):
            b_tile = self._b_tile(tiles, b, cols, col_step)
            _multiply_rows(tiles, a_rows, a_scales, b_tile, out_rows[:, b_tile.embedded], row_step)

    def apply_batched(self, u, x, out):
        """out[l] = u @ x[l] for every l (GemmBackend.apply_batched; out may be x), B = u^T:
        apply_gate, x's NaN or Inf raised at its end."""
        self.apply_gate(u, x, out)

    def apply_gate(self, u, x, out, nonfinite=None) -> None:
        """apply_batched, with x's NaN or Inf flagged on the GPU in nonfinite, a device int32
        (1,) the caller reads later (int8-auto: at the end of its run); None: read here, after
        the last chunk. The gate's own NaN or Inf is read once per call, when its residues are
        made (one wait for the device per gate, before its chunks are queued).

        The columns of x go in chunks of at most chunk_columns(k, workspace) (one GPU tile each,
        with all of B's columns, on both devices: the calls, and so the statistics, agree). The
        gate's residues are made once for all chunks; a chunk's columns are read and written in
        place where R = 1 (rows of x and out); else on the GPU, where out is x, by apply_at's
        kernels, which address them where they sit, and otherwise gathered into one buffer
        (transpose_into), which then takes their results; the GPU's residues and products
        reuse one scratch for every chunk, so the memory held stays the workspace whatever the
        chunk count. u's NaN or Inf raises BackendError before any work; x's on the CPU at its
        chunk, on the GPU after the last chunk (or when the caller reads nonfinite), its chunks
        already written."""
        n_left, k, n_right = x.shape
        xp, on_gpu = array_module(x), is_gpu_array(x)
        self._check_inner(k)
        if n_right > 1 and addresses_targets(k, on_gpu) and _in_place_view(x, out):
            # the columns where they sit (apply_at's kernels): no gathered copy there and back; in
            # the chunks below, so that the calls counted are the CPU's
            self._apply_in_chunks(u, *view_layout(x), nonfinite, lambda most: _view_chunks(n_left, n_right, most))
            return
        layout = CrtLayout(self.plan, k, True)
        self.last_call_info = self._info()
        if x.size == 0:
            return
        b = xp.asarray(u, dtype=xp.complex128).T  # a view: _b_tile copies its rows (u's) once
        # R = 1 with rows of K contiguous amplitudes: the columns are rows of x and of out already
        direct = n_right == 1 and x[:, :, 0].flags.c_contiguous and out[:, :, 0].flags.c_contiguous
        # the buffers come before any write to out, so an automatic workspace may redo them alone
        chunk_rows, tile_rows, gate, gathered, tiles = self.workspace.run(
            on_gpu, lambda workspace: self._gate_buffers(b, layout, xp, on_gpu, workspace, n_left * n_right, direct))
        flag = (xp.zeros(1, xp.int32) if nonfinite is None else nonfinite) if on_gpu else None
        for ls, rs in iter_column_chunks(n_left, n_right, even_step(n_left * n_right, chunk_rows)):
            block = x[ls, :, rs]
            lc, _, rc = block.shape
            self._count(lc * rc, k, k)
            if direct:
                self._multiply_chunk(block[:, :, 0].view(xp.float64), gate, tiles, tile_rows, flag,
                                     out[ls, :, 0].view(xp.float64))
                continue
            rows = gathered[:lc * rc]
            transpose_into(block, rows.reshape(lc, rc, k))
            self._multiply_chunk(rows.view(xp.float64), gate, tiles, tile_rows, flag, rows.view(xp.float64))
            transpose_into(rows.reshape(lc, rc, k), out[ls, :, rs])
        if on_gpu and nonfinite is None:
            _check_finite(flag[0] == 0, "a")

    def takes_scattered(self, k: int, on_gpu: bool) -> bool:
        """On the GPU the kernels address the columns of any targets (apply_at, addresses_targets)."""
        return addresses_targets(k, on_gpu)

    def apply_scattered(self, u, state, targets) -> bool:
        """apply_at on the flat state in place (GemmBackend.apply_scattered), x's NaN or Inf raised
        at its end; False where takes_scattered does not hold."""
        k = u.shape[0]
        if not self.takes_scattered(k, is_gpu_array(state)):
            return False
        self.apply_at(u, state, targets)
        return True

    def apply_at(self, u, state, targets, nonfinite=None) -> None:
        """Every column of the flat cupy state at `targets` (target_layout.py; gate index bit i at
        state bit targets[i], K <= 2^10) replaced by u (K, K) times it, in place, by kernels that
        read and write the columns where they sit (kernels/ozaki_crt.cu, crt_gate_residues and
        crt_gate_reconstruct): no copy of the state. Columns in chunks of consecutive indices,
        sized as apply_gate's; the same bits as apply_gate on the gathered columns; NaN or Inf as
        apply_gate (nonfinite)."""
        n_columns = state.size // max(u.shape[0], 1)
        self._apply_in_chunks(u, state, targets, nonfinite,
                              lambda most: _consecutive_chunks(n_columns, even_step(n_columns, most)))

    def _apply_in_chunks(self, u, state, targets, nonfinite, chunks) -> None:
        """apply_at, its columns in the chunks (first column, count) that chunks(most columns per
        chunk) yields, which must cover every column once."""
        cp = cupy_module()
        k = u.shape[0]
        self._check_inner(k)
        targets = check_layout(state, k, targets)
        self.last_call_info = self._info()
        n_columns = state.size // k
        if not n_columns:
            return
        layout = CrtLayout(self.plan, k, True)
        b = cp.asarray(u, dtype=cp.complex128).T
        chunk_rows, _, gate, _, tiles = self.workspace.run(
            True, lambda workspace: self._gate_buffers(b, layout, cp, True, workspace, n_columns, True))
        columns = _StateColumns(state, targets)
        flag = cp.zeros(1, cp.int32) if nonfinite is None else nonfinite
        for first, count in chunks(chunk_rows):
            self._count(count, k, k)
            a_residues, a_scales = tiles.column_residues(columns, first, count, self.plan.a_bits, flag)
            tiles.multiply_into_columns(a_residues, a_scales, gate, columns, first)
        if nonfinite is None:
            _check_finite(flag[0] == 0, "a")

    def _multiply_chunk(self, a_rows, gate: "_BTile", tiles, tile_rows: int, nonfinite, out_rows) -> None:
        """out_rows (n, 2k) float64 := the products of a chunk's columns a_rows (n, 2k) float64
        with the gate, `tile_rows` rows at a time (on the GPU one tile: tile_rows >= n; out_rows may
        be a_rows: a tile's residues are made before its results are written). NaN or Inf in
        a_rows: BackendError on the CPU, nonfinite set on the GPU."""
        if is_gpu_array(a_rows) and _rows_are_gate_columns(a_rows) and _rows_are_gate_columns(out_rows):
            # the rows are the columns of a gate on the bits 0 .. d-1, so the gate kernels take
            # them, with the same bits: each amplitude read once (crt_gate_residues) where the row
            # kernels read a row three times, and four outputs a thread (crt_gate_reconstruct)
            targets = contiguous_targets(a_rows.shape[1] // 2, 1)
            columns = _StateColumns(a_rows, targets)
            a_residues, a_scales = tiles.column_residues(columns, 0, a_rows.shape[0], self.plan.a_bits, nonfinite)
            tiles.multiply_into_columns(a_residues, a_scales, gate, _StateColumns(out_rows, targets), 0)
            return
        if is_gpu_array(a_rows):
            a_scales = _gpu_row_scales(a_rows, self.plan.a_bits, nonfinite)[0]
        else:
            a_scales, finite = row_scales(a_rows, self.plan.a_bits)
            _check_finite(finite, "a")  # before numpy makes residues of NaN
        _multiply_rows(tiles, a_rows, a_scales, gate, out_rows, tile_rows)

    def _gate_buffers(self, b, layout: CrtLayout, xp, on_gpu: bool, workspace: int, columns: int,
                      direct: bool) -> tuple:
        """(chunk_rows, tile_rows, gate, gathered, tiles) of apply_gate on `columns` state columns
        within `workspace` bytes: the chunk and tile sizes (buffers no larger than the columns
        need), B as one tile, the buffer of a chunk's columns (None when direct: no copies) and
        the tile arithmetic with its scratch."""
        k = layout.k
        chunk_rows = min(self.chunk_columns(k, workspace), columns)
        # the CPU's float64 residues and products cost more per row: it takes a chunk in several tiles
        cpu_rows = (workspace - k * layout.b_col_bytes(False)) // layout.a_row_bytes(k, False)
        tile_rows = chunk_rows if on_gpu else max(1, min(chunk_rows, cpu_rows))
        tiles = _TILES[on_gpu](layout, tile_rows, k)
        gathered = None if direct else xp.empty((chunk_rows, k), xp.complex128)
        return chunk_rows, tile_rows, self._b_tile(tiles, b, slice(0, k), k), gathered, tiles

    def chunk_columns(self, k: int, workspace: int) -> int:
        """State columns per chunk of apply_batched for gates of inner size k within `workspace`
        bytes, by the GPU's costs on both devices (_gate_costs). Raises BackendError when not even
        one column fits."""
        held, per_column = self._gate_costs(k)
        columns = (workspace - held) // per_column
        if columns < 1:
            raise BackendError(
                f"workspace_bytes={workspace} is too small for {self.name} on gates of size {k}: the gate and "
                f"one column of the state need {held + per_column} bytes; raise workspace_bytes")
        return columns

    def gate_workspace(self, k: int, columns: int) -> int:
        """The workspace_bytes whose apply_batched chunks hold `columns` state columns of gates of
        inner size k."""
        held, per_column = self._gate_costs(k)
        return held + columns * per_column

    def _gate_costs(self, k: int) -> tuple:
        """(bytes held for a whole apply_batched call, bytes per state column of a chunk) on the
        GPU: the gate's residues and float64 rows; a column's gathered values, residues and
        products with every column of the gate (B is one tile: its residues are held anyway),
        int8 where this GPU reduces them on the chip."""
        layout = CrtLayout(self.plan, k, True)
        per_column = layout.a_row_bytes(k, True, reduces_on_chip(layout.padded)) + 8 * layout.width * k
        return k * layout.b_col_bytes(True), per_column

    def _b_tile(self, tiles, b, cols: slice, col_step: int) -> "_BTile":
        """The tile of B's columns `cols`: their residues and scales, and where its products go in
        a row of float64 output."""
        b_rows = _transposed_rows(b, cols)
        scales = self._scales(b_rows, self.plan.b_bits, "b", col_step)
        embedded = slice(tiles.layout.width * cols.start, tiles.layout.width * cols.stop)
        return _BTile(embedded, tiles.residues(b_rows, scales), scales)

    # -- steps --------------------------------------------------------------------------
    def _info(self) -> dict:
        return {"scheme": SCHEME, "moduli": self.plan.count, "gaussian": self.plan.gaussian}

    def _operands(self, a, b):
        """(xp, a, b, layout): a C-contiguous, both complex128 when either is complex, else float64."""
        xp, a, b = check_matmul_operands(a, b)
        is_complex = "c" in (a.dtype.kind, b.dtype.kind)
        dtype = xp.complex128 if is_complex else xp.float64
        k = a.shape[1]
        self._check_inner(k)
        return xp, xp.ascontiguousarray(a, dtype=dtype), b.astype(dtype, copy=False), CrtLayout(self.plan, k, is_complex)

    def _check_inner(self, k: int) -> None:
        if k > MAX_INNER:
            raise BackendError(
                f"{self.name}: inner size {k} exceeds {MAX_INNER}, the most an INT32 sum of INT8 residue "
                "products holds exactly; use an int8-<s> or the cublas backend")

    def _scales(self, rows, bits: int, operand: str, step: int):
        """Scale exponents (r,) int32 of rows (r, w) float64, computed `step` rows at a time;
        raises BackendError naming the operand when it holds NaN or Inf."""
        xp = array_module(rows)
        scales = xp.empty(rows.shape[0], xp.int32)
        finite = True
        for part in _steps(rows.shape[0], step):
            scales[part], part_finite = _ROW_SCALES[is_gpu_array(rows)](rows[part], bits)
            finite = finite & part_finite
        _check_finite(finite, operand)
        return scales

    def _tile_sizes(self, n_rows, n_cols: int, layout: CrtLayout, on_gpu: bool, workspace: int = None) -> tuple:
        """(rows of A, columns of B) per tile on the GPU or the CPU within `workspace` bytes
        (default workspace_bytes): B's columns take at most half of it, rows of A (n_rows of
        them; None for unbounded) the rest; both as even as the counts allow, in multiples of
        TILE_ALIGNMENT where the workspace holds that many (the INT8 GEMMs of unaligned tiles
        run slower)."""
        workspace = self.workspace_bytes if workspace is None else workspace
        per_column = layout.b_col_bytes(on_gpu)
        col_step = even_step(n_cols, max(1, workspace // 2 // per_column))
        per_row = layout.a_row_bytes(col_step, on_gpu)
        row_step = (workspace - col_step * per_column) // per_row
        if row_step < 1:
            raise BackendError(
                f"workspace_bytes={workspace} is too small for {self.name} at inner size {layout.k}: "
                f"one row and one column need {per_row + per_column} bytes; raise workspace_bytes")
        if n_rows is not None:
            row_step = even_step(n_rows, row_step)
        return row_step, col_step


def _multiply_rows(tiles, a_rows, a_scales, b_tile: "_BTile", out, row_step: int) -> None:
    """out (r, w * n_cols) float64 := the products of a_rows (r, w k) with b_tile's columns,
    row_step rows at a time (out may be a_rows: a tile's residues are made before its results
    are written)."""
    for rows in _steps(a_rows.shape[0], row_step):
        tiles.multiply(tiles.a_residues(a_rows[rows], a_scales[rows]), a_scales[rows], b_tile, out[rows])


def addresses_targets(k: int, on_gpu: bool) -> bool:
    """Whether apply_at takes gates of size k on this device: on the GPU, up to K = 2^10 (the
    targets travel packed in one kernel argument)."""
    return on_gpu and k <= 1 << MAX_KERNEL_TARGETS


def _consecutive_chunks(n_columns: int, step: int):
    """(first, count) of the chunks of `step` consecutive columns (the last may be shorter)."""
    return ((first, min(step, n_columns - first)) for first in range(0, n_columns, step))


def _view_chunks(n_left: int, n_right: int, most: int):
    """apply_gate's chunks of an (L, K, R) view's columns (iter_column_chunks, at most `most`
    columns each) as (first, count) of consecutive column indices l R + r."""
    return ((ls.start * n_right + rs.start, (ls.stop - ls.start) * (rs.stop - rs.start))
            for ls, rs in iter_column_chunks(n_left, n_right, even_step(n_left * n_right, most)))


def _in_place_view(x, out) -> bool:
    """Whether out is x, an (L, K, R) view that view_layout takes."""
    return out.data.ptr == x.data.ptr and out.strides == x.strides and has_view_layout(x)


def _rows_are_gate_columns(a_rows) -> bool:
    """Whether the rows (n, 2k) float64 (complex values) lie back to back with k = 2^d <= 2^10, so
    that crt_gate_residues reads them as the columns of a gate on the state bits 0 .. d-1."""
    k = a_rows.shape[1] // 2
    return (k > 0 and (k & (k - 1)) == 0 and addresses_targets(k, True) and a_rows.strides == (16 * k, 8)
            and a_rows.data.ptr % 16 == 0)


def _check_finite(finite, operand: str) -> None:
    """BackendError naming the operand unless finite (a bool, or a 0-d array read here)."""
    if not bool(finite):
        raise BackendError(f"matmul operand {operand} contains NaN or Inf; the INT8 Ozaki-II scheme needs finite input")


def _transposed_rows(b, cols: slice):
    """Columns `cols` of b (k, n) as C-contiguous float64 rows (n_cols, w): B^T, complex entries
    as interleaved (re, im) like the float64 view of A's rows."""
    xp = array_module(b)
    rows = xp.ascontiguousarray(b[:, cols].T)
    return rows.view(xp.float64) if rows.dtype.kind == "c" else rows


def _steps(total: int, step: int):
    for start in range(0, total, step):
        yield slice(start, min(total, start + step))


@dataclass(frozen=True)
class _BTile:
    """Columns of B made ready: embedded, the float64 columns of an output row its products fill;
    residues and scales as the device's tile arithmetic made them."""

    embedded: slice
    residues: object
    scales: object


# -- CPU ------------------------------------------------------------------------------------------
class _CpuTiles:
    """The CPU's tile arithmetic: crt.residues, float64 GEMMs of the residues (exact: integers
    below k 128^2 < 2^53), crt.CrtAccumulator. Arrays are made per tile (numpy's allocator), so
    the tile size (rows x cols, _GpuTiles' scratch) is not needed."""

    def __init__(self, layout: CrtLayout, rows: int, cols: int):
        self.layout = layout

    def residues(self, rows, scales):
        return residues(rows, scales, self.layout.plan, self.layout.is_complex)

    a_residues = residues

    def multiply(self, a_residues, a_scales, b_tile: _BTile, out) -> None:
        """out (r, w * n_cols) float64 view = the product of the rows with b_tile's columns."""
        layout = self.layout
        accumulator = CrtAccumulator(layout.plan, layout.outputs, (a_scales.size, b_tile.scales.size))
        for index in range(layout.plan.count):
            b_side = b_tile.residues[index].astype(np.float64).transpose(0, 2, 1)
            accumulator.add(index, np.matmul(a_residues[index].astype(np.float64), b_side))
        result = accumulator.result(a_scales, b_tile.scales)
        for part in range(layout.outputs):
            out[:, part::layout.outputs] = result[part]


# -- GPU ------------------------------------------------------------------------------------------
class _GpuTiles:
    """The same on the GPU: residues of every modulus and part side by side in each row (one
    kernel), all products of a tile from gemm_tn_blocks (INT8), one reconstruction kernel. A's
    residues and the products go to one scratch of `rows` x `cols`, allocated here and reused by
    every tile: a call holds the same memory whatever its tile count."""

    def __init__(self, layout: CrtLayout, rows: int, cols: int):
        cp = cupy_module()
        self.layout = layout
        self.tables = _device_tables(layout.plan.count, layout.plan.gaussian, cp.cuda.Device().id)
        self._residue_scratch = cp.empty(rows * layout.blocks * layout.padded, cp.int8)
        # int8 products where this GPU reduces them on the chip, else int32 (gemm_tn_blocks)
        self._reduces = reduces_on_chip(layout.padded)
        self._product_scratch = cp.empty(layout.blocks * rows * cols * (1 if self._reduces else 4), cp.int8)

    def residues(self, rows, scales, out=None):
        """(r, blocks * padded) int8 (_gpu_residues), in `out` when given."""
        return _gpu_residues(self.layout, rows, scales, self.tables, out)

    def a_residues(self, rows, scales):
        width = self.layout.blocks * self.layout.padded
        return self.residues(rows, scales, self._residue_scratch[:rows.shape[0] * width].reshape(-1, width))

    def multiply(self, a_residues, a_scales, b_tile: _BTile, out) -> None:
        products = self._products(a_residues, b_tile.residues)
        _gpu_reconstruct(self.layout, products, a_scales, b_tile.scales, out, self.tables)

    def column_residues(self, columns: "_StateColumns", first: int, count: int, bits: int, nonfinite) -> tuple:
        """(residues (count, blocks * padded) int8 in the scratch, row scales (count,) int32) of
        the state columns first .. first + count - 1 (crt_gate_residues: _gpu_row_scales and
        _gpu_residues of the columns as rows); their NaN or Inf set in nonfinite."""
        cp = cupy_module()
        layout = self.layout
        width = layout.blocks * layout.padded
        residues = self._residue_scratch[:count * width].reshape(count, width)
        scales = cp.empty(count, cp.int32)
        launch_per_column_group(_module().get_function("crt_gate_residues"), count, GATE_RESIDUE_BLOCKS_PER_SM, (
            columns.state, cp.int64(first), cp.int64(count), cp.int32(layout.k), *columns.arguments(),
            cp.int32(layout.padded), cp.int32(layout.parts), cp.int32(bits), scales, nonfinite,
            cp.int32(layout.plan.count), self.tables["p"], self.tables["root"], residues, cp.int64(width)))
        return residues, scales

    def multiply_into_columns(self, a_residues, a_scales, b_tile: _BTile, columns: "_StateColumns",
                              first: int) -> None:
        """multiply, its results written to the state columns first .. (crt_gate_reconstruct).
        Where bit 0 is no target, neighbouring columns lie side by side: the products are made as
        (blocks, k, columns), so that the kernel's consecutive threads take consecutive columns."""
        cp = cupy_module()
        layout, tables = self.layout, self.tables
        columns_fastest = 0 not in columns.targets
        operands = (b_tile.residues, a_residues) if columns_fastest else (a_residues, b_tile.residues)
        products = self._products(*operands)
        rows = a_scales.size
        name = _reconstruct_kernel("crt_gate_reconstruct", products)
        args = (products, cp.int64(rows), cp.int32(layout.k), cp.int32(layout.parts), cp.int32(layout.plan.count),
                tables["p"], tables[layout.inverse_table], tables["im_inverse"], cp.int32(layout.plan.limbs),
                tables["partial_limbs"], tables["product_limbs"], a_scales, b_tile.scales, columns.state,
                cp.int64(first), *columns.arguments(), cp.int32(columns_fastest))
        variant = gate_reconstruct_variant(rows, layout.k, first, columns_fastest, products.dtype == np.int8,
                                           layout.parts, layout.plan.limbs)
        if variant == "mma":
            _launch_staged(_module().get_function("crt_gate_reconstruct_gaussian_mma"), rows * layout.k, args,
                           MMA_RECONSTRUCT_BLOCKS_PER_SM,
                           MMA_STAGES * mma_stage_words(layout.plan.count) * (THREADS // 32) * 4)
        elif variant == "quads":
            words = layout.plan.count * layout.parts
            _launch_staged(_module().get_function(name + "_quads"), rows * layout.k // 4, args,
                           QUAD_RECONSTRUCT_BLOCKS_PER_SM, QUAD_STAGES * words * THREADS * 4)
        else:
            # persistent: each block fills its tables (GateOffsets, the moduli's) once
            launch_per_element(_module().get_function(name), rows * layout.k, args, RECONSTRUCT_BLOCKS_PER_SM)

    def _products(self, row_residues, col_residues):
        """(blocks, rows, cols) in the scratch, rows and cols those of the two operands' residues
        (rows, blocks * padded): every INT8 product of the tile, as int8 residues modulo the
        block's p where the GPU reduces them on the chip (crt_products.reduced_products), else
        int32 (gemm_tn_blocks)."""
        cp = cupy_module()
        layout = self.layout
        shape = (layout.blocks, row_residues.shape[0], col_residues.shape[0])
        size = shape[0] * shape[1] * shape[2]
        if self._reduces:
            products = self._product_scratch[:size].reshape(shape)
            reduced_products(row_residues, col_residues, layout.padded, layout.blocks, layout.parts,
                             self.tables["p"], products)
        else:
            products = self._product_scratch.view(cp.int32)[:size].reshape(shape)
            gemm_tn_blocks(row_residues, col_residues, layout.padded, layout.blocks, out=products)
        return products


@dataclass(frozen=True)
class _StateColumns:
    """A gate's columns where they sit: the flat complex128 state, read and written in place, and
    the targets in gate order (target_layout.py)."""

    state: object
    targets: tuple

    def arguments(self) -> tuple:
        """The kernels' (targets packed, the same ascending, count) arguments."""
        cp = cupy_module()
        return (cp.uint64(pack_targets(self.targets)), cp.uint64(pack_targets(sorted(self.targets))),
                cp.int32(len(self.targets)))


_TILES = {False: _CpuTiles, True: _GpuTiles}


def _gpu_row_scales(rows, bits: int, nonfinite=None):
    """crt.row_scales by the crt_row_scales kernel: (scales, finite) on the device (nonfinite:
    kernel_launch.per_row_int32's)."""
    return per_row_int32(_module().get_function("crt_row_scales"), rows, bits, nonfinite)


_ROW_SCALES = {False: row_scales, True: _gpu_row_scales}


def _gpu_residues(layout: CrtLayout, rows, scales, tables, out=None):
    """(r, blocks * padded) int8: block l * parts + g of row i holds part g's residues modulo p_l
    (crt.residues[l, g, i]), zero-padded to `padded` columns, as gemm_tn_blocks reads them; in
    `out` (C-contiguous, that shape) when given."""
    cp = cupy_module()
    n_rows = rows.shape[0]
    if out is None:
        out = cp.empty((n_rows, layout.blocks * layout.padded), cp.int8)
    if n_rows:
        launch_per_row(_module().get_function("crt_residues"), n_rows, (
            rows, cp.int64(n_rows), cp.int32(layout.k), cp.int32(layout.padded), cp.int64(row_stride(rows)),
            cp.int32(layout.parts), scales, cp.int32(layout.plan.count), tables["p"], tables["root"], out,
            cp.int64(out.shape[1])))
    return out


def gate_reconstruct_variant(rows: int, k: int, first: int, columns_fastest: bool, reduced: bool, parts: int,
                             limbs: int) -> str:
    """The kernel that reconstructs a chunk of `rows` columns from column `first` (products (blocks,
    rows, k), or (blocks, k, rows) where columns_fastest): "mma" (crt_gate_reconstruct_gaussian_mma,
    MMA_TILE outputs a warp, their limb sums on the INT8 tensor cores) for int8 residues on Gaussian
    moduli (parts 2) in at most MMA_MAX_LIMBS limbs, "quads" (crt_gate_reconstruct_residues_quads,
    four outputs a thread) for other int8 residues, else "one" (one output a thread); each needs the
    outputs a warp or thread takes to divide the products' fastest size and, columns_fastest,
    `first`."""
    fastest = rows if columns_fastest else k

    def divides(outputs: int) -> bool:
        return fastest % outputs == 0 and (not columns_fastest or first % outputs == 0)

    if reduced and parts == 2 and limbs <= MMA_MAX_LIMBS and divides(MMA_TILE):
        return "mma"
    return "quads" if reduced and divides(4) else "one"


def mma_stage_words(n_moduli: int) -> int:
    """32-bit words of a warp's stage of crt_gate_reconstruct_gaussian_mma, as the kernel takes them
    (ozaki_crt.cu's mma_stage_words): 8 for each of the 32 planes of every k-step, 2 n_moduli planes."""
    return 256 * -(-2 * n_moduli // 32)


def _launch_staged(kernel, threads: int, args: tuple, most_blocks_per_sm: int, shared_bytes: int) -> None:
    """A reconstruction kernel that stages its products in shared_bytes of dynamic shared memory a
    block, one thread per element of `threads`, on a persistent grid: most_blocks_per_sm blocks
    per multiprocessor (its registers'), fewer where their shared memory (static and dynamic) would
    not fit."""
    kernel.max_dynamic_shared_size_bytes = shared_bytes
    blocks_per_sm = most_blocks_per_sm
    while blocks_per_sm > 1 and shared_bytes + kernel.shared_size_bytes > shared_limit(blocks_per_sm):
        blocks_per_sm -= 1
    launch_per_element(kernel, threads, args, blocks_per_sm, shared_bytes)


def _reconstruct_kernel(name: str, products) -> str:
    """The reconstruction kernel `name` for products as _GpuTiles._products made them: int32, or
    int8 residues (name + "_residues")."""
    return name + "_residues" if products.dtype == np.int8 else name


def _gpu_reconstruct(layout: CrtLayout, products, a_scales, b_scales, out, tables) -> None:
    """The crt_reconstruct kernel: out (a view of float64 rows) gets the rounded products of the
    tile from its INT8 products (blocks, rows, cols), int32 or int8 residues (_reconstruct_kernel),
    and the scales of its rows and columns."""
    cp = cupy_module()
    rows, cols = a_scales.size, b_scales.size
    launch_per_element(_module().get_function(_reconstruct_kernel("crt_reconstruct", products)), rows * cols, (
        products, cp.int64(rows), cp.int32(cols), cp.int32(layout.parts), cp.int32(layout.plan.count),
        tables["p"], tables[layout.inverse_table], tables["im_inverse"],
        cp.int32(layout.plan.limbs), tables["partial_limbs"],
        tables["product_limbs"], a_scales, b_scales, out, cp.int64(row_stride(out))))


@functools.lru_cache(maxsize=None)
def _device_tables(n_moduli: int, gaussian: bool, device_id: int) -> dict:
    """The plan's float64 tables on the current device (cached per device)."""
    cp = cupy_module()
    plan = crt_plan(n_moduli, gaussian)
    names = ("p", "inverse", "re_inverse", "im_inverse", "root", "partial_limbs", "product_limbs")
    return {name: cp.asarray(np.ascontiguousarray(getattr(plan, name))) for name in names}


@functools.lru_cache(maxsize=None)
def _module():
    return cupy_module().RawModule(code=_SOURCE.read_text(), options=include_options(_SOURCE))
