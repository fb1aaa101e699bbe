"""The CUDA kernels of int8-crt-<m> (kernels/ozaki_crt.cu), compiled for the host with a one-warp
emulation (host_cuda/ozaki_crt_host.cpp), against the numpy specification: the GPU path's
logic (layouts, limbs, rounding) checked bit for bit without a GPU, with and without FMA
contraction. The INT8 GEMMs are float64 GEMMs of the residues here (exact), as on the CPU path."""
import ctypes
from pathlib import Path

import numpy as np
import pytest

import gemm_backend
from gemm_backend.ozaki.crt import crt_plan
from gemm_backend.ozaki.crt_backend import (MMA_STAGES, QUAD_RECONSTRUCT_BLOCKS_PER_SM, QUAD_STAGES,
                                           RECONSTRUCT_BLOCKS_PER_SM, CrtLayout, gate_reconstruct_variant,
                                           mma_stage_words)
from gemm_backend.registry import CRT_MODULI, GAUSSIAN_MODULI
from gemm_backend.target_layout import pack_targets

from .helpers import at_targets, batched_on_columns, same_bits, seed_paper_matrix, symmetric_residues
from .host_build import build_host_harness, kernel_includes

KERNELS = Path(gemm_backend.__file__).resolve().parent / "ozaki" / "kernels" / "ozaki_crt.cu"  # as installed
GAUSSIAN = [False, True]  # the moduli: the largest coprime ones, or the Gaussian ones (int8-gcrt)
BUILDS = {"plain": ["-O1", "-ffp-contract=off"], "fma": ["-O2", "-mfma", "-ffp-contract=fast"]}


def _has_fma() -> bool:
    try:
        return " fma " in Path("/proc/cpuinfo").read_text().replace("\n", " ")
    except OSError:
        return False


@pytest.fixture(scope="module", params=list(BUILDS))
def kernels(request, tmp_path_factory):
    """The host build of the kernels as a ctypes library (plain, and with FMA contraction)."""
    if request.param == "fma" and not _has_fma():
        pytest.skip("this CPU has no FMA instructions")
    return build_host_harness("ozaki_crt_host.cpp", tmp_path_factory.mktemp("host_cuda") / f"ozaki_crt_{request.param}.so",
                              (*BUILDS[request.param], *kernel_includes("ozaki_crt.cu"), f'-DKERNELS="{KERNELS}"'))


def _pointer(array):
    return ctypes.c_void_p(array.ctypes.data)


def _row_stride(array) -> ctypes.c_longlong:
    return ctypes.c_longlong(array.strides[0] // array.itemsize)


def host_scales(kernels, rows, bits):
    scales, nonfinite = np.empty(rows.shape[0], np.int32), np.zeros(1, np.int32)
    kernels.host_row_scales(_pointer(rows), ctypes.c_longlong(rows.shape[0]), ctypes.c_int(rows.shape[1]),
                            _row_stride(rows), ctypes.c_int(bits), _pointer(scales), _pointer(nonfinite))
    return scales, nonfinite[0] == 0


def plan_tables(plan, is_complex: bool = True) -> dict:
    """The tables crt_backend._device_tables puts on the device, on the host; "inverse" as
    _gpu_reconstruct passes it (CrtLayout.inverse_table)."""
    names = {"p": "p", "inverse": CrtLayout(plan, 1, is_complex).inverse_table, "im_inverse": "im_inverse",
             "root": "root", "partial_limbs": "partial_limbs", "product_limbs": "product_limbs"}
    return {key: np.ascontiguousarray(getattr(plan, name)) for key, name in names.items()}


def backend_name(m: int, gaussian: bool) -> str:
    return f"int8-{'g' if gaussian else ''}crt-{m}"


def host_residues(kernels, layout, rows, scales, tables=None):
    tables = tables or plan_tables(layout.plan)
    out = np.empty((rows.shape[0], layout.blocks * layout.padded), np.int8)
    kernels.host_residues(
        _pointer(rows), ctypes.c_longlong(rows.shape[0]), ctypes.c_int(layout.k), ctypes.c_int(layout.padded),
        _row_stride(rows), ctypes.c_int(layout.parts), _pointer(scales), ctypes.c_int(layout.plan.count),
        _pointer(tables["p"]), _pointer(tables["root"]), _pointer(out), ctypes.c_longlong(out.shape[1]))
    return out


def host_matmul(kernels, m, a, b, row_step, col_step, gaussian=False, reduced=False):
    """OzakiCrtBackend's GPU path with the host kernels, tile by tile: row scales, residues in
    the (rows, blocks * padded) layout, the per-block INT8 products (float64 GEMMs here; reduced:
    passed on as their int8 residues, as crt_products.cu leaves them), reconstruction into a view
    of the output."""
    is_complex = np.iscomplexobj(a) or np.iscomplexobj(b)
    dtype = np.complex128 if is_complex else np.float64
    a, b = np.ascontiguousarray(a, dtype), np.asarray(b, dtype)
    layout = CrtLayout(crt_plan(m, gaussian), a.shape[1], is_complex)
    tables = plan_tables(layout.plan, is_complex)
    a_rows = a.view(np.float64) if is_complex else a
    a_scales, a_finite = host_scales(kernels, a_rows, layout.plan.a_bits)
    out = np.empty((a.shape[0], b.shape[1]), dtype)
    out_rows = out.view(np.float64) if is_complex else out
    pad = layout.padded
    for c0 in range(0, b.shape[1], col_step):
        cols = slice(c0, min(b.shape[1], c0 + col_step))
        b_rows = np.ascontiguousarray(b[:, cols].T)
        b_rows = b_rows.view(np.float64) if is_complex else b_rows
        b_scales, b_finite = host_scales(kernels, b_rows, layout.plan.b_bits)
        assert a_finite and b_finite
        b_residues = host_residues(kernels, layout, b_rows, b_scales, tables).astype(np.float64)
        for r0 in range(0, a.shape[0], row_step):
            rows = slice(r0, min(a.shape[0], r0 + row_step))
            a_residues = host_residues(kernels, layout, a_rows[rows], a_scales[rows], tables).astype(np.float64)
            products = np.stack([a_residues[:, j * pad:(j + 1) * pad] @ b_residues[:, j * pad:(j + 1) * pad].T
                                 for j in range(layout.blocks)])
            assert np.abs(products).max() < 2**31
            products = np.ascontiguousarray(products.astype(np.int32))
            if reduced:
                products = symmetric_residues(products, layout.plan, layout.parts)
            target = out_rows[rows, layout.width * cols.start:layout.width * cols.stop]
            kernels.host_reconstruct(
                _pointer(products), ctypes.c_int(reduced), ctypes.c_longlong(products.shape[1]),
                ctypes.c_int(products.shape[2]),
                ctypes.c_int(layout.parts), ctypes.c_int(m),
                *(_pointer(tables[name]) for name in ("p", "inverse", "im_inverse")),
                ctypes.c_int(layout.plan.limbs), _pointer(tables["partial_limbs"]), _pointer(tables["product_limbs"]),
                _pointer(np.ascontiguousarray(a_scales[rows])), _pointer(b_scales), _pointer(target), _row_stride(target))
    return out


@pytest.mark.parametrize("m", [8, 13, 20])
@pytest.mark.parametrize("gaussian", GAUSSIAN)
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("shape, steps", [((37, 29, 11), (16, 5)), ((6, 1, 3), (6, 3)), ((9, 300, 40), (4, 40))])
@pytest.mark.parametrize("reduced", [False, True])
def test_host_kernels_match_the_specification(kernels, m, gaussian, is_complex, shape, steps, reduced, rng):
    """reduced: the reconstruction from the products' int8 residues (crt_reconstruct_residues)."""
    rows, k, n = shape
    a = seed_paper_matrix(rng, (rows, k), 4.0, is_complex)
    a[1], a[3], a[4] = 0, a[3] * 2.0**-1060, a[4] * 2.0**900  # zero, subnormal and huge rows
    b = seed_paper_matrix(rng, (k, n), 4.0, is_complex)
    b[:, 0] *= 2.0**-500
    expected = gemm_backend.get(backend_name(m, gaussian)).matmul(a, b)
    assert same_bits(host_matmul(kernels, m, a, b, *steps, gaussian=gaussian, reduced=reduced), expected)


def test_host_kernels_on_subnormal_results_and_exact_integers(kernels, rng):
    a = seed_paper_matrix(rng, (20, 40), 2.0, True) * 2.0**-540
    b = seed_paper_matrix(rng, (40, 12), 2.0, True) * 2.0**-530
    expected = gemm_backend.get("int8-crt-15").matmul(a, b)
    assert np.abs(expected).min() < 2.0**-1022
    assert same_bits(host_matmul(kernels, 15, a, b, 7, 5), expected)
    a = rng.integers(-2**30, 2**30, (6, 16)) + 1j * rng.integers(-2**30, 2**30, (6, 16))
    b = rng.integers(-2**30, 2**30, (16, 5)).astype(np.float64)
    assert same_bits(host_matmul(kernels, 20, a, b, 6, 5), gemm_backend.get("int8-crt-20").matmul(a, b))


def test_host_row_scales_flag_non_finite_rows(kernels):
    rows = np.ones((3, 40))
    assert host_scales(kernels, rows, 40)[1]
    rows[1, 17] = np.nan
    assert not host_scales(kernels, rows, 40)[1]


@pytest.mark.parametrize("m", [8, 14, 20])
@pytest.mark.parametrize("is_complex", [False, True])
def test_host_residues_equal_the_specification(kernels, m, is_complex, rng):
    """Byte for byte, including the p = 256 ties the kernel wraps from +128 to -128."""
    from gemm_backend.ozaki.crt import residues

    layout = CrtLayout(crt_plan(m), 40, is_complex)
    a = seed_paper_matrix(rng, (7, layout.k), 3.0, is_complex)
    a[2] = 128.0 * (1 + 2 * rng.integers(-2**20, 2**20, layout.k))  # odd multiples of 128: ties at 256
    rows = np.ascontiguousarray(a).view(np.float64) if is_complex else np.ascontiguousarray(a)
    scales = np.zeros(rows.shape[0], np.int32)
    scales[[0, 1, 3, 4, 5, 6]] = host_scales(kernels, rows, layout.plan.a_bits)[0][[0, 1, 3, 4, 5, 6]]
    got = host_residues(kernels, layout, rows, scales).reshape(rows.shape[0], layout.blocks, layout.padded)
    expected = residues(rows, scales, layout.plan, is_complex)  # (m, G, r, k)
    expected = expected.reshape(layout.blocks, rows.shape[0], layout.k).transpose(1, 0, 2)
    assert np.array_equal(got[:, :, :layout.k], expected)
    assert not got[:, :, layout.k:].any()
    assert (expected[2, 0] == -128).any()  # the tie case happened


def host_reconstruct(kernels, plan, products, is_complex, row_scales, col_scales):
    """The crt_reconstruct kernel on given int32 products (blocks, rows, cols): (rows, cols * outputs)."""
    tables = plan_tables(plan, is_complex)
    rows, cols = products.shape[1:]
    out = np.empty((rows, cols * (2 if is_complex else 1)))
    kernels.host_reconstruct(
        _pointer(products), ctypes.c_int(0), ctypes.c_longlong(rows), ctypes.c_int(cols),
        ctypes.c_int(plan.parts(is_complex)),
        ctypes.c_int(plan.count), _pointer(tables["p"]), _pointer(tables["inverse"]), _pointer(tables["im_inverse"]),
        ctypes.c_int(plan.limbs), _pointer(tables["partial_limbs"]),
        _pointer(tables["product_limbs"]), _pointer(row_scales), _pointer(col_scales), _pointer(out), _row_stride(out))
    return out


def _boundary_values():
    """Integers at the kernels' digit boundaries (bytes, 32-bit words, the 2^62 split, the 2^80
    ceiling), both signs, and fractions that truncate to zero."""
    magnitudes = [0.0, 0.5, 1.0, 127.0, 128.0, 255.0, 256.0, 2.0**80 - 2.0**27]
    for k in (31, 32, 33, 52, 55, 56, 61, 62, 63, 64, 79):
        magnitudes += [2.0**k, 2.0**k - 2.0**max(0, k - 52), 2.0**k + 2.0**max(0, k - 52)]
    magnitudes += [2.0**62 - 2.0**10 * 3, 0x7F7F7F7F7F7F7F7F * 1.0, 0x8080808080808080 * 1.0 / 2]
    values = np.array(magnitudes)
    return np.concatenate([values, -values])


@pytest.mark.parametrize("m, gaussian", [(m, False) for m in CRT_MODULI] + [(m, True) for m in GAUSSIAN_MODULI])
@pytest.mark.parametrize("is_complex", [False, True])
def test_host_residues_at_digit_boundaries_for_every_modulus_count(kernels, m, gaussian, is_complex, rng):
    """Byte for byte against crt.residues at scale 0, so trunc(2^s v) is each value itself."""
    from gemm_backend.ozaki.crt import residues

    values = _boundary_values()
    rows = np.stack([values, rng.permutation(values), np.zeros_like(values)])
    layout = CrtLayout(crt_plan(m, gaussian), rows.shape[1] // (2 if is_complex else 1), is_complex)
    rows = np.ascontiguousarray(rows[:, :layout.width * layout.k])
    scales = np.zeros(rows.shape[0], np.int32)
    got = host_residues(kernels, layout, rows, scales).reshape(rows.shape[0], layout.blocks, layout.padded)
    expected = residues(rows, scales, layout.plan, is_complex).reshape(layout.blocks, rows.shape[0], layout.k)
    assert np.array_equal(got[:, :, :layout.k], expected.transpose(1, 0, 2))
    assert not got[2].any()


@pytest.mark.parametrize("m, gaussian", [(8, False), (15, False), (20, False), (22, True)])
def test_host_residues_at_extreme_scales(kernels, m, gaussian, rng):
    """Rows from subnormal to near-overflow magnitudes with the specification's scales (|s| up
    to ~1150, both split factors in play), wide values for m > 16, zero rows."""
    from gemm_backend.ozaki.crt import residues, row_scales

    layout = CrtLayout(crt_plan(m, gaussian), 48, True)
    rows = np.ascontiguousarray(seed_paper_matrix(rng, (6, layout.k), 6.0, True)).view(np.float64)
    rows[0] = np.ldexp(np.sign(rows[0]), -1074 - rng.integers(0, 3, rows.shape[1]))  # subnormals, some 0
    rows[1] *= 2.0**1023 / np.abs(rows[1]).max()
    rows[2, ::2] *= 2.0**1000 / np.abs(rows[2]).max()  # one row from ~2^1000 down to subnormals
    rows[2, 1::2] *= 2.0**-1070
    rows[3] = 0
    rows[4, 5] = 2.0**-1074
    scales = row_scales(rows, layout.plan.b_bits)[0]
    got = host_residues(kernels, layout, rows, scales).reshape(rows.shape[0], layout.blocks, layout.padded)
    expected = residues(rows, scales, layout.plan, True).reshape(layout.blocks, rows.shape[0], layout.k)
    assert np.array_equal(got[:, :, :layout.k], expected.transpose(1, 0, 2))
    assert not got[3].any()


@pytest.mark.parametrize("m, gaussian", [(m, False) for m in CRT_MODULI] + [(m, True) for m in GAUSSIAN_MODULI])
@pytest.mark.parametrize("is_complex", [False, True])
def test_host_reconstruction_of_extreme_products(kernels, m, gaussian, is_complex, rng):
    """Products over the whole int32 range (|P| < 2^31, the ends included) and output exponents
    from subnormal to ~2^1000 results, bit for bit against crt.CrtAccumulator."""
    from gemm_backend.ozaki.crt import CrtAccumulator

    plan = crt_plan(m, gaussian)
    parts = plan.parts(is_complex)
    products = rng.integers(-2**31 + 1, 2**31, (m * parts, 5, 7), dtype=np.int64)
    products[:, 0, :3] = [2**31 - 1, -2**31 + 1, 0]
    products[:, 1] = rng.integers(-3, 4, (m * parts, 7))  # small C' (cancelling residues)
    products = np.ascontiguousarray(products.astype(np.int32))
    row_scales = np.array([1100, 600, 0, -400, -900], np.int32) + plan.product.bit_length()
    col_scales = rng.integers(-60, 60, 7).astype(np.int32)
    accumulator = CrtAccumulator(plan, 2 if is_complex else 1, (5, 7))
    for index in range(m):
        accumulator.add(index, products[index * parts:(index + 1) * parts].astype(np.float64))
    expected = accumulator.result(row_scales, col_scales)  # (parts, rows, cols)
    got = host_reconstruct(kernels, plan, products, is_complex, row_scales, col_scales)
    assert same_bits(got, np.ascontiguousarray(np.moveaxis(expected, 0, -1).reshape(5, -1)))
    assert (np.abs(expected[:, 0]) < 2.0**-1022).any() and (np.abs(expected) > 2.0**900).any()


@pytest.mark.parametrize("m, gaussian", [(m, False) for m in CRT_MODULI] + [(m, True) for m in GAUSSIAN_MODULI])
def test_host_kernels_for_every_modulus_count(kernels, m, gaussian, rng):
    backend = gemm_backend.get(backend_name(m, gaussian))
    a = seed_paper_matrix(rng, (7, 23), 3.0, True)
    a[2] = 0
    b = -seed_paper_matrix(rng, (23, 6), 3.0, True)
    assert same_bits(host_matmul(kernels, m, a, b, 4, 4, gaussian), backend.matmul(a, b))
    a, b = a.real.copy(), b.real.copy()
    assert same_bits(host_matmul(kernels, m, a, b, 7, 3, gaussian), backend.matmul(a, b))


def test_shared_tables_cover_every_plan():
    """crt_arith.cuh sizes its shared tables by MAX_MODULI and its limb sums by MAX_LIMBS."""
    import re

    text = KERNELS.with_name("crt_arith.cuh").read_text()
    defined = {name: int(value) for name, value in re.findall(r"#define (MAX_\w+) (\d+)", text)}
    assert defined["MAX_MODULI"] >= max(max(CRT_MODULI), max(GAUSSIAN_MODULI))
    plans = [crt_plan(m) for m in CRT_MODULI] + [crt_plan(m, True) for m in GAUSSIAN_MODULI]
    assert defined["MAX_LIMBS"] >= max(plan.limbs for plan in plans)


# -- gates at any targets: the columns read and written where they sit (apply_at) ---------------------
# host_gate_reconstruct's kernel numbers
RECONSTRUCT_VARIANTS = ("one", "quads", "mma")


def host_gate(kernels, backend, u, state, targets, chunk, reduced=False):
    """OzakiCrtBackend.apply_at's GPU path with the host kernels, in place on the flat state:
    the gate's residues as rows of B = u^T, then per chunk of `chunk` columns crt_gate_residues
    on the state, the INT8 products (float64 GEMMs here; reduced: as int8 residues),
    crt_gate_reconstruct (the kernel gate_reconstruct_variant names, as on the GPU) into the
    state; the products made as (blocks, k, columns) where bit 0 is no target, as on the GPU."""
    k = u.shape[0]
    layout = CrtLayout(backend.plan, k, True)
    tables = plan_tables(layout.plan)
    gate_rows = np.ascontiguousarray(u).view(np.float64)  # row j of B^T = u's row j
    gate_scales, finite = host_scales(kernels, gate_rows, layout.plan.b_bits)
    assert finite
    gate_residues = host_residues(kernels, layout, gate_rows, gate_scales, tables).astype(np.float64)
    packed = [ctypes.c_ulonglong(pack_targets(targets)), ctypes.c_ulonglong(pack_targets(sorted(targets))),
              ctypes.c_int(len(targets))]
    nonfinite = np.zeros(1, np.int32)
    n_columns, pad, width = state.size // k, layout.padded, layout.blocks * layout.padded
    for first in range(0, n_columns, chunk):
        count = min(chunk, n_columns - first)
        residues, scales = np.empty((count, width), np.int8), np.empty(count, np.int32)
        kernels.host_gate_residues(
            _pointer(state), ctypes.c_longlong(first), ctypes.c_longlong(count), ctypes.c_int(k), *packed,
            ctypes.c_int(pad), ctypes.c_int(layout.parts), ctypes.c_int(layout.plan.a_bits), _pointer(scales),
            _pointer(nonfinite), ctypes.c_int(layout.plan.count), _pointer(tables["p"]), _pointer(tables["root"]),
            _pointer(residues), ctypes.c_longlong(width))
        residues = residues.astype(np.float64)
        columns_fastest = 0 not in targets
        products = np.stack([residues[:, j * pad:(j + 1) * pad] @ gate_residues[:, j * pad:(j + 1) * pad].T
                             for j in range(layout.blocks)]).astype(np.int32)
        products = np.ascontiguousarray(products.transpose(0, 2, 1) if columns_fastest else products)
        if reduced:
            products = symmetric_residues(products, layout.plan, layout.parts)
        kernels.host_gate_reconstruct(
            _pointer(products), ctypes.c_int(reduced), ctypes.c_longlong(count), ctypes.c_int(k), ctypes.c_int(layout.parts),
            ctypes.c_int(layout.plan.count), *(_pointer(tables[name]) for name in ("p", "inverse", "im_inverse")),
            ctypes.c_int(layout.plan.limbs), _pointer(tables["partial_limbs"]), _pointer(tables["product_limbs"]),
            _pointer(scales), _pointer(gate_scales), _pointer(state), ctypes.c_longlong(first), *packed,
            ctypes.c_int(columns_fastest), ctypes.c_int(RECONSTRUCT_VARIANTS.index(gate_reconstruct_variant(
                count, k, first, columns_fastest, reduced, layout.parts, layout.plan.limbs))))
    return nonfinite[0] == 0


@pytest.mark.parametrize("m, gaussian", [(16, True), (13, False), (9, True)])
@pytest.mark.parametrize("targets, chunk", [((0, 1, 2), 16), ((2, 3, 4), 5), ((5, 1, 3), 8), ((6, 0), 64),
                                            ((3,), 9), ((8, 0, 5, 2, 7, 3), 5), ((9, 0, 8, 1, 7, 2, 6, 3), 3),
                                            (tuple(range(12, 2, -1)), 4), ((6, 2), 32), ((4,), 32)])
@pytest.mark.parametrize("reduced", [False, True])
def test_host_gate_kernels_take_the_columns_at_any_targets(kernels, m, gaussian, targets, chunk, reduced, rng):
    """In place on a state of 7 qubits (len(targets) + 3 for more targets: K = 64, so that a
    thread's outputs wrap to the next column; K = 256 and 1024, whose columns crt_gate_residues
    spreads over 2 and 8 warps), in chunks: the bits of the CPU path (apply_batched) on the gathered
    columns, whatever the targets' order and positions; zero, tiny and huge columns. Reduced
    products on Gaussian moduli take the mma kernel at K = 64 and 256 where bit 0 is a target and,
    columns-fastest, in chunks of 32 columns where it is not (one chunk, and two at K = 2); reduced
    products take the quads kernel where bit 0 is a target (K >= 4) and, columns-fastest, in chunks
    of 4 and 8 columns where it is not; other chunks there, K = 2 and int32 products the
    one-output kernel."""
    check_host_gate(kernels, gemm_backend.get(backend_name(m, gaussian)), targets, chunk, reduced, rng)


def check_host_gate(kernels, backend, targets, chunk, reduced, rng):
    """host_gate on a state of max(7, len(targets) + 3) qubits whose columns 1, 2, 3 are zero,
    subnormal and huge, bit for bit against the CPU path on the gathered columns."""
    n, k = max(7, len(targets) + 3), 1 << len(targets)
    state = seed_paper_matrix(rng, (1 << n,), 4.0, True)
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    scaled = {1: 0.0, 2: 2.0**-1040, 3: 2.0**700}  # columns: zero, subnormal, huge

    def scale_columns(columns):
        for column, factor in scaled.items():
            columns[column] *= factor
        return columns

    state = at_targets(state, targets, scale_columns)
    expected = at_targets(state, targets, lambda columns: batched_on_columns(backend, u, columns))
    assert host_gate(kernels, backend, u, state, targets, chunk, reduced)
    assert same_bits(state, expected)


@pytest.mark.parametrize("targets, chunk", [((8, 0, 5, 2, 7, 3), 5), ((6, 2), 32)])
def test_host_mma_reconstruction_takes_two_k_steps(kernels, targets, chunk, rng):
    """17 Gaussian moduli, the most the mma kernel takes (4 limbs): 34 planes of products, two
    k-steps of 32, the second mostly zeros; the bits of the CPU path, as above (extreme columns
    included)."""
    backend = gemm_backend.get(backend_name(17, True))
    assert gate_reconstruct_variant(chunk, 1 << len(targets), 0, 0 not in targets, True, 2,
                                    backend.plan.limbs) == "mma"
    check_host_gate(kernels, backend, targets, chunk, True, rng)


def test_mma_reconstruction_ring_sized_as_the_kernel_takes_it(kernels):
    """The host sizes the mma kernel's dynamic shared memory with MMA_STAGES stages of
    mma_stage_words words a warp: the kernel's own figures, for every moduli count (a smaller
    ring on the host would let the kernel's copies run past it)."""
    assert kernels.host_mma_stages() == MMA_STAGES
    for n_moduli in range(1, max(GAUSSIAN_MODULI) + 1):
        assert kernels.host_mma_stage_words(ctypes.c_int(n_moduli)) == mma_stage_words(n_moduli), n_moduli


def test_quads_and_one_output_reconstructions_sized_as_the_kernels_take_them(kernels):
    """The host sizes the quads kernel's dynamic shared memory with QUAD_STAGES stages and launches
    it QUAD_RECONSTRUCT_BLOCKS_PER_SM blocks a multiprocessor, the one-output kernels
    RECONSTRUCT_BLOCKS_PER_SM: the kernels' own figures."""
    assert kernels.host_quad_stages() == QUAD_STAGES
    assert kernels.host_quad_blocks_per_sm() == QUAD_RECONSTRUCT_BLOCKS_PER_SM
    assert kernels.host_reconstruct_blocks_per_sm() == RECONSTRUCT_BLOCKS_PER_SM


def test_host_gate_kernels_flag_non_finite_columns(kernels, rng):
    state = seed_paper_matrix(rng, (1 << 6,), 1.0, True)
    state[37] = np.nan
    u = seed_paper_matrix(rng, (4, 4), 1.0, True)
    assert not host_gate(kernels, gemm_backend.get("int8-gcrt-12"), u, state, (4, 1), 3)
