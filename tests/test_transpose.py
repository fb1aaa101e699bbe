import numpy as np
import pytest

from gemm_backend import BackendError
from gemm_backend.transpose import MAX_BATCH_BLOCKS, MAX_LAUNCH_ROWS, in_row_blocks, transpose_into

from .conftest import requires_gpu
from .helpers import crandn, same_bits


def test_cpu_transposed_copy_and_bad_shapes(rng):
    src = crandn(rng, 3, 5, 7)
    dst = np.empty((3, 7, 5), complex)
    transpose_into(src, dst)
    assert same_bits(dst, src.transpose(0, 2, 1))
    with pytest.raises(BackendError, match="are not"):
        transpose_into(src, np.empty((3, 5, 7), complex))


def test_rows_beyond_one_launch_go_in_slices_that_cover_them(rng):
    """The GPU's grid holds MAX_LAUNCH_ROWS rows (gridDim.y tiles): longer sources go in slices,
    each a strided view of both arrays; here with 3 rows a slice, on numpy."""
    src = crandn(rng, 2, 10, 4)[:, :, ::-1]  # a negative stride too
    dst = np.zeros((2, 4, 10), complex)
    slices = []

    def copy(part, into):
        slices.append(part.shape[1])
        into[...] = part.transpose(0, 2, 1)

    in_row_blocks(src, dst, 3, copy)
    assert slices == [3, 3, 3, 1] and same_bits(dst, src.transpose(0, 2, 1))
    assert MAX_LAUNCH_ROWS == 65535 * 32


def _views(xp, rng):
    """(src, dst) pairs of strided views: a state's (L, K, R) blocks and their row buffers, sizes
    off the 32 x 32 tiles, a batch longer than the grid's z dimension, more rows than one launch
    takes (the grid's y dimension: a chunk's results scattered back to 2^21 columns)."""
    state = xp.asarray(crandn(rng, 1 << 14))
    cases = []
    for n_left, k, n_right, ls, rs in [(4, 64, 64, slice(1, 3), slice(5, 50)), (1, 128, 128, slice(0, 1), slice(0, 128)),
                                       (64, 16, 16, slice(0, 64), slice(0, 16)), (2, 8, 1024, slice(1, 2), slice(3, 1000))]:
        block = state[:n_left * k * n_right].reshape(n_left, k, n_right)[ls, :, rs]
        cases.append((block, xp.empty((block.shape[0], block.shape[2], block.shape[1]), complex)))
    many = xp.asarray(crandn(rng, MAX_BATCH_BLOCKS + 3, 2, 3))
    cases.append((many, xp.empty((MAX_BATCH_BLOCKS + 3, 3, 2), complex)))
    tall = xp.asarray(crandn(rng, 1, MAX_LAUNCH_ROWS + 37, 2))  # two launches
    cases.append((tall, xp.empty((1, 2, MAX_LAUNCH_ROWS + 37), complex)))
    return cases


@pytest.mark.gpu
@requires_gpu
def test_gpu_transposed_copy_has_numpys_bits(rng):
    import cupy as cp

    for src, dst in _views(cp, rng):
        transpose_into(src, dst)
        assert same_bits(dst.get(), src.get().transpose(0, 2, 1)), src.shape
        back = cp.zeros_like(src)
        transpose_into(dst, back)
        assert same_bits(back.get(), src.get())
