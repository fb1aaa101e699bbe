"""Ozaki-II's products reduced modulo p on the chip (ozaki/crt_products.py, kernels/crt_products.cu)
against exact integer products reduced on the host: tiles cut by every edge (rows, columns and the
inner size past a tile's end), several moduli counts, Karatsuba and Gaussian parts."""
import re
from pathlib import Path

import numpy as np
import pytest

from gemm_backend import BackendError
from gemm_backend.arrays import cupy_module, gpu_available
from gemm_backend.ozaki import crt_products
from gemm_backend.ozaki.crt import crt_plan
from gemm_backend.ozaki.crt_products import MAX_PADDED, RESIDENT_PADDED, reduced_products, reduces_on_chip
from gemm_backend.ozaki.gate import wgmma_here
from gemm_backend.registry import CRT_MODULI, GAUSSIAN_MODULI

from .helpers import symmetric_residues

requires_hopper = pytest.mark.skipif(not (gpu_available() and wgmma_here()), reason="needs an sm_90 GPU (Hopper)")


def expected_residues(a, b, padded: int, blocks: int, parts: int, plan):
    """(blocks, rows, cols) symmetric residues of the block products, from float64 GEMMs (exact:
    |sum| < padded 127^2 < 2^53)."""
    blocks_of = [slice(block * padded, (block + 1) * padded) for block in range(blocks)]
    products = np.stack([np.rint(a[:, h].astype(np.float64) @ b[:, h].astype(np.float64).T) for h in blocks_of])
    return symmetric_residues(products.astype(np.int64), plan, parts)


@pytest.mark.gpu
@requires_hopper
@pytest.mark.parametrize("rows, cols, padded, moduli, gaussian", [
    (300, 48, 144, 8, True),       # a partial row tile, one partial column tile, a k step past the end
    (128, 256, 128, 8, False),     # one whole tile, Karatsuba's three parts
    (1000, 1024, 1024, 16, True),  # a d = 10 gate chunk's shape, int8-auto's default plan
    (257, 528, 512, 9, False),
    (6000, 512, 512, 16, True),    # a d = 9 gate chunk: the resident slice, each group across blocks
    (5, 16, 16, 8, True),          # one tile: the second warpgroup has none
    (4100, 272, 384, 8, False),    # two column tiles, one nearly empty; three steps of h
    (70, 24, 48, 8, True),         # columns off the 16-byte grid
    (512, 40, 512, 16, True),      # a gate's rows by a narrow chunk of columns (columns fastest)
    (512, 17000, 512, 16, True),   # too many column tiles for the resident slices: both stream
])
def test_products_equal_the_exact_products_modulo_p(rows, cols, padded, moduli, gaussian, rng):
    cp = cupy_module()
    plan = crt_plan(moduli, gaussian)
    parts = 2 if gaussian else 3
    blocks = plan.count * parts
    width = blocks * padded + 32  # rows wider than the blocks, as the residue scratch may be
    a = rng.integers(-127, 128, size=(rows, width), dtype=np.int8)
    b = rng.integers(-127, 128, size=(cols, width), dtype=np.int8)
    a[:, -32:] = b[:, -32:] = 99  # past the last block: must not be read
    out = cp.full((blocks, rows, cols), 77, cp.int8)
    reduced_products(cp.asarray(a), cp.asarray(b), padded, blocks, parts, cp.asarray(plan.p), out)
    np.testing.assert_array_equal(out.get(), expected_residues(a, b, padded, blocks, parts, plan))


@pytest.mark.gpu
@requires_hopper
@pytest.mark.parametrize("padded, gaussian", [(MAX_PADDED, False), (RESIDENT_PADDED, True)])
def test_products_exact_at_the_largest_sums(padded, gaussian):
    """Rows and columns of one value each, so that the sums reach +-padded 127^2 (nearly the whole
    int32 range where padded = MAX_PADDED; p = 256 among the Karatsuba moduli)."""
    cp = cupy_module()
    plan = crt_plan(8, gaussian)
    parts = 2 if gaussian else 3
    blocks = plan.count * parts
    row_values = np.array([127, -127, 126, 1, -1, 0, 100, -77] * 8, np.int64)
    col_values = np.array([-127, 127, 1, -1, 0, 3, -126, 125] * 2, np.int64)
    a = cp.asarray(np.repeat(row_values.astype(np.int8)[:, None], blocks * padded, axis=1))
    b = cp.asarray(np.repeat(col_values.astype(np.int8)[:, None], blocks * padded, axis=1))
    out = cp.empty((blocks, len(row_values), len(col_values)), cp.int8)
    reduced_products(a, b, padded, blocks, parts, cp.asarray(plan.p), out)
    products = padded * np.outer(row_values, col_values)
    expected = symmetric_residues(np.broadcast_to(products, (blocks, *products.shape)), plan, parts)
    np.testing.assert_array_equal(out.get(), expected)


@pytest.mark.gpu
@requires_hopper
def test_products_refuse_inexact_sums_and_too_many_moduli():
    cp = cupy_module()
    a = cp.zeros((8, 32), cp.int8)
    with pytest.raises(BackendError, match="multiples of 16"):
        reduced_products(a, cp.zeros((24, 32), cp.int8), 8, 4, 2, cp.ones(2), cp.zeros((4, 8, 24), cp.int8))
    with pytest.raises(BackendError, match="at most 32 moduli"):
        reduced_products(cp.zeros((8, 66 * 16), cp.int8), cp.zeros((16, 66 * 16), cp.int8), 16, 66, 2, cp.ones(33),
                         cp.zeros((66, 8, 16), cp.int8))
    assert reduces_on_chip(1 << 17) and not reduces_on_chip((1 << 17) + 16)


def every_plan_modulus():
    return sorted({int(p) for gaussian, counts in ((True, GAUSSIAN_MODULI), (False, CRT_MODULI))
                   for count in counts for p in crt_plan(count, gaussian).p})


@pytest.mark.parametrize("p", every_plan_modulus())
def test_rounded_quotient_is_exact_for_every_sum(p):
    """rounded_quotient.cuh's reduction, as the products' dp4a sums (below 4 * 255^2 + p) and the
    residues' started sums (below 2^20 + 2^8) use it: for every sum 0 <= S < 2^21, the FMA
    M + (S 2^-149) fl(2^129 / p) rounded at 2^-20 (ties to even) gives q with S - p q the symmetric
    residue of S (either sign of a tie for p = 256). Integer arithmetic: fl(2^129 / p) = k 2^e."""
    scaled_inverse = float(np.float32(1) / np.float32(p)) * 2.0 ** 129
    assert float(np.float32(scaled_inverse)) == scaled_inverse < 2.0 ** 128
    mantissa, exponent = np.frexp(scaled_inverse)
    k, e = int(mantissa * 2 ** 24), int(exponent) - 24
    sums = np.arange(1 << 21, dtype=np.int64)
    shift = 149 - 20 - e  # S k 2^(e - 149) in units of 2^-20
    quotient, rest = (sums * k) >> shift, (sums * k) & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    quotient += (rest > half) | ((rest == half) & (quotient % 2 == 1))
    residues = sums - p * quotient
    assert np.all(np.abs(residues) <= p // 2) and (p % 2 == 0 or np.all(np.abs(residues) <= (p - 1) // 2))


def test_host_sizes_are_the_kernels():
    """The launch's shared memory and tiles (crt_products.py) are the kernel's #defines."""
    source = (Path(crt_products.__file__).parent / "kernels" / "crt_products.cu").read_text()
    defines = {name: int(value) for name, value in re.findall(r"^#define (\w+) (\d+)\b", source, re.MULTILINE)}
    assert {name: defines[name] for name in ("TILE_M", "TILE_N", "TILE_K", "STAGES", "RESIDENT_PADDED",
                                             "RESIDENT_STAGES", "WG_ROWS", "MAX_MODULI")} == {
        "TILE_M": crt_products.TILE_M, "TILE_N": crt_products.TILE_N, "TILE_K": crt_products.TILE_K,
        "STAGES": crt_products.STAGES, "RESIDENT_PADDED": crt_products.RESIDENT_PADDED,
        "RESIDENT_STAGES": crt_products.RESIDENT_STAGES, "WG_ROWS": crt_products.RESIDENT_ROWS,
        "MAX_MODULI": crt_products.MAX_MODULI}


def test_products_stay_off_the_chip_without_hopper():
    """Without an sm_90 GPU every product comes from cuBLAS (or the CPU path)."""
    if gpu_available() and wgmma_here():
        pytest.skip("this GPU reduces on the chip")
    assert not reduces_on_chip(1024)
