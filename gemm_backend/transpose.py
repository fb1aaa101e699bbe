"""Batched transposed copies of complex matrices: dst[l] = src[l]^T, on numpy or by a tiled
kernel on the GPU (kernels/transpose.cu), for gathering a state's columns into rows and back."""
import functools

from .arrays import cupy_module, is_gpu_array
from .errors import BackendError
from .kernel_launch import include_options, kernel_path

TILE = 32  # the kernel's tile side
TILE_ROWS = 8  # threads per tile column (blockDim.y)
MAX_GRID_Y = 65535  # gridDim.y, one tile of rows each: more rows go in several launches
MAX_LAUNCH_ROWS = MAX_GRID_Y * TILE
MAX_BATCH_BLOCKS = 65535  # gridDim.z: the kernel strides over a longer batch


def transpose_into(src, dst) -> None:
    """dst[l, j, i] = src[l, i, j]: src (B, m, n), dst (B, n, m) complex128 views on the same
    device, of any strides (whole elements); they must not overlap."""
    if src.ndim != 3 or dst.shape != (src.shape[0], src.shape[2], src.shape[1]):
        raise BackendError(f"transpose_into: shapes {src.shape} and {dst.shape} are not (B, m, n) and (B, n, m)")
    if not is_gpu_array(src):
        dst[...] = src.transpose(0, 2, 1)
        return
    cp = cupy_module()
    if src.dtype != cp.complex128 or dst.dtype != cp.complex128:
        raise BackendError(f"transpose_into takes complex128 on the GPU, got {src.dtype} and {dst.dtype}")
    if src.size:
        in_row_blocks(src, dst, MAX_LAUNCH_ROWS, _launch)


def in_row_blocks(src, dst, most: int, copy) -> None:
    """copy(src[:, rows, :], dst[:, :, rows]) for consecutive slices `rows` of at most `most` of
    src's rows (the views keep their strides)."""
    for start in range(0, src.shape[1], most):
        rows = slice(start, start + most)
        copy(src[:, rows, :], dst[:, :, rows])


def _launch(src, dst) -> None:
    """The kernel on src (B, m, n) with m <= MAX_LAUNCH_ROWS, dst (B, n, m)."""
    cp = cupy_module()
    batch, rows, cols = src.shape
    grid = (-(-cols // TILE), -(-rows // TILE), min(batch, MAX_BATCH_BLOCKS))
    steps = tuple(cp.int64(s // 16) for s in src.strides) + tuple(cp.int64(s // 16) for s in dst.strides)
    _kernel()(grid, (TILE, TILE_ROWS), (src, dst, cp.int64(batch), cp.int64(rows), cp.int64(cols), *steps))


@functools.lru_cache(maxsize=None)
def _kernel():
    path = kernel_path("transpose.cu")
    module = cupy_module().RawModule(code=path.read_text(), options=include_options(path))
    return module.get_function("transpose_complex")
