"""The Ozaki-II backend int8-crt-<m> and its arithmetic (gemm_backend/crt.py) against exact
integers and fractions, double-double, and its a-priori error bound."""
import math
from fractions import Fraction

import numpy as np
import pytest

import gemm_backend
from circuits import brickwork
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.ozaki.crt import (
    MAX_INNER,
    SCALE_BITS,
    crt_plan,
    error_bound,
    moduli_for_target,
    residues,
    round_limbs,
    row_scales,
)
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.ozaki.crt_backend import CrtLayout, OzakiCrtBackend, gate_reconstruct_variant
from gemm_backend.workspace import TILE_ALIGNMENT
from gemm_backend.registry import CRT_MODULI
from qsim import Simulator

from .helpers import (at_targets, batched_on_columns, check_gpu_apply_batched_matches_cpu, gpu_run_matches_cpu, same_bits,
                      seed_paper_matrix)

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")
UNIT_ROUNDOFF = 2.0**-53
PHIS = (0.1, 1.0, 2.0, 4.0)
SMALLEST_SUBNORMAL = 2.0**-1074


def crt(m: int, **options):
    return gemm_backend.get(f"int8-crt-{m}", **options)


def relative_error(c, reference) -> float:
    """Mean over nonzero entries of |c - (hi + lo)| / |hi + lo| (the seed paper's measure)."""
    hi, lo = reference
    scale = np.abs(hi)
    nonzero = scale > 0
    return float(np.mean(np.abs((c - hi) - lo)[nonzero] / scale[nonzero]))


def part_errors(c, reference):
    """(parts, m, n) |c - (hi + lo)| for the real part and (complex inputs) the imaginary part."""
    hi, lo = reference
    pick = [np.real, np.imag] if np.iscomplexobj(hi) else [np.real]
    return np.stack([np.abs((f(c) - f(hi)) - f(lo)) for f in pick]), np.stack([np.abs(f(hi)) for f in pick])


def bound_ratios(c, a, b, m: int, reference=None, gaussian: bool = False):
    """(max of error / the full bound, max of error / the truncation term eps ||a_i|| ||b_j||).

    The full bound: u |c| + (1 + u) eps ||a_i||_2 ||b_j||_2 (crt.error_bound), plus the
    double-double reference's own error and one subnormal unit."""
    errors, magnitudes = part_errors(c, matmul_dd(a, b) if reference is None else reference)
    norms = np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=0))
    truncation = error_bound(m, a.shape[1], gaussian) * norms
    allowed = UNIT_ROUNDOFF * magnitudes + (1 + UNIT_ROUNDOFF) * truncation + 1e-30 * norms + SMALLEST_SUBNORMAL
    with np.errstate(divide="ignore", invalid="ignore"):
        tightness = np.where(truncation > 0, errors / truncation, 0.0)
    return float((errors / allowed).max()), float(tightness.max())


class ExactComplex(tuple):
    """An exact complex number: a pair (re, im) of Fractions with + and *."""

    def __new__(cls, z=0, im=None):
        if im is None:
            z = complex(z)
            return super().__new__(cls, (Fraction(z.real), Fraction(z.imag)))
        return super().__new__(cls, (z, im))

    def __mul__(self, other):
        return ExactComplex(self[0] * other[0] - self[1] * other[1], self[0] * other[1] + self[1] * other[0])

    def __add__(self, other):
        return ExactComplex(self[0] + other[0], self[1] + other[1])


def exact_product(a, b) -> list:
    """A @ B as nested lists of ExactComplex."""
    return [[sum((ExactComplex(x) * ExactComplex(y) for x, y in zip(row, col)), ExactComplex()) for col in b.T]
            for row in a]


def exact_norm(vector) -> Fraction:
    """The 2-norm of a complex vector to 15 digits at any scale (no underflow), as a Fraction."""
    parts = np.concatenate([np.real(vector), np.imag(vector)])
    exponent = int(np.frexp(np.abs(parts).max())[1])
    squares = sum(Fraction(float(x)) ** 2 for x in parts) * Fraction(4) ** -exponent
    return Fraction(math.sqrt(squares)) * Fraction(2) ** exponent


# -- constants and building blocks ---------------------------------------------------------
@pytest.mark.parametrize("m", [CRT_MODULI.start, 14, CRT_MODULI.stop - 1])
def test_plan_constants(m):
    plan = crt_plan(m)
    assert len(plan.moduli) == m and max(plan.moduli) == 256 and all(p <= 256 for p in plan.moduli)
    assert all(math.gcd(p, q) == 1 for i, p in enumerate(plan.moduli) for q in plan.moduli[i + 1:])
    assert plan.product == math.prod(plan.moduli)
    assert 2**plan.total_bits <= Fraction(plan.product, 2) - Fraction(plan.product, 2**32) < 2**(plan.total_bits + 1)
    assert plan.a_bits + plan.b_bits == plan.total_bits
    for index, p in enumerate(plan.moduli):
        partial = plan.product // p
        assert partial * int(plan.inverse[index]) % p == 1
        assert sum(int(d) << (32 * j) for j, d in enumerate(plan.partial_limbs[index])) == partial
        assert int(plan.pow2_32[index]) == 2**32 % p and int(plan.pow2_64[index]) == 2**64 % p
    assert sum(int(d) << (32 * j) for j, d in enumerate(plan.product_limbs)) == plan.product


def wide_rows(rng, shape):
    """Rows whose entries span many binades, one row of subnormals and one near 2^960."""
    rows = seed_paper_matrix(rng, shape, 4.0, False) * 2.0 ** rng.integers(-60, 60, shape)
    rows[0] *= 2.0**-1040
    rows[1] *= 2.0**900
    rows[2, ::3] = 0.0
    return rows


def test_row_scales_keep_the_norm_bound_and_waste_little(rng):
    rows = wide_rows(rng, (6, 50))
    rows[3] = 0.0
    bits = 40
    scales, finite = row_scales(rows, bits)
    assert finite and scales[3] == 0
    growth = 1 + math.sqrt(rows.shape[1]) * 2.0 ** (1 - SCALE_BITS)
    for row, s in zip(rows, scales):
        integers = [int(Fraction(float(v)) * Fraction(2) ** int(s)) for v in row]  # int() truncates toward 0
        assert sum(x * x for x in integers) <= 4**bits
        if row.any():  # one more binade would break the bound's proof: 2^s ||row|| > 2^(bits-1) / growth
            norm = math.sqrt(sum(float(Fraction(float(v)) ** 2 * Fraction(4) ** int(s)) for v in row))
            assert norm > 2.0 ** (bits - 1) / growth
    bad = rows.copy()
    bad[4, 7] = np.inf
    assert not row_scales(bad, bits)[1]


@pytest.mark.parametrize("is_complex", [False, True])
def test_residues_match_python_integers(is_complex, rng):
    plan = crt_plan(CRT_MODULI.stop - 1)
    rows = wide_rows(rng, (4, 14))
    scales, _ = row_scales(rows, plan.a_bits)
    got = residues(rows, scales, plan, is_complex)
    assert got.dtype == np.int8 and got.shape == (plan.count, 3 if is_complex else 1, 4, 7 if is_complex else 14)

    def symmetric(x, p):
        r = x % p
        return r - p if r > (p - 1) // 2 else r

    for i, row in enumerate(rows):
        integers = [int(Fraction(float(v)) * Fraction(2) ** int(scales[i])) for v in row]
        assert max(abs(x) for x in integers) < 2**80
        for index, p in enumerate(plan.moduli):
            if is_complex:
                re, im = integers[0::2], integers[1::2]
                expected = [[symmetric(x, p) for x in re], [symmetric(x, p) for x in im],
                            [symmetric(x + y, p) for x, y in zip(re, im)]]
            else:
                expected = [[symmetric(x, p) for x in integers]]
            assert got[index, :, i].tolist() == expected


def test_round_limbs_is_correct_rounding(rng):
    limbs = 5
    digits = rng.integers(-2**52, 2**52, (1, limbs, 400)).astype(np.float64)
    digits[0, 3:, :100] = 0  # shorter numbers, some below 2^62 (no window shift)
    digits[0, 1:, 100:150] = 0
    exponents = rng.integers(-300, 300, 400)
    # ties and near-ties: 2^53 + 1, 2^53 + 3, 2^100 + 2^47 (tie), 2^100 + 2^47 + 1, -(2^100 + 2^47)
    specials = [(2**53 + 1), (2**53 + 3), 2**100 + 2**47, 2**100 + 2**47 + 1, -(2**100 + 2**47), 0]
    for column, value in enumerate(specials):
        magnitude = abs(value)
        digits[0, :, column] = [np.sign(value) * ((magnitude >> (32 * j)) & (2**32 - 1)) for j in range(limbs)]
        exponents[column] = 0
    values = [sum(int(digits[0, j, c]) << (32 * j) for j in range(limbs)) for c in range(400)]
    got = round_limbs(digits.copy(), exponents)[0]
    expected = [float(Fraction(v) * Fraction(2) ** int(e)) for v, e in zip(values, exponents)]
    assert got.tolist() == expected
    assert got[:5].tolist() == [2.0**53, 2.0**53 + 4, 2.0**100, 2.0**100 + 2**48, -(2.0**100)]


# -- exactness -----------------------------------------------------------------------------
@pytest.mark.parametrize("m, gaussian", [(12, False), (20, False), (12, True), (22, True)])
@pytest.mark.parametrize("is_complex", [False, True])
def test_integer_inputs_give_the_correctly_rounded_exact_product(m, gaussian, is_complex, rng):
    """30-bit integers: nothing is truncated, so every output is the exact product rounded once
    (on either kind of moduli)."""
    def integers(shape):
        x = rng.integers(-2**30, 2**30, shape).astype(np.float64)
        return x + 1j * rng.integers(-2**30, 2**30, shape) if is_complex else x

    a, b = integers((5, 16)), integers((16, 4))
    plan = crt_plan(m, gaussian)
    assert (row_scales(a.view(np.float64) if is_complex else a, plan.a_bits)[0] >= 0).all()
    backend = gemm_backend.get(f"int8-{'g' if gaussian else ''}crt-{m}")
    c = backend.matmul(a, b)
    assert backend.last_call_info == {"scheme": "ozaki2", "moduli": m, "gaussian": gaussian}
    for i, row in enumerate(exact_product(a, b)):
        for j, (re, im) in enumerate(row):
            assert c[i, j].real == float(re) and (not is_complex or c[i, j].imag == float(im))
    assert not np.array_equal(c, a @ b)  # numpy rounds along the way, so it differs somewhere


def test_extreme_ranges_against_exact_fractions(rng):
    """Rows near 2^960 and of subnormals, columns spanning 2^-60..2^60: the bound holds against
    the exact product (where double-double is out of its range)."""
    a = wide_rows(rng, (5, 12)) + 1j * wide_rows(rng, (5, 12))
    b = seed_paper_matrix(rng, (12, 3), 4.0, True) * 2.0 ** rng.integers(-20, 20, 3)
    b[:, 1] *= 2.0**-30
    for m in (10, 20):
        c = crt(m).matmul(a, b)
        exact = exact_product(a, b)
        bound = error_bound(m, 12)
        for i in range(5):
            norm_a = exact_norm(a[i])
            for j in range(3):
                norm_b = exact_norm(b[:, j])
                for got, want in ((c[i, j].real, exact[i][j][0]), (c[i, j].imag, exact[i][j][1])):
                    allowed = UNIT_ROUNDOFF * abs(want) + (1 + UNIT_ROUNDOFF) * bound * norm_a * norm_b
                    assert abs(Fraction(got) - want) <= allowed * (1 + 1e-12) + Fraction(SMALLEST_SUBNORMAL)
    assert 0 < np.abs(crt(20).matmul(a[:1], b).real).min() < 2.0**-1022  # subnormal results were checked


# -- accuracy against double-double --------------------------------------------------------
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("phi", PHIS)
def test_error_falls_as_moduli_grow(phi, is_complex, rng):
    a = seed_paper_matrix(rng, (40, 48), phi, is_complex)
    b = seed_paper_matrix(rng, (48, 36), phi, is_complex)
    reference = matmul_dd(a, b)
    errors = [relative_error(crt(m).matmul(a, b), reference) for m in (8, 10, 12, 14)]
    assert errors[0] > 1e-10  # 8 moduli really do truncate
    for coarse, fine in zip(errors, errors[1:]):
        assert fine < coarse / 30  # two more moduli: about 8 more bits per operand
    # The scaling follows the row and column 2-norms, so entries far below them lose bits: the
    # seed paper's entrywise error reaches numpy's at 16 moduli for phi <= 2, at 18 for phi = 4.
    fp64_moduli = 16 if phi <= 2 else 18
    assert relative_error(crt(fp64_moduli).matmul(a, b), reference) <= relative_error(a @ b, reference)


@pytest.mark.parametrize("k", [1, 64, 1000])
@pytest.mark.parametrize("phi", PHIS)
def test_bound_is_met_on_seed_paper_inputs(phi, k, rng):
    a = seed_paper_matrix(rng, (30, k), phi, True)
    b = seed_paper_matrix(rng, (k, 20), phi, True)
    reference = matmul_dd(a, b)
    for m in (8, 11, 14, 17, 20):
        ratio, tightness = bound_ratios(crt(m).matmul(a, b), a, b, m, reference)
        assert ratio <= 1
        if m <= 11:  # where truncation dominates, the bound is within a factor 200 of the error
            assert tightness > 5e-3


def test_bound_is_met_on_wide_exponent_ranges(rng):
    a = seed_paper_matrix(rng, (24, 200), 4.0, True) * 2.0 ** rng.integers(-300, 300, (24, 1))
    a *= 2.0 ** rng.integers(-40, 40, a.shape)  # within rows too
    b = seed_paper_matrix(rng, (200, 16), 2.0, True) * 2.0 ** rng.integers(-300, 300, (1, 16))
    reference = matmul_dd(a, b)
    for m in (8, 12, 16, 20):
        assert bound_ratios(crt(m).matmul(a, b), a, b, m, reference)[0] <= 1


@pytest.mark.parametrize("is_complex", [False, True])
def test_long_inner_dimension(is_complex, rng):
    k = 1 << 16
    a = seed_paper_matrix(rng, (2, k), 1.0, is_complex)
    b = seed_paper_matrix(rng, (k, 3), 1.0, is_complex)
    reference = matmul_dd(a, b)
    for m in (10, 14, 18):
        assert bound_ratios(crt(m).matmul(a, b), a, b, m, reference)[0] <= 1
    assert relative_error(crt(18).matmul(a, b), reference) <= relative_error(a @ b, reference)


def test_inner_size_limit():
    c = crt(12).matmul(np.ones((1, MAX_INNER)), np.ones((MAX_INNER, 1)))
    assert c[0, 0] == MAX_INNER
    with pytest.raises(BackendError, match="inner size 131072 exceeds 131071"):
        crt(12).matmul(np.ones((1, MAX_INNER + 1)), np.ones((MAX_INNER + 1, 1)))


def test_moduli_for_target():
    for k in (4, 256, 1024, MAX_INNER):
        for target in (1e-6, 2.0**-53, 1e-18):
            m = moduli_for_target(target, k)
            assert error_bound(m, k) <= target
            assert m == CRT_MODULI.start or error_bound(m - 1, k) > target
    assert moduli_for_target(2.0**-53, 256) in (14, 15, 16)  # ~ FP64 needs 14-16 moduli
    assert moduli_for_target(2.0**-53, 4) <= moduli_for_target(2.0**-53, 1 << 16)
    assert moduli_for_target(1e-40, 256) is None
    for target in (1e-10, 1e-14):  # Gaussian moduli carry about 7 bits each: one or two more
        gaussian = moduli_for_target(target, 1024, gaussian=True)
        assert error_bound(gaussian, 1024, gaussian=True) <= target < error_bound(gaussian - 1, 1024, gaussian=True)
        assert moduli_for_target(target, 1024) <= gaussian <= moduli_for_target(target, 1024) + 2
    assert moduli_for_target(1e-40, 256, gaussian=True) is None
    for bad_target in (0.0, -1.0, float("nan")):
        with pytest.raises(BackendError, match="positive"):
            moduli_for_target(bad_target, 256)
    with pytest.raises(BackendError, match="inner size"):
        moduli_for_target(1e-10, MAX_INNER + 1)


# -- special values, determinism, dtypes ---------------------------------------------------
def test_zero_rows_and_columns(rng):
    a = seed_paper_matrix(rng, (6, 5), 1.0, True)
    b = seed_paper_matrix(rng, (5, 4), 1.0, True)
    a[2], b[:, 1] = 0, 0
    c = crt(14).matmul(a, b)
    assert not c[2].any() and not c[:, 1].any()
    assert bound_ratios(c, a, b, 14)[0] <= 1
    assert not crt(8).matmul(np.zeros((3, 4)), b[:4]).any()


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, requires_gpu])])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("operand", ["a", "b"])
def test_non_finite_input_raises(bad, operand, device):
    a, b = np.ones((3, 40)), np.ones((40, 2), complex)
    a[1, 33] = bad if operand == "a" else 1.0
    b[33, 1] = bad if operand == "b" else 1.0
    if device == "gpu":
        import cupy as cp

        a, b = cp.asarray(a), cp.asarray(b)
    with pytest.raises(BackendError, match=f"operand {operand} contains NaN or Inf"):
        crt(12).matmul(a, b)


def test_repeated_runs_and_tilings_give_identical_bits(rng):
    a = seed_paper_matrix(rng, (130, 70), 2.0, True)
    b = seed_paper_matrix(rng, (70, 45), 2.0, True)
    first = crt(13).matmul(a, b)
    assert same_bits(first, crt(13).matmul(a.copy(), b.copy()))
    tiled = crt(13, workspace_bytes=300_000)
    rows, columns = tiled._tile_sizes(130, 45, CrtLayout(tiled.plan, 70, True), on_gpu=False)
    assert rows < 130 and columns < 45  # several tiles both ways
    assert same_bits(first, tiled.matmul(a, b))


def test_tile_plans_stay_within_the_workspace(rng):
    """Random shapes, moduli and workspaces on both devices: the tile plan's memory (B's columns,
    then A's rows at that column count) fits the workspace, and large tiles are aligned."""
    for _ in range(300):
        m = int(rng.integers(8, 21))
        k, n_rows, n_cols = (int(v) for v in rng.integers(1, 40000, 3))
        workspace = int(rng.integers(1 << 22, 1 << 36))
        backend = crt(m, workspace_bytes=workspace)
        for on_gpu in (False, True):
            layout = CrtLayout(backend.plan, k, True)
            try:
                row_step, col_step = backend._tile_sizes(n_rows, n_cols, layout, on_gpu)
            except BackendError:
                continue  # one row and one column do not fit: reported, not tiled
            assert 1 <= row_step <= n_rows and 1 <= col_step <= n_cols
            used = col_step * layout.b_col_bytes(on_gpu) + row_step * layout.a_row_bytes(col_step, on_gpu)
            assert used <= workspace
            for step, total in ((row_step, n_rows), (col_step, n_cols)):
                assert step == total or step % TILE_ALIGNMENT == 0 or step < TILE_ALIGNMENT


def test_real_mixed_and_empty_inputs(rng):
    a = seed_paper_matrix(rng, (8, 6), 1.0, False)
    b = seed_paper_matrix(rng, (6, 5), 1.0, True)
    backend = crt(16)
    real = backend.matmul(a, b.real)
    assert real.dtype == np.float64 and bound_ratios(real, a, b.real, 16)[0] <= 1
    mixed = backend.matmul(a, b)
    assert mixed.dtype == np.complex128 and bound_ratios(mixed, a, b, 16)[0] <= 1
    assert backend.matmul(np.arange(6).reshape(2, 3), np.ones((3, 2), np.int32)).tolist() == [[3, 3], [12, 12]]
    assert backend.matmul(np.ones((0, 3)), np.ones((3, 2))).shape == (0, 2)
    assert not backend.matmul(np.ones((2, 0), complex), np.ones((0, 4))).any()
    assert backend.last_call_info == {"scheme": "ozaki2", "moduli": 16, "gaussian": False}


# -- construction --------------------------------------------------------------------------
def test_registry_names_and_options():
    for m in CRT_MODULI:
        backend = crt(m)
        assert isinstance(backend, OzakiCrtBackend) and backend.plan.count == m
        assert backend.name == f"int8-crt-{m}" and backend.options["moduli"] == m
    for name in ("int8-crt-7", "int8-crt-21"):
        with pytest.raises(BackendError, match="8..20"):
            gemm_backend.get(name)
    with pytest.raises(BackendError, match="takes no option rho"):
        gemm_backend.get("int8-crt-12", rho=1.0)
    for moduli in (7, 21, 12.0, True, "twelve"):
        with pytest.raises(BackendError, match="moduli must be"):
            OzakiCrtBackend(moduli)
    with pytest.raises(BackendError, match="too small"):
        crt(12, workspace_bytes=1000).matmul(np.ones((4, 64), complex), np.ones((64, 4)))
    assert any(row["name"] == "int8-crt-<m>" for row in gemm_backend.available())


# -- the engine's entry point --------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 8, 5), (40, 16, 1), (1, 4, 64), (3, 32, 4)])
def test_apply_batched_against_dd_and_chunked_in_place(shape, rng):
    n_left, k, n_right = shape
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    x = seed_paper_matrix(rng, shape, 1.0, True)
    rows = x.transpose(0, 2, 1).reshape(-1, k)
    reference = matmul_dd(rows, u.T)
    whole = crt(11)
    out = np.empty_like(x)
    whole.apply_batched(u, x, out)
    assert whole.last_call_info == {"scheme": "ozaki2", "moduli": 11, "gaussian": False}
    assert bound_ratios(out.transpose(0, 2, 1).reshape(-1, k), rows, u.T, 11, reference)[0] <= 1
    chunked = crt(11, workspace_bytes=whole.gate_workspace(k, 5))
    in_place = x.copy()
    chunked.apply_batched(u, in_place, in_place)
    assert same_bits(in_place, out)
    assert chunked.statistics()["calls"] == -(-n_left * n_right // chunked.chunk_columns(k, chunked.workspace_bytes)) > 1


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, requires_gpu])])
def test_apply_batched_in_place_on_rows_equals_the_gathered_columns(device, rng):
    """At R = 1 the columns are rows of the state, read and written in place without copies; the
    same columns laid out with R > 1 (gathered into a buffer) get the same bits, in several chunks."""
    k = 32
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    rows = seed_paper_matrix(rng, (24, k), 2.0, True)
    as_rows, as_columns = rows[:, :, None].copy(), np.ascontiguousarray(rows.T)[None]
    if device == "gpu":
        import cupy as cp

        u, as_rows, as_columns = cp.asarray(u), cp.asarray(as_rows), cp.asarray(as_columns)
    backend = crt(13, workspace_bytes=crt(13).gate_workspace(k, 5))
    backend.apply_batched(u, as_rows, as_rows)
    backend.apply_batched(u, as_columns, as_columns)
    as_rows, as_columns = (a.get() if device == "gpu" else a for a in (as_rows, as_columns))
    assert same_bits(as_rows[:, :, 0], as_columns[0].T)
    reference = matmul_dd(rows, u.T.get() if device == "gpu" else u.T)
    assert bound_ratios(as_rows[:, :, 0], rows, u.T.get() if device == "gpu" else u.T, 13, reference)[0] <= 1


def test_default_workspace_is_automatic(rng):
    """Fixed-size tiles of 1 GiB ran 0.34x cublas at 16384^3 (BENCHMARKS.md round 4): by default the
    workspace follows the free device memory at call time, and a fixed one is still honoured."""
    from gemm_backend.workspace import DEFAULT_WORKSPACE_BYTES, MIN_AUTO_WORKSPACE

    backend = crt(14)
    assert backend.workspace.automatic and backend.options["workspace_bytes"] == "auto"
    assert backend.workspace.reserved() == MIN_AUTO_WORKSPACE
    assert backend.workspace.for_call(on_gpu=False) == DEFAULT_WORKSPACE_BYTES
    fixed = crt(14, workspace_bytes=1 << 20)
    assert fixed.workspace.for_call(on_gpu=True) == 1 << 20 and fixed.options["workspace_bytes"] == 1 << 20
    a, b = seed_paper_matrix(rng, (20, 16), 1.0, True), seed_paper_matrix(rng, (16, 7), 1.0, True)
    assert same_bits(backend.matmul(a, b), fixed.matmul(a, b))
    from gemm_backend.native.zgemm import ZgemmBackend

    with pytest.raises(BackendError, match="workspace_bytes must be a positive integer"):
        ZgemmBackend(workspace_bytes=None)  # sizes its chunks from workspace_bytes alone: no automatic workspace


@pytest.mark.gpu
@requires_gpu
def test_gpu_automatic_workspace_follows_free_memory():
    import cupy as cp

    from gemm_backend.workspace import AUTO_WORKSPACE_FRACTION

    backend = crt(14)
    free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    assert abs(backend.workspace.for_call(on_gpu=True) - AUTO_WORKSPACE_FRACTION * free) < 0.05 * free



@pytest.mark.gpu
@requires_gpu
def test_gpu_out_of_memory_in_cached_blocks_redoes_the_tiles_with_the_cache_released(rng, monkeypatch):
    """A tile allocation that fails in the pool's cached blocks is retried once with the cache
    given back and the workspace measured again; the result is the same bits as a clean call."""
    import cupy as cp

    backend = crt(15)
    a, b = rng.standard_normal((96, 80)) + 1j * rng.standard_normal((96, 80)), rng.standard_normal((80, 40)) + 0j
    expected = cp.asnumpy(backend.matmul(cp.asarray(a), cp.asarray(b)))
    original, calls = type(backend)._multiply_tiles, []

    def fail_once(self, *args):  # and always with an explicit workspace
        calls.append(args[-1])
        if len(calls) == 1 or not self.workspace.automatic:
            raise cp.cuda.memory.OutOfMemoryError(1 << 40, 0)
        return original(self, *args)

    monkeypatch.setattr(type(backend), "_multiply_tiles", fail_once)
    result = cp.asnumpy(backend.matmul(cp.asarray(a), cp.asarray(b)))
    assert np.array_equal(result.view(np.uint64), expected.view(np.uint64))
    assert len(calls) == 2
    calls.clear()
    with pytest.raises(MemoryError):  # an explicit workspace is the caller's: no second try
        crt(15, workspace_bytes=1 << 24).matmul(cp.asarray(a), cp.asarray(b))
    assert len(calls) == 1


def test_apply_batched_chunks_fit_the_workspace():
    """A chunk of apply_batched takes as many state columns as the workspace holds beside the
    gate's residues, and a workspace that holds none is a clear error before any work."""
    for m in (8, 20):
        for k in (2, 32, 1024):
            backend = crt(m)
            for columns in (1, 7, 4096):
                workspace = backend.gate_workspace(k, columns)
                assert backend.chunk_columns(k, workspace) == columns
                per_column = backend.gate_workspace(k, 2) - backend.gate_workspace(k, 1)
                assert backend.chunk_columns(k, workspace + per_column - 1) == columns
            with pytest.raises(BackendError, match="too small for int8-crt.* raise workspace_bytes"):
                backend.chunk_columns(k, backend.gate_workspace(k, 1) - 1)
    u, x = np.eye(4, dtype=complex), np.ones((10, 4, 1), complex)
    with pytest.raises(BackendError, match="too small"):
        crt(9, workspace_bytes=1000).apply_batched(u, x, x)
    assert (x == 1).all()


@pytest.mark.parametrize("n_left, n_right, most", [(3, 32, 50), (1, 1024, 300), (64, 4, 7), (5, 8, 1), (2, 2, 1000)])
def test_in_place_chunks_cover_every_column_once_as_the_gathered_ones(n_left, n_right, most):
    """The GPU's in-place chunks of an (L, K, R) view (apply_at's kernels) are apply_gate's
    gathered chunks (iter_column_chunks: the same calls counted) as runs of column indices l R + r,
    and apply_at's own chunks of consecutive columns: each column once, at most `most` a chunk."""
    from gemm_backend.arrays import iter_column_chunks
    from gemm_backend.ozaki.crt_backend import _consecutive_chunks, _view_chunks
    from gemm_backend.workspace import even_step

    n_columns = n_left * n_right
    chunks = list(_view_chunks(n_left, n_right, most))
    gathered = list(iter_column_chunks(n_left, n_right, even_step(n_columns, most)))
    assert len(chunks) == len(gathered)
    for (first, count), (ls, rs) in zip(chunks, gathered):
        indices = (np.arange(n_left)[ls, None] * n_right + np.arange(n_right)[None, rs]).ravel()
        assert list(indices) == list(range(first, first + count)) and count <= most
    for listed in (chunks, list(_consecutive_chunks(n_columns, even_step(n_columns, most)))):
        covered = np.concatenate([np.arange(first, first + count) for first, count in listed])
        assert sorted(covered) == list(range(n_columns)) and max(count for _, count in listed) <= most


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, requires_gpu])])
@pytest.mark.parametrize("operand", ["gate", "state"])
def test_apply_batched_non_finite_input_raises(operand, device, rng):
    """NaN in the gate raises before the state is touched; Inf in the state raises too (on the GPU
    after the last chunk: it checks once per call)."""
    k = 16
    u, x = seed_paper_matrix(rng, (k, k), 1.0, True), seed_paper_matrix(rng, (30, k, 2), 1.0, True)
    if operand == "gate":
        u[3, 5] = np.nan
    else:
        x[2, 7, 1] = np.inf
    original = x.copy()
    if device == "gpu":
        import cupy as cp

        u, x = cp.asarray(u), cp.asarray(x)
    backend = crt(12, workspace_bytes=crt(12).gate_workspace(k, 8))
    match = "operand b contains NaN" if operand == "gate" else "operand a contains NaN or Inf"
    with pytest.raises(BackendError, match=match):
        backend.apply_batched(u, x, x)
    if operand == "gate":
        assert same_bits(x.get() if device == "gpu" else x, original)


@pytest.mark.gpu
@requires_gpu
def test_gpu_apply_batched_holds_its_workspace_and_no_more(rng):
    """The memory cupy's pool holds after a gate in many chunks grows by the workspace at most
    (B's residues, the gathered columns and one scratch reused by every chunk), not by a chunk's
    arrays allocated anew beside cached ones of other sizes; and a small state takes buffers
    for its own columns, not the workspace's."""
    import cupy as cp

    k = 256
    backend = crt(16)
    workspace = backend.gate_workspace(k, 3000)
    backend = crt(16, workspace_bytes=workspace)
    u = cp.asarray(seed_paper_matrix(rng, (k, k), 1.0, True))
    x = cp.asarray(seed_paper_matrix(rng, (5, k, 4096), 1.0, True))
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    before = pool.total_bytes()
    backend.apply_batched(u, x, x)
    cp.cuda.Device().synchronize()
    assert backend.statistics()["calls"] >= 7
    assert pool.total_bytes() - before <= workspace + (1 << 20)
    small = cp.asarray(seed_paper_matrix(rng, (2, k, 3), 1.0, True))  # 6 columns: buffers for 6, not 3000
    pool.free_all_blocks()
    before = pool.total_bytes()
    crt(16).apply_batched(u, small, small)  # the automatic workspace: most of the free memory
    assert pool.total_bytes() - before <= backend.gate_workspace(k, 6) + (1 << 20)


@pytest.mark.parametrize("m", [10, 16])
def test_brickwork_matches_cublas_within_the_bound(m):
    """Per gate, each output part is off by at most u |c| + eps(m, K) ||x_group|| (the gate's
    rows have norm 1), so the state's 2-norm error grows by at most
    sqrt(2K) (1 + u) eps + sqrt(2) u per gate; numpy's own rounding adds at most 2 K u per gate."""
    circuit = brickwork(9, 3, 4, seed=5)
    n_gates, dim = len(circuit.gates), 8
    crt_result = Simulator(backend=f"int8-crt-{m}", device="cpu", progress=False).run(circuit)
    native = Simulator(backend="cublas", device="cpu", progress=False).run(circuit)
    per_gate = math.sqrt(2 * dim) * (1 + UNIT_ROUNDOFF) * error_bound(m, dim) + math.sqrt(2) * UNIT_ROUNDOFF
    tolerance = n_gates * (per_gate + 2 * dim * UNIT_ROUNDOFF)
    difference = float(np.linalg.norm(crt_result.state_vector() - native.state_vector()))
    assert difference <= tolerance
    if m == 10:
        assert difference > tolerance * 1e-2  # the truncation is visible, the tolerance not vacuous
    assert all(info["scheme"] == "ozaki2" and info["moduli"] == m for info in crt_result.gate_info)


# -- GPU: the same bits as the CPU ---------------------------------------------------------
@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("m", [8, 13, 16, 20])
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("shape", [(300, 37, 29), (64, 64, 64), (5, 1, 3), (2000, 32, 32), (7, 1000, 9)])
def test_gpu_matches_cpu_bit_for_bit(m, is_complex, shape, rng):
    import cupy as cp

    rows, k, n = shape
    a = seed_paper_matrix(rng, (rows, k), 4.0, is_complex)
    a[1], a[3], a[4] = 0, a[3] * 2.0**-1060, a[4] * 2.0**900  # zero, subnormal and huge rows
    b = seed_paper_matrix(rng, (k, n), 4.0, is_complex)
    expected = crt(m).matmul(a, b)
    got = crt(m).matmul(cp.asarray(a), cp.asarray(b))
    assert isinstance(got, cp.ndarray) and same_bits(got.get(), expected)


@pytest.mark.gpu
@requires_gpu
def test_gpu_tiles_long_k_and_subnormal_results_match_cpu(rng):
    import cupy as cp

    a = seed_paper_matrix(rng, (513, 200), 2.0, True) * 2.0**-540
    b = seed_paper_matrix(rng, (200, 150), 2.0, True) * 2.0**-530  # products near 2^-1070
    backend = crt(15, workspace_bytes=2_000_000)
    expected = backend.matmul(a, b)
    assert np.abs(expected).min() < 2.0**-1022  # some results are subnormal
    assert same_bits(backend.matmul(cp.asarray(a), cp.asarray(b)).get(), expected)
    a = seed_paper_matrix(rng, (3, 70_001), 1.0, True)  # k not a multiple of 16: padded residues
    b = seed_paper_matrix(rng, (70_001, 5), 1.0, True)
    assert same_bits(crt(18).matmul(cp.asarray(a), cp.asarray(b)).get(), crt(18).matmul(a, b))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("m", [9, 15])
@pytest.mark.parametrize("shape", [(64, 32, 1), (16, 64, 4), (3, 16, 32), (4096, 8, 1), (2, 256, 32)])
def test_gpu_apply_batched_matches_cpu(m, shape, rng):
    """(L, K, R) views with R = 1, 4, 32, in several chunks."""
    workspace = crt(m).gate_workspace(shape[1], 50)
    check_gpu_apply_batched_matches_cpu(lambda: crt(m, workspace_bytes=workspace), shape, rng)


@pytest.mark.parametrize("rows, k, first, columns_fastest, reduced, parts, limbs, variant", [
    (100, 512, 0, False, True, 2, 4, "mma"),      # Gaussian, 4 limbs: 32 amplitudes a warp
    (100, 512, 0, False, True, 3, 4, "quads"),    # Karatsuba's three parts
    (100, 512, 0, False, True, 2, 5, "quads"),    # 18 Gaussian moduli and more: five limbs
    (100, 16, 0, False, True, 2, 4, "quads"),     # K below a warp's tile
    (64, 8, 32, True, True, 2, 3, "mma"),         # columns-fastest, chunks on tile boundaries
    (64, 8, 36, True, True, 2, 3, "quads"),       # a chunk starting off a tile boundary
    (66, 8, 0, True, True, 2, 3, "one"),          # 4 does not divide the chunk
    (64, 512, 0, False, False, 2, 4, "one"),      # int32 products
])
def test_gate_reconstruction_kernel_choice(rows, k, first, columns_fastest, reduced, parts, limbs, variant):
    assert gate_reconstruct_variant(rows, k, first, columns_fastest, reduced, parts, limbs) == variant


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", ["int8-gcrt-16", "int8-gcrt-17", "int8-crt-13"])
@pytest.mark.parametrize("targets", [(13, 0, 5, 1, 9), (3, 7, 2), (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (12,)])
def test_gpu_apply_scattered_takes_any_targets_in_place(name, targets, rng):
    """apply_scattered: the columns at any targets read and written where they sit, in chunks,
    with the bits of the CPU's apply_batched on the gathered columns (zero, subnormal and huge
    columns among them); NaN in the state raises after the gate."""
    import cupy as cp

    k = 1 << len(targets)
    state = seed_paper_matrix(rng, (1 << 14,), 4.0, True)

    def scale_columns(columns):
        columns[1], columns[2], columns[3] = 0.0, columns[2] * 2.0**-1040, columns[3] * 2.0**700
        return columns

    state = at_targets(state, targets, scale_columns)
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    backend = gemm_backend.get(name, workspace_bytes=gemm_backend.get(name).gate_workspace(k, 5 * TILE_ALIGNMENT))
    cpu = gemm_backend.get(name, workspace_bytes=backend.workspace_bytes)
    expected = at_targets(state, targets, lambda columns: batched_on_columns(cpu, u, columns))
    on_gpu = cp.asarray(state)
    assert backend.takes_scattered(k, True) and not backend.takes_scattered(k, False)
    assert backend.apply_scattered(cp.asarray(u), on_gpu, targets)
    assert same_bits(on_gpu.get(), expected) and backend.statistics()["calls"] == -(-state.size // k // (5 * TILE_ALIGNMENT))
    on_gpu[7] = np.nan
    with pytest.raises(BackendError, match="operand a contains NaN or Inf"):
        backend.apply_scattered(cp.asarray(u), on_gpu, targets)


@pytest.mark.gpu
@requires_gpu
def test_gpu_apply_batched_on_strided_views_matches_cpu(rng):
    """A view that is not C-contiguous: its columns gathered, the CPU's bits."""
    import cupy as cp

    k = 32
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    whole = seed_paper_matrix(rng, (40, k, 16), 1.0, True)
    backend = crt(11, workspace_bytes=crt(11).gate_workspace(k, 100))
    expected = whole.copy()
    backend.apply_batched(u, whole[:, :, 3:11], expected[:, :, 3:11])
    on_gpu = cp.asarray(whole)
    backend.apply_batched(cp.asarray(u), on_gpu[:, :, 3:11], on_gpu[:, :, 3:11])
    assert same_bits(on_gpu.get(), expected)


@pytest.mark.gpu
@requires_gpu
def test_gpu_brickwork_simulation_matches_cpu():
    circuit = brickwork(20, 4, 2, seed=11)
    results = gpu_run_matches_cpu(circuit, "int8-crt-14")
    assert [g["moduli"] for g in results["gpu"].gate_info] == [14] * len(circuit.gates)
