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
# crt_products_resident: a block's slice of B (TILE_N rows x at most RESIDENT_PADDED bytes) stays in
# shared memory beside two rings of RESIDENT_STAGES steps of 64 rows of A, one a consumer warpgroup.
RESIDENT_PADDED, RESIDENT_STAGES, RESIDENT_ROWS = 512, 6, 64
RESIDENT_SHARED_BYTES = 1024 + TILE_N * RESIDENT_PADDED + 2 * RESIDENT_STAGES * RESIDENT_ROWS * TILE_K \
    + 8 * (2 + 4 * RESIDENT_STAGES)
MAX_PADDED = 1 << 17  # int32 sums of padded products of two int8 stay exact
MAX_MODULI = 32  # the kernels' table of reductions


def reduces_on_chip(padded: int) -> bool:
    """Whether reduced_products takes products of inner size `padded` on this GPU."""
    return padded <= MAX_PADDED and wgmma_here()


def reduced_products(a_residues, b_residues, padded: int, blocks: int, parts: int, moduli, out) -> None:
    """out[l] (rows, cols) int8 = (a_l b_l^T) mods p_(l // parts), symmetric in [-(p-1)/2, (p-1)/2],
    for l < blocks, where a_l = a_residues[:, l * padded:(l + 1) * padded] and b_l likewise:
    a_residues (rows, >= blocks * padded) and b_residues (cols, ...) int8 cupy arrays with unit
    column stride and row strides in multiples of 16 bytes; padded a multiple of 16, at most
    MAX_PADDED; moduli: the plan's p, float64 on the device; out: C-contiguous (blocks, rows, cols)
    int8 (reduces_on_chip). Where one block's slice of b_residues fits in shared memory (padded <=
    RESIDENT_PADDED) and the slices leave room for two groups of blocks, the slice stays there
    (crt_products_resident); else both operands stream (crt_products)."""
    cp = cupy_module()
    rows, cols = a_residues.shape[0], b_residues.shape[0]
    if out.shape != (blocks, rows, cols) or out.dtype != cp.int8 or not out.flags.c_contiguous:
        raise BackendError(f"reduced_products: out must be C-contiguous int8 {(blocks, rows, cols)}")
    if not reduces_on_chip(padded) or padded % 16:
        raise BackendError(f"reduced_products takes inner size {padded} only on Hopper, for inner sizes in "
                           f"multiples of 16 up to {MAX_PADDED}; use cublas_ex.gemm_tn_blocks")
    if blocks > MAX_MODULI * parts:
        raise BackendError(f"reduced_products takes at most {MAX_MODULI} moduli, got {blocks // parts}")
    if rows == 0:
        return
    b_map = _residue_map(b_residues, padded, blocks, TILE_N)
    col_tiles = -(-cols // TILE_N)
    if padded <= RESIDENT_PADDED and 2 * col_tiles <= multiprocessor_count():
        name, box_rows = "crt_products_resident", RESIDENT_ROWS
        a_tiles = -(-rows // RESIDENT_ROWS) * blocks  # a warpgroup's tiles: two a group at least
        grid = max(1, min(multiprocessor_count() // col_tiles, -(-a_tiles // 2))) * col_tiles
    else:
        name, box_rows = "crt_products", TILE_M
        grid = min(-(-rows // TILE_M) * col_tiles * blocks, multiprocessor_count())
    a_map = _residue_map(a_residues, padded, blocks, box_rows)
    _kernel(name)((grid,), (THREADS,), (a_map, cp.int64(rows), b_map, cp.int32(cols), cp.int32(padded),
                                        cp.int32(blocks), cp.int32(parts), moduli, out), shared_mem=_SHARED_BYTES[name])


def _residue_map(residues, padded: int, blocks: int, box_rows: int):
    """The tensor map of residues (rows, blocks * padded ...) seen as (padded, blocks, rows)."""
    row_bytes = residues.strides[0]
    if residues.ndim != 2 or residues.strides[1] != 1 or row_bytes % 16:
        raise BackendError("reduced_products: residues need unit column stride and rows in multiples of 16 bytes")
    return int8_tensor_map(residues, (padded, blocks, residues.shape[0]), (padded, row_bytes), (TILE_K, 1, box_rows))


_SHARED_BYTES = {"crt_products": SHARED_BYTES, "crt_products_resident": RESIDENT_SHARED_BYTES}


@functools.lru_cache(maxsize=None)
def _kernel(name: str):
    kernel = arch_kernel("crt_products.cu", name, (), WGMMA_ARCH)
    kernel.max_dynamic_shared_size_bytes = _SHARED_BYTES[name]
    return kernel
