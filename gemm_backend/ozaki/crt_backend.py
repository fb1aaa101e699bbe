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

from ..arrays import array_module, cupy_module, is_gpu_array
from ..base import GemmBackend, check_matmul_operands
from .crt import MAX_INNER, CrtAccumulator, CrtPlan, crt_plan, residues, row_scales
from ..cublas_ex import K_ALIGNMENT, gemm_tn_blocks
from ..errors import BackendError
from ..kernel_launch import include_options, kernel_path, launch_per_element, launch_per_row, per_row_int32, row_stride
from ..registry import moduli_counts
from ..workspace import even_step

SCHEME = "ozaki2"
# float64 arrays of a row's size that the CPU path holds at once while scaling and reducing a
# row (magnitudes, ceilings, the scaled value and its three limbs, a residue, temporaries).
_CPU_INPUT_TEMPORARIES = 10
# float64 values per output and part held by the CPU reconstruction besides its limbs
# (fraction, the combined product, w, the rounding's digits, window, shifts and temporaries).
_CPU_OUTPUT_TEMPORARIES = 24
_SOURCE = kernel_path("ozaki_crt.cu")


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

    def a_row_bytes(self, cols: int, on_gpu: bool) -> int:
        """Working bytes per row of A in a tile of `cols` columns of B. GPU: residues and int32
        products. CPU: residues, float64 temporaries, one modulus's float64 residues, products
        and the reconstruction."""
        if on_gpu:
            return self.blocks * self.padded + 4 * self.blocks * cols + 4
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
        tile_products = _TILE_PRODUCTS[on_gpu]
        for cols in _steps(b.shape[1], col_step):
            b_rows = _transposed_rows(b, cols)
            products = tile_products(layout, b_rows, self._scales(b_rows, self.plan.b_bits, "b", col_step))
            embedded = slice(layout.width * cols.start, layout.width * cols.stop)
            for rows in _steps(a_rows.shape[0], row_step):
                products.multiply(a_rows[rows], a_scales[rows], out_rows[rows, embedded])

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """Workspace per row of A for a complex (m, k) @ (k, n), B's share included: the
        workspace over the rows one GPU tile holds, so that a chunk of workspace_bytes //
        (this + copies) rows is one tile on the GPU and several of the CPU's (whose float64
        residues take four times the bytes). The same figure on both devices keeps the calls,
        and so the statistics, equal. With the automatic workspace this is the ratio at the
        nominal workspace_bytes: a chunk sized from workspace.for_call may then take several
        tiles (matmul measures the free memory again)."""
        layout = CrtLayout(self.plan, k, True)
        return -(-self.workspace_bytes // self._tile_sizes(None, n, layout, True)[0])

    # -- steps --------------------------------------------------------------------------
    def _info(self) -> dict:
        return {"scheme": SCHEME, "moduli": self.plan.count, "gaussian": self.plan.gaussian}

    def _operands(self, a, b):
        """(xp, a, b, layout): a C-contiguous, both complex128 when either is complex, else float64."""
        xp, a, b = check_matmul_operands(a, b)
        is_complex = "c" in (a.dtype.kind, b.dtype.kind)
        dtype = xp.complex128 if is_complex else xp.float64
        k = a.shape[1]
        if k > MAX_INNER:
            raise BackendError(
                f"{self.name}: inner size {k} exceeds {MAX_INNER}, the most an INT32 sum of INT8 residue "
                "products holds exactly; use an int8-<s> or the cublas backend")
        return xp, xp.ascontiguousarray(a, dtype=dtype), b.astype(dtype, copy=False), CrtLayout(self.plan, k, is_complex)

    def _scales(self, rows, bits: int, operand: str, step: int):
        """Scale exponents (r,) int32 of rows (r, w) float64, computed `step` rows at a time;
        raises BackendError naming the operand when it holds NaN or Inf."""
        xp = array_module(rows)
        scales = xp.empty(rows.shape[0], xp.int32)
        finite = True
        for part in _steps(rows.shape[0], step):
            scales[part], part_finite = _ROW_SCALES[is_gpu_array(rows)](rows[part], bits)
            finite = finite & part_finite
        if not bool(finite):
            raise BackendError(f"matmul operand {operand} contains NaN or Inf; the INT8 Ozaki-II scheme needs finite input")
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


def _transposed_rows(b, cols: slice):
    """Columns `cols` of b (k, n) as C-contiguous float64 rows (n_cols, w): B^T, complex entries
    as interleaved (re, im) like the float64 view of A's rows."""
    xp = array_module(b)
    rows = xp.ascontiguousarray(b[:, cols].T)
    return rows.view(xp.float64) if rows.dtype.kind == "c" else rows


def _steps(total: int, step: int):
    for start in range(0, total, step):
        yield slice(start, min(total, start + step))


# -- CPU ------------------------------------------------------------------------------------------
class _CpuTileProducts:
    """Products of row tiles of A with one tile of B^T rows: crt.residues, float64 GEMMs of the
    residues (exact: integers below k 128^2 < 2^53), crt.CrtAccumulator."""

    def __init__(self, layout: CrtLayout, b_rows, b_scales):
        self.layout = layout
        self.b_scales = b_scales
        self.b_residues = residues(b_rows, b_scales, layout.plan, layout.is_complex)

    def multiply(self, a_rows, a_scales, out) -> None:
        """out (r, w * n_cols) float64 view = the product of a_rows (r, w k) with the tile."""
        layout = self.layout
        a_residues = residues(a_rows, a_scales, layout.plan, layout.is_complex)
        accumulator = CrtAccumulator(layout.plan, layout.outputs, (a_rows.shape[0], self.b_scales.size))
        for index in range(layout.plan.count):
            b_side = self.b_residues[index].astype(np.float64).transpose(0, 2, 1)
            accumulator.add(index, np.matmul(a_residues[index].astype(np.float64), b_side))
        result = accumulator.result(a_scales, self.b_scales)
        for part in range(layout.outputs):
            out[:, part::layout.outputs] = result[part]


# -- GPU ------------------------------------------------------------------------------------------
class _GpuTileProducts:
    """The same on the GPU: residues of every modulus and part side by side in each row (one
    kernel), all products of a tile from gemm_tn_blocks (INT8), one reconstruction kernel."""

    def __init__(self, layout: CrtLayout, b_rows, b_scales):
        self.layout = layout
        self.b_scales = b_scales
        self.tables = _device_tables(layout.plan.count, layout.plan.gaussian, cupy_module().cuda.Device().id)
        self.b_residues = _gpu_residues(layout, b_rows, b_scales, self.tables)

    def multiply(self, a_rows, a_scales, out) -> None:
        layout, tables = self.layout, self.tables
        a_residues = _gpu_residues(layout, a_rows, a_scales, tables)
        products = gemm_tn_blocks(a_residues, self.b_residues, layout.padded, layout.blocks)
        _gpu_reconstruct(layout, products, a_scales, self.b_scales, out, tables)


_TILE_PRODUCTS = {False: _CpuTileProducts, True: _GpuTileProducts}


def _gpu_row_scales(rows, bits: int):
    """crt.row_scales by the crt_row_scales kernel: (scales, finite) on the device."""
    return per_row_int32(_module().get_function("crt_row_scales"), rows, bits)


_ROW_SCALES = {False: row_scales, True: _gpu_row_scales}


def _gpu_residues(layout: CrtLayout, rows, scales, tables):
    """(r, blocks * padded) int8: block l * parts + g of row i holds part g's residues modulo p_l
    (crt.residues[l, g, i]), zero-padded to `padded` columns, as gemm_tn_blocks reads them."""
    cp = cupy_module()
    n_rows = rows.shape[0]
    out = cp.empty((n_rows, layout.blocks * layout.padded), cp.int8)
    if n_rows:
        launch_per_row(_module().get_function("crt_residues"), n_rows, (
            rows, cp.int64(n_rows), cp.int32(layout.k), cp.int32(layout.padded), cp.int64(row_stride(rows)),
            cp.int32(layout.parts), scales, cp.int32(layout.plan.count), tables["p"], tables["root"], out,
            cp.int64(out.shape[1])))
    return out


def _gpu_reconstruct(layout: CrtLayout, products, a_scales, b_scales, out, tables) -> None:
    """The crt_reconstruct kernel: out (a view of float64 rows) gets the rounded products of the
    tile from its INT8 products (blocks, rows, cols) int32 and the scales of its rows and columns."""
    cp = cupy_module()
    rows, cols = a_scales.size, b_scales.size
    launch_per_element(_module().get_function("crt_reconstruct"), rows * cols, (
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
