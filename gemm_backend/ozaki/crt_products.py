"""Ozaki-II's INT8 products reduced modulo p on the chip (kernels/crt_products.cu, sm_90a).

Each product leaves the GPU's multiprocessors as one int8 residue instead of an int32, so the
reconstruction reads a quarter of the bytes (crt_reconstruct_residues, crt_gate_reconstruct_residues)
and no int32 products cross device memory. It needs Hopper's warpgroup products and bulk tensor
copies (compute capability 9.0); elsewhere the products come from cuBLAS (cublas_ex.gemm_tn_blocks).
"""
import functools

from ..arrays import cupy_module, multiprocessor_count
from ..errors import BackendError
from ..kernel_launch import arch_kernel
from ..tensor_maps import int8_tensor_map
from .gate import WGMMA_ARCH, wgmma_here

# crt_products.cu's tiles and ring: 128 rows of A x 256 of B per output tile, 128 bytes of k per
# stage, four stages; two consumer warpgroups and a producer warpgroup.
TILE_M, TILE_N, TILE_K, STAGES = 128, 256, 128, 4
THREADS = 384
SHARED_BYTES = 1024 + STAGES * ((TILE_M + TILE_N) * TILE_K + 16)
COLUMN_ALIGNMENT = 16  # the residues leave in 16-byte stores along a row
MAX_PADDED = 1 << 17  # int32 sums of padded products of two int8 stay exact


def reduces_on_chip(cols: int, padded: int) -> bool:
    """Whether reduced_products takes products with `cols` columns of inner size `padded` on this GPU."""
    return cols % COLUMN_ALIGNMENT == 0 and padded <= MAX_PADDED and wgmma_here()


def reduced_products(a_residues, b_residues, padded: int, blocks: int, parts: int, moduli, out) -> None:
    """out[l] (rows, cols) int8 = (a_l b_l^T) mods p_(l // parts), symmetric in [-(p-1)/2, (p-1)/2],
    for l < blocks, where a_l = a_residues[:, l * padded:(l + 1) * padded] and b_l likewise:
    a_residues (rows, >= blocks * padded) and b_residues (cols, ...) int8 cupy arrays with unit
    column stride and row strides in multiples of 16 bytes; padded a multiple of 16, at most
    MAX_PADDED; moduli: the plan's p, float64 on the device; out: C-contiguous (blocks, rows, cols)
    int8, cols a multiple of 16 (reduces_on_chip)."""
    cp = cupy_module()
    rows, cols = a_residues.shape[0], b_residues.shape[0]
    if out.shape != (blocks, rows, cols) or out.dtype != cp.int8 or not out.flags.c_contiguous:
        raise BackendError(f"reduced_products: out must be C-contiguous int8 {(blocks, rows, cols)}")
    if not reduces_on_chip(cols, padded) or padded % 16:
        raise BackendError(f"reduced_products takes {cols} columns of inner size {padded} only on Hopper, for "
                           f"columns and inner sizes in multiples of 16, inner sizes up to {MAX_PADDED}; "
                           "use cublas_ex.gemm_tn_blocks")
    if rows == 0:
        return
    a_map = _residue_map(a_residues, padded, blocks, TILE_M)
    b_map = _residue_map(b_residues, padded, blocks, TILE_N)
    tiles = -(-rows // TILE_M) * -(-cols // TILE_N) * blocks
    _kernel()((min(tiles, multiprocessor_count()),), (THREADS,), (
        a_map, cp.int64(rows), b_map, cp.int32(cols), cp.int32(padded), cp.int32(blocks), cp.int32(parts), moduli,
        out), shared_mem=SHARED_BYTES)


def _residue_map(residues, padded: int, blocks: int, box_rows: int):
    """The tensor map of residues (rows, blocks * padded ...) seen as (padded, blocks, rows)."""
    row_bytes = residues.strides[0]
    if residues.ndim != 2 or residues.strides[1] != 1 or row_bytes % 16:
        raise BackendError("reduced_products: residues need unit column stride and rows in multiples of 16 bytes")
    return int8_tensor_map(residues, (padded, blocks, residues.shape[0]), (padded, row_bytes), (TILE_K, 1, box_rows))


@functools.lru_cache(maxsize=None)
def _kernel():
    kernel = arch_kernel("crt_products.cu", "crt_products", (), WGMMA_ARCH)
    kernel.max_dynamic_shared_size_bytes = SHARED_BYTES
    return kernel
