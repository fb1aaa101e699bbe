"""The INT8 Ozaki backend (int8-<s>, int8-auto) against double-double and exact references."""
from fractions import Fraction

import numpy as np
import pytest

import gemm_backend
from circuits import haar_unitary
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.ozaki.backend import OzakiBackend
from gemm_backend.ozaki.plan import plan_products
from gemm_backend.ozaki.tiles import tile_sizes
from gemm_backend.ozaki.split import choose_splits, new_histogram, row_exponents, split_rows

from .helpers import same_bits, seed_paper_matrix

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")
UNIT_ROUNDOFF = 2.0**-53
PHIS = (0.1, 1.0, 2.0, 4.0)


def relative_error(c, reference):
    """Mean over entries of |c - (hi + lo)| / |hi + lo| (seed paper eq. 7), nonzero entries only."""
    hi, lo = reference
    scale = np.abs(hi)
    nonzero = scale > 0
    return float(np.mean(np.abs((c - hi) - lo)[nonzero] / scale[nonzero]))


def exact_product(a, b):
    """A @ B in exact rational arithmetic, as nested lists of (real, imag) Fractions."""
    a, b = np.asarray(a, complex), np.asarray(b, complex)

    def frac(z):
        return Fraction(z.real), Fraction(z.imag)

    out = []
    for row in a:
        out_row = []
        for column in b.T:
            re = sum(frac(x)[0] * frac(y)[0] - frac(x)[1] * frac(y)[1] for x, y in zip(row, column))
            im = sum(frac(x)[0] * frac(y)[1] + frac(x)[1] * frac(y)[0] for x, y in zip(row, column))
            out_row.append((re, im))
        out.append(out_row)
    return out


# -- the references ----------------------------------------------------------------------
def test_dd_reference_and_ozaki_against_exact_fractions(rng):
    a = seed_paper_matrix(rng, (3, 6), 2.0, True)
    b = seed_paper_matrix(rng, (6, 4), 2.0, True)
    exact = exact_product(a, b)
    hi, lo = matmul_dd(a, b)
    c = gemm_backend.get("int8-18").matmul(a, b)
    magnitude = np.abs(a) @ np.abs(b)  # scale of each entry's rounding errors
    for i in range(3):
        for j in range(4):
            for part in (0, 1):
                pick = (lambda z: z.real) if part == 0 else (lambda z: z.imag)
                dd_error = abs(Fraction(pick(hi[i, j])) + Fraction(pick(lo[i, j])) - exact[i][j][part])
                assert dd_error <= 1e-30 * magnitude[i, j]
                assert abs(Fraction(pick(c[i, j])) - exact[i][j][part]) <= 2 * UNIT_ROUNDOFF * magnitude[i, j]


def test_digits_reconstruct_the_rounded_row_exactly(rng):
    """Balanced 8-bit digits in [-128, 127] whose base-256 value is rint(x 2^(s b - e)) exactly;
    |x - that| <= 2^(e - s b - 1), and every bit is kept once the digits reach the last one."""
    x = np.concatenate([seed_paper_matrix(rng, (3, 9), 4.0, False),
                        np.array([[2.0**-1074, -3 * 2.0**-1070, 2.0**-1022, 0, 0, 0, 0, 0, 0.0]])])
    bits = 8
    exps, finite = row_exponents(x, bits)
    assert finite and exps[3] == -1020  # max 2^-1022 = 0.5 * 2^-1021: one step above the frexp exponent
    for n_slices in (3, 9, 18):
        digits = split_rows(x, exps, n_slices, bits)
        assert digits.dtype == np.int8
        for i, row in enumerate(x):
            for j, value in enumerate(row):
                integer = sum(int(d) << (bits * (n_slices - 1 - p)) for p, d in enumerate(digits[i, :, j]))
                exact = Fraction(value) * Fraction(2) ** (n_slices * bits - int(exps[i]))
                assert abs(Fraction(integer) - exact) <= Fraction(1, 2)
                if int(exps[i]) - np.frexp(value)[1] + 53 <= n_slices * bits:
                    assert Fraction(integer) == exact  # all significant bits fit in the digits


# -- accuracy against double-double -------------------------------------------------------
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("phi", PHIS)
def test_error_falls_as_splits_grow(phi, is_complex, rng):
    a = seed_paper_matrix(rng, (40, 48), phi, is_complex)
    b = seed_paper_matrix(rng, (48, 36), phi, is_complex)
    reference = matmul_dd(a, b)
    errors = [relative_error(gemm_backend.get(f"int8-{s}").matmul(a, b), reference) for s in (3, 4, 5, 6)]
    assert errors[0] > 1e-9  # 3 digits of 8 bits really do truncate
    for coarse, fine in zip(errors, errors[1:]):
        assert fine < coarse / 30  # 8 more bits per digit


@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("phi", PHIS)
def test_accuracy_against_numpy(phi, is_complex, rng):
    """s >= 13 with phi <= 1 no worse than numpy's FP64 matmul; int8-auto with the seed paper's
    rule (rho = 0: no bit lost) within 2x of it for every phi (both measured against
    double-double). The default error-target rule is checked in test_ozaki_bound.py."""
    a = seed_paper_matrix(rng, (40, 64), phi, is_complex)
    b = seed_paper_matrix(rng, (64, 36), phi, is_complex)
    reference = matmul_dd(a, b)
    numpy_error = relative_error(a @ b, reference)
    if phi <= 1:
        for splits in (13, 18):
            assert relative_error(gemm_backend.get(f"int8-{splits}").matmul(a, b), reference) <= numpy_error
    auto = gemm_backend.get("int8-auto", rho=0.0)
    assert relative_error(auto.matmul(a, b), reference) <= 2 * numpy_error
    assert auto.last_call_info["splits"] in range(3, 19)


def test_cancellation_a_times_its_inverse(rng):
    """Seed paper 4.2.2: off-diagonal entries of A A^-1 cancel to ~1e-16; the slices carry the
    leading bits exactly, so the Ozaki product is far more accurate there than FP64 GEMM."""
    a = rng.standard_normal((48, 48))
    a_inverse = np.linalg.solve(a, np.eye(48))
    reference = matmul_dd(a, a_inverse)
    numpy_error = relative_error(a @ a_inverse, reference)
    errors = {s: relative_error(gemm_backend.get(f"int8-{s}").matmul(a, a_inverse), reference) for s in (5, 7, 11)}
    assert errors[5] > errors[7] > errors[11]
    assert errors[11] < numpy_error / 10
    assert relative_error(gemm_backend.get("int8-auto", rho=0.0).matmul(a, a_inverse), reference) < numpy_error / 10


@pytest.mark.parametrize("is_complex", [False, True])
def test_long_inner_dimension(is_complex, rng):
    """k = 2^17: the embedded complex product has inner size 2^18, so 7-bit digits and one digit
    product per int32 GEMM; real ones (inner 2^17) keep 7 bits and three products per GEMM."""
    k = 1 << 17
    a = seed_paper_matrix(rng, (2, k), 1.0, is_complex)
    b = seed_paper_matrix(rng, (k, 3), 1.0, is_complex)
    plan = plan_products(13, 2 * k if is_complex else k)
    assert (plan.bits, max(g.length for g in plan.groups)) == ((7, 1) if is_complex else (7, 3))
    reference = matmul_dd(a, b)
    assert relative_error(gemm_backend.get("int8-13").matmul(a, b), reference) <= relative_error(a @ b, reference)


@pytest.mark.parametrize("k", [1, 37, 1000])
def test_inner_sizes_not_powers_of_two(k, rng):
    a = seed_paper_matrix(rng, (9, k), 1.0, True)
    b = seed_paper_matrix(rng, (k, 7), 1.0, True)
    reference = matmul_dd(a, b)
    assert relative_error(gemm_backend.get("int8-13").matmul(a, b), reference) <= max(
        relative_error(a @ b, reference), 2 * UNIT_ROUNDOFF)


# -- special values -----------------------------------------------------------------------
def test_zero_rows_and_columns(rng):
    a = seed_paper_matrix(rng, (6, 5), 1.0, True)
    b = seed_paper_matrix(rng, (5, 4), 1.0, True)
    a[2], b[:, 1] = 0, 0
    c = gemm_backend.get("int8-13").matmul(a, b)
    assert not c[2].any() and not c[:, 1].any()
    rest = np.ones(c.shape, bool)
    rest[2], rest[:, 1] = False, False
    assert np.abs(c - a @ b)[rest].max() <= 1e-15 * np.abs(a @ b)[rest].max()
    assert not gemm_backend.get("int8-auto").matmul(np.zeros((3, 4)), b[:4]).any()
    assert not gemm_backend.get("int8-auto", rho=0.0).matmul(np.zeros((3, 4)), b[:4]).any()


def test_exact_powers_of_two_and_range_ends():
    """Row maxima that are exact powers of two (up to 2^1023) must not overflow the slices, and
    products that fit a double come out exact."""
    a = np.array([[2.0**1023, -2.0**1000], [1.0, 0.5], [-0.25, 2.0**-20], [2.0**-1022, 3 * 2.0**-1052]])
    b = np.array([[0.5, -1.0], [2.0**-20, 4.0]])
    exact = exact_product(a, b)
    c = gemm_backend.get("int8-18").matmul(a, b)
    assert c.dtype == np.float64
    for i in range(4):
        for j in range(2):
            assert Fraction(c[i, j]) == exact[i][j][0]


def test_subnormal_entries():
    """All-subnormal rows are scaled up exactly; results in the subnormal range are rounded once."""
    tiny = 2.0**-1074
    a = np.array([[3e-320, -1e-321, 5 * tiny], [2.0**600, 0.0, 0.0], [1.0, 3 * tiny, 0.0]])
    b = np.array([[1.5, 3 * tiny], [-2.0, 0.0], [7.0, 0.0]])
    exact = exact_product(a, b)
    c = gemm_backend.get("int8-18").matmul(a, b)
    for i in range(3):
        for j in range(2):
            error = abs(Fraction(c[i, j]) - exact[i][j][0])
            assert error <= Fraction(tiny) / 2 + abs(exact[i][j][0]) * Fraction(UNIT_ROUNDOFF)
    assert c[1, 1] == 2.0**600 * 3 * tiny  # a subnormal column scale, exact product


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("operand", ["a", "b"])
def test_non_finite_input_raises(bad, operand):
    a, b = np.ones((3, 4)), np.ones((4, 2), complex)
    (a if operand == "a" else b)[1, 1] = bad
    for name in ("int8-7", "int8-auto"):
        with pytest.raises(BackendError, match=f"operand {operand} contains NaN or Inf"):
            gemm_backend.get(name).matmul(a, b)


# -- determinism, tiles, dtypes -----------------------------------------------------------
def test_repeated_runs_and_tilings_give_identical_bits(rng):
    a = seed_paper_matrix(rng, (130, 70), 2.0, True)
    b = seed_paper_matrix(rng, (70, 45), 2.0, True)
    for name in ("int8-11", "int8-auto"):
        first = gemm_backend.get(name).matmul(a, b)
        assert same_bits(first, gemm_backend.get(name).matmul(a.copy(), b.copy()))
        tiled = gemm_backend.get(name, workspace_bytes=300_000)
        rows, columns = tile_sizes(130, 45, 2, plan_products(11, 140), tiled.workspace_bytes)
        assert rows < 130 and columns < 45  # several tiles both ways
        assert same_bits(first, tiled.matmul(a, b))


def test_real_and_mixed_inputs(rng):
    a = seed_paper_matrix(rng, (8, 6), 1.0, False)
    b = seed_paper_matrix(rng, (6, 5), 1.0, True)
    backend = gemm_backend.get("int8-13")
    real = backend.matmul(a, b.real)
    assert real.dtype == np.float64
    assert relative_error(real, matmul_dd(a, b.real)) < 4 * UNIT_ROUNDOFF
    mixed = backend.matmul(a, b)
    assert mixed.dtype == np.complex128
    assert relative_error(mixed, matmul_dd(a, b)) < 4 * UNIT_ROUNDOFF
    assert backend.matmul(np.arange(6).reshape(2, 3), np.ones((3, 2), np.int32)).tolist() == [[3, 3], [12, 12]]


def test_empty_products():
    backend = gemm_backend.get("int8-auto")
    assert backend.matmul(np.ones((0, 3)), np.ones((3, 2))).shape == (0, 2)
    assert not backend.matmul(np.ones((2, 0), complex), np.ones((0, 4))).any()
    assert backend.last_call_info["splits"] == 3


@pytest.mark.parametrize("a_shape, b_shape, message", [
    ((3, 4), (5, 2), "inner sizes differ"),
    ((3,), (3, 2), "2-D matrix"),
    ((2, 2, 2), (2, 2), "2-D matrix"),
])
def test_bad_shapes(a_shape, b_shape, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.get("int8-5").matmul(np.ones(a_shape), np.ones(b_shape))


def test_bad_dtype():
    with pytest.raises(BackendError, match="real or complex numbers"):
        gemm_backend.get("int8-5").matmul(np.array([["a"]]), np.ones((1, 1)))


# -- auto mode ------------------------------------------------------------------------------
def test_choose_splits_rule():
    """Average loss max(0, needed - s b) over the counted elements, against rho."""
    histogram = new_histogram(np)
    histogram[53], histogram[70] = 10, 10  # losses at b = 7: s = 8 -> 7 bits average, 9 -> 3.5, 10 -> 0
    for rho, splits in [(0.0, 10), (3.4, 10), (3.5, 9), (6.9, 9), (7.0, 8)]:
        assert choose_splits(histogram, 7, rho, range(3, 19)) == splits
    assert choose_splits(new_histogram(np), 7, 0.0, range(3, 19)) == 3  # nothing to lose
    histogram[200] = 1
    assert choose_splits(histogram, 7, 0.0, range(3, 19)) is None


def test_auto_splits_shrink_as_rho_grows(rng):
    a = seed_paper_matrix(rng, (32, 32), 2.0, True)
    b = seed_paper_matrix(rng, (32, 32), 2.0, True)
    chosen = []
    for rho in (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0):
        backend = gemm_backend.get("int8-auto", rho=rho)
        backend.matmul(a, b)
        chosen.append(backend.last_call_info["splits"])
    assert chosen == sorted(chosen, reverse=True) and chosen[0] >= chosen[-1] + 2
    # rho = 0: no element loses a bit, so the result equals the fixed-s product with that s
    assert same_bits(gemm_backend.get("int8-auto", rho=0.0).matmul(a, b),
                     gemm_backend.get(f"int8-{chosen[0]}").matmul(a, b))


def test_auto_falls_back_to_native_when_no_split_count_suffices():
    a = np.array([[1.0, 1e-300], [1e-290, 1.0]])
    b = np.array([[2.0, 1.0], [3.0, -1.0]])
    backend = gemm_backend.get("int8-auto", rho=0.0)
    assert same_bits(backend.matmul(a, b), a @ b)
    assert backend.last_call_info == {"splits": None, "fallback": "zgemm"}
    assert backend.statistics()["fallbacks"] == 1 and backend.statistics()["splits_histogram"] == {}
    # a generous rho accepts the loss instead
    lenient = gemm_backend.get("int8-auto", rho=2000.0)
    lenient.matmul(a, b)
    assert lenient.last_call_info["splits"] == 3 and lenient.last_call_info["rule"] == "rho"


# -- construction -------------------------------------------------------------------------
def test_registry_names():
    for splits in range(3, 19):
        backend = gemm_backend.get(f"int8-{splits}")
        assert isinstance(backend, OzakiBackend) and backend.fixed_splits == splits
        assert backend.name == f"int8-{splits}" and backend.options["splits"] == splits
    auto = gemm_backend.get("int8-auto", rho=1.5)
    assert auto.fixed_splits is None and auto.rho == 1.5 and auto.options["rho"] == 1.5 and auto.rule == "rho"
    default = gemm_backend.get("int8-auto")
    assert default.rho is None and default.rule == "fp64" and default.target_error is None
    assert default.bound == "fp64" and default.options["bound"] == "fp64"
    worst_case = gemm_backend.get("int8-auto", bound="worst-case")
    assert worst_case.rule == "target" and worst_case.target_error is None and worst_case.large_gates == "auto"
    assert gemm_backend.get("int8-auto", target_error=1e-10).bound is None
    for name in ("int8-2", "int8-19"):
        with pytest.raises(BackendError, match="3..18"):
            gemm_backend.get(name)


def test_bad_options():
    with pytest.raises(BackendError, match="backend .int8-9. takes no option rho"):
        gemm_backend.get("int8-9", rho=0.5)
    with pytest.raises(BackendError, match="rho applies only to int8-auto"):
        OzakiBackend(9, rho=0.0)
    for rho in (-1.0, float("nan"), float("inf"), "1"):
        with pytest.raises(BackendError, match="rho must be"):
            OzakiBackend("auto", rho=rho)
    for splits in (2, 19, 9.0, True, "nine"):
        with pytest.raises(BackendError, match="splits must be"):
            OzakiBackend(splits)
    with pytest.raises(BackendError, match="workspace_bytes"):
        gemm_backend.get("int8-auto", workspace_bytes=0)
    with pytest.raises(BackendError, match="bound must be 'fp64' or 'worst-case', got 'loose'"):
        gemm_backend.get("int8-auto", bound="loose")
    for exclusive in ({"rho": 0.0}, {"target_error": 1e-10}):
        with pytest.raises(BackendError, match="bound applies only to int8-auto without rho or target_error"):
            gemm_backend.get("int8-auto", bound="fp64", **exclusive)
    with pytest.raises(BackendError, match="backend .int8-9. takes no option bound"):
        gemm_backend.get("int8-9", bound="fp64")
    with pytest.raises(BackendError, match="too small"):
        gemm_backend.get("int8-13", workspace_bytes=1000).matmul(np.ones((4, 64), complex), np.ones((64, 4)))


# -- the engine's entry point -------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 8, 5), (40, 16, 1), (1, 4, 64), (3, 128, 2)])
def test_apply_batched_equals_dense_product(shape, rng):
    n_left, k, n_right = shape
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    x = seed_paper_matrix(rng, shape, 1.0, True)
    dense = np.einsum("ij,ljr->lir", u, x)
    rows = x.transpose(0, 2, 1).reshape(-1, k)
    hi, lo = matmul_dd(rows, u.T)
    reference = tuple(t.reshape(n_left, n_right, k).transpose(0, 2, 1) for t in (hi, lo))
    whole = gemm_backend.get("int8-13")
    out = np.empty_like(x)
    whole.apply_batched(u, x, out)
    assert relative_error(out, reference) <= relative_error(dense, reference) + 2 * UNIT_ROUNDOFF
    info = whole.last_call_info
    assert (info["splits_state"], info["splits_gate"], info["top"], info["kernel"]) == (13, 13, 14, "tiles")
    chunked = gemm_backend.get("int8-13", workspace_bytes=4 * whole.workspace_bytes_per_row(k, k) + (1 << 20))
    in_place = x.copy()
    chunked.apply_batched(u, in_place, in_place)
    assert same_bits(in_place, out)  # chunking changes nothing for a fixed plan
    assert chunked.statistics()["splits_histogram"] == {13: 1} and chunked.statistics()["calls"] == 1


@pytest.mark.parametrize("bound, rule", [("fp64", "fp64"), ("worst-case", "target")])
def test_apply_batched_plans_from_the_gate_alone(bound, rule, rng):
    """The default rule and the worst-case target look at the gate only: any state gets the same
    plan, and a prepared gate is not planned again."""
    u = seed_paper_matrix(rng, (16, 16), 1.0, True)
    backend = gemm_backend.get("int8-auto", bound=bound)
    infos = []
    for scale in (1.0, 1e-200):
        x = seed_paper_matrix(rng, (8, 16, 4), 4.0, True) * scale
        backend.apply_batched(u, x, x)
        infos.append(backend.last_call_info)
    assert infos[0] == infos[1] and infos[0]["rule"] == rule
    backend.prepare(u)
    assert backend._prepared[id(u)][1].plan.describe() == backend.gate_plan(u)[0].describe()
    backend.finish_run()
    assert not backend._prepared


@pytest.mark.parametrize("target_error", [None, 1e-10])
def test_large_gates_on_ozaki2(target_error, rng):
    """With large_gates="ozaki2", gates above the fused kernel's K = 64 run Ozaki-II with the
    fewest moduli meeting the same target (target_error, or gamma_n with bound="worst-case"), on
    Gaussian moduli (two INT8 products each, against three: cheaper at these counts): the bits of
    int8-gcrt-<m>, and an error within its bound."""
    from gemm_backend.ozaki.crt import error_bound, moduli_for_target
    from gemm_backend.ozaki.bound import fp64_gemm_bound

    k = 128
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    x = seed_paper_matrix(rng, (3, k, 4), 1.0, True)
    rule = {"target_error": target_error} if target_error else {"bound": "worst-case"}
    backend = gemm_backend.get("int8-auto", large_gates="ozaki2", **rule)
    backend.prepare(u)  # no Ozaki-I plan is made for it
    assert id(u) not in backend._prepared
    out = np.empty_like(x)
    backend.apply_batched(u, x, out)
    target = target_error or fp64_gemm_bound(2 * k)
    moduli = moduli_for_target(target, k, gaussian=True)
    assert moduli_for_target(target, k) * 3 > moduli * 2  # the ordinary kind's INT8 products
    assert backend.last_call_info == {"scheme": "ozaki2", "moduli": moduli, "gaussian": True, "rule": "target",
                                      "kernel": "ozaki2", "bound": error_bound(moduli, k, gaussian=True)}
    crt = np.empty_like(x)
    gemm_backend.get(f"int8-gcrt-{moduli}").apply_batched(u, x, crt)
    assert same_bits(out, crt)
    rows = x.transpose(0, 2, 1).reshape(-1, k)
    hi, lo = matmul_dd(rows, u.T)
    exact = (hi + lo).reshape(3, 4, k).transpose(0, 2, 1)
    scale = np.linalg.norm(rows, axis=1).reshape(3, 1, 4) * np.linalg.norm(u, axis=1).reshape(1, k, 1)
    worst = max(np.abs((out - exact).real / scale).max(), np.abs((out - exact).imag / scale).max())
    assert 0 < worst <= error_bound(moduli, k, gaussian=True) + 4 * UNIT_ROUNDOFF
    assert backend.statistics()["ozaki2_gates"] == 1 and backend.statistics()["splits_histogram"] == {}


def test_large_gates_option(rng):
    u = seed_paper_matrix(rng, (128, 128), 1.0, True)
    x = seed_paper_matrix(rng, (2, 128, 1), 1.0, True)
    for large_gates in ("ozaki1", None):  # the default takes Ozaki-I up to K = 256 (more accurate at K = 256)
        backend = gemm_backend.get("int8-auto", large_gates=large_gates)
        backend.apply_batched(u, x, np.empty_like(x))
        assert backend.last_call_info["kernel"] == "tiles" and "splits" in backend.last_call_info
    assert backend.large_gates == "auto"
    backend.apply_batched(seed_paper_matrix(rng, (256, 256), 1.0, True), seed_paper_matrix(rng, (1, 256, 2), 1.0, True),
                          np.empty((1, 256, 2), complex))
    assert backend.last_call_info["kernel"] == "tiles" and "splits" in backend.last_call_info
    big = seed_paper_matrix(rng, (512, 512), 1.0, True)
    x_big = seed_paper_matrix(rng, (1, 512, 2), 1.0, True)
    backend.apply_batched(big, x_big, np.empty((1, 512, 2), complex))
    info = backend.last_call_info  # fp64 rule: Gaussian moduli, two INT8 products each instead of three
    assert info["scheme"] == "ozaki2" and (info["moduli"], info["gaussian"]) == (16, True)
    worst_case = gemm_backend.get("int8-auto", bound="worst-case")
    worst_case.apply_batched(big, x_big, np.empty((1, 512, 2), complex))
    info = worst_case.last_call_info  # 14 Gaussian moduli model cheaper than its 34-pair plan (6.7 passes to 14.6)
    assert info["scheme"] == "ozaki2" and (info["moduli"], info["gaussian"]) == (14, True)
    target = gemm_backend.get("int8-auto", target_error=1e-10)
    target.apply_batched(big, x_big, np.empty((1, 512, 2), complex))
    info = target.last_call_info  # 11 Gaussian moduli (5.7 passes) model cheaper than its 19-pair plan (10.4)
    assert info["scheme"] == "ozaki2" and (info["moduli"], info["gaussian"]) == (11, True)
    assert gemm_backend.get("int8-9").large_gates == "ozaki1"
    assert gemm_backend.get("int8-auto", rho=1.0).large_gates == "ozaki1"
    with pytest.raises(BackendError, match="large_gates must be 'auto', 'ozaki1' or 'ozaki2', got 'crt'"):
        gemm_backend.get("int8-auto", large_gates="crt")
    with pytest.raises(BackendError, match="backend 'int8-9' takes no option large_gates"):
        gemm_backend.get("int8-9", large_gates="ozaki2")
    with pytest.raises(BackendError, match="no Ozaki-II plan .* meets the error target 1e-30 at K = 128"):
        gemm_backend.get("int8-auto", target_error=1e-30, large_gates="ozaki2").apply_batched(u, x, np.empty_like(x))


@pytest.mark.parametrize("target_error", [1e-3, 1e-6])  # 6 and 9 pairs against 8 Gaussian moduli
def test_auto_at_512_takes_ozaki2_for_the_loosest_targets(target_error, rng):
    """large_gates="auto" at K = 512 and a loose target: the fewest moduli model cheaper than
    the gate's Ozaki-I plan (cost.py), so the gate runs with the bits of large_gates="ozaki2"
    and meets the target."""
    u = haar_unitary(512, rng)
    x = seed_paper_matrix(rng, (2, 512, 3), 1.0, True)
    auto = gemm_backend.get("int8-auto", target_error=target_error)
    out, ozaki2 = np.empty_like(x), np.empty_like(x)
    auto.apply_batched(u, x, out)
    info = auto.last_call_info
    assert (info["scheme"], info["moduli"], info["gaussian"]) == ("ozaki2", 8, True)
    gemm_backend.get("int8-auto", target_error=target_error, large_gates="ozaki2").apply_batched(u, x, ozaki2)
    assert same_bits(out, ozaki2)
    exact = np.einsum("ij,ljr->lir", u, x)
    scale = np.linalg.norm(u, axis=1)[None, :, None] * np.linalg.norm(x, axis=1)[:, None, :]
    assert 0 < (np.abs(out - exact) / scale).max() < target_error


def test_auto_at_512_takes_ozaki1_where_its_plan_models_cheaper(monkeypatch, rng):
    """The choice follows the cost model: with the wide kernel's fixed passes at zero, the
    9-pair plan of --target-error 1e-6 (2.5 passes) models below 8 Gaussian moduli (4.6), and
    the gate runs with the bits of large_gates="ozaki1"."""
    from gemm_backend.ozaki import cost

    monkeypatch.setattr(cost, "WIDE_GATE_FIXED_PASSES", 0.0)
    u = haar_unitary(512, rng)
    x = seed_paper_matrix(rng, (2, 512, 3), 1.0, True)
    auto = gemm_backend.get("int8-auto", target_error=1e-6)
    plan, _ = auto.gate_plan(u)
    out, ozaki1 = np.empty_like(x), np.empty_like(x)
    auto.apply_batched(u, x, out)
    assert auto.last_call_info["scheme"] == "ozaki1" and auto.last_call_info["pairs"] == plan.pairs == 9
    gemm_backend.get("int8-auto", target_error=1e-6, large_gates="ozaki1").apply_batched(u, x, ozaki1)
    assert same_bits(out, ozaki1)


def test_auto_at_512_takes_the_scheme_that_meets_the_target(rng):
    """A target no Ozaki-I plan meets runs on Ozaki-II's moduli at K = 512 (prepare() too); one
    that neither meets is refused with the rule's message before any work."""
    u = haar_unitary(512, rng)
    x = seed_paper_matrix(rng, (1, 512, 2), 1.0, True)
    backend = gemm_backend.get("int8-auto", target_error=1e-17)
    with pytest.raises(BackendError, match="no INT8 plan with at most 18 digits"):
        backend.gate_plan(u)
    backend.prepare(u)
    backend.apply_batched(u, x, np.empty_like(x))
    from gemm_backend.ozaki.crt import moduli_for_target

    info = backend.last_call_info
    assert (info["scheme"], info["moduli"], info["gaussian"]) == ("ozaki2", moduli_for_target(1e-17, 512, True), True)
    with pytest.raises(BackendError, match="meets target_error=1e-30; raise the target"):
        gemm_backend.get("int8-auto", target_error=1e-30).prepare(u)


def test_a_gate_is_chosen_for_once_per_run_whatever_its_chunks(monkeypatch, rng):
    """A 9-qubit gate on scattered targets through a transposed copy of 16 chunks: the rule plans
    it once in the run (its choice, both schemes' costs, is the slow part of a call), and the
    result is the bits of the same gate applied without chunks."""
    import qsim.apply
    from circuits.gate import Circuit, Gate
    from gemm_backend.ozaki.rules import Fp64Rule
    from qsim import Simulator

    calls = []
    plan_gate = Fp64Rule.gate_choice
    monkeypatch.setattr(Fp64Rule, "gate_choice", lambda self, u, x=None: calls.append(1) or plan_gate(self, u, x))
    circuit = Circuit(14, (Gate((0, 2, 3, 4, 5, 6, 7, 8, 9), haar_unitary(512, rng)),))
    whole = Simulator(backend="int8-auto", device="cpu", progress=False).run(circuit).state_vector()
    monkeypatch.setattr(qsim.apply, "TRANSPOSE_CHUNK_BYTES", 16 * 1024)
    calls.clear()
    chunked = Simulator(backend="int8-auto", device="cpu", progress=False).run(circuit).state_vector()
    assert len(calls) == 2  # the warm-up's block, then the gate in the run
    assert same_bits(chunked, whole)


def test_every_gate_size_works_in_place_on_the_gpu():
    """works_in_place (GPU): every size, whatever the scheme (so the simulator takes no second
    state buffer for int8-auto); takes_scattered where every gate of the size runs in place at any
    targets: the fused kernels on Ozaki-I up to K = 512, Ozaki-II's kernels (apply_at) up to
    K = 1024 (under "auto" K = 512 takes either); with fused=False Ozaki-II's sizes only."""
    from qsim.apply import plan_gate
    from qsim.simulator import wants_spare_buffer

    every = (64, 128, 256, 512, 1024)
    for options, scattered in [({}, every), ({"large_gates": "ozaki2"}, every),
                               ({"large_gates": "ozaki1"}, (64, 128, 256, 512)), ({"fused": False}, (1024,))]:
        backend = gemm_backend.get("int8-auto", **options)
        for k in (64, 128, 256, 512, 1024):
            assert backend.works_in_place(k, True) and not backend.works_in_place(k, False), (options, k)
            assert backend.takes_scattered(k, True) == (k in scattered), (options, k)
        plans = [plan_gate(30, range(d), np.eye(1 << d)) for d in (5, 9, 10)]
        assert not wants_spare_buffer(backend, plans, True)


@pytest.mark.parametrize("options, k", [({"large_gates": "ozaki2"}, 128), ({}, 512), ({"large_gates": "ozaki1"}, 512),
                                        ({"fused": False}, 64)])
def test_tile_paths_in_place_give_the_bits_out_of_place(options, k, rng):
    """The tile paths (Ozaki-II, Ozaki-I tiles) with out = x, in chunks smaller than the view
    (a small workspace: Ozaki-II's holds its gate and 5 columns at most), give the bits of the out-of-place call."""
    workspace = max(3 << 20, gemm_backend.get("int8-crt-20").gate_workspace(k, 5))  # the most blocks
    backend = gemm_backend.get("int8-auto", workspace_bytes=workspace, **options)
    u = seed_paper_matrix(rng, (k, k), 1.0, True)
    x = seed_paper_matrix(rng, (6, k, 4), 1.0, True)
    out = np.empty_like(x)
    backend.apply_batched(u, x, out)
    scheme = backend.last_call_info.get("scheme")
    in_place = x.copy()
    backend.apply_batched(u, in_place, in_place)
    assert backend.last_call_info.get("scheme") == scheme
    assert same_bits(in_place, out)


def test_apply_batched_rho_rule_looks_at_the_state(rng):
    u = seed_paper_matrix(rng, (4, 4), 1.0, True)
    x = seed_paper_matrix(rng, (40, 4, 2), 1.0, True)
    backend = gemm_backend.get("int8-auto", rho=0.0)
    backend.apply_batched(u, x.copy(), np.empty_like(x))
    plain = backend.last_call_info["splits"]
    x[39, :, 1] = [1.0, 1e-20, 0.0, 0.0]  # one column needs ~66 more bits
    backend.apply_batched(u, x.copy(), np.empty_like(x))
    assert backend.last_call_info["splits"] > plain
    x[39, :, 1] = [1.0, 1e-300, 0.0, 0.0]  # no s <= 18 keeps every bit: native product
    out = np.empty_like(x)
    backend.apply_batched(u, x, out)
    assert backend.last_call_info == {"splits": None, "fallback": "zgemm"}
    assert same_bits(out, np.matmul(u, x))
    assert backend.statistics()["fallbacks"] == 1


# -- GPU: the same bits as the CPU --------------------------------------------------------
def _special_rows(a):
    """Plant an all-zero row and a row of subnormals (when there are enough rows)."""
    if a.shape[0] > 3:
        a[1] = 0
        a[3] = a[3] * 2.0**-1060
    return a


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", ["int8-3", "int8-7", "int8-13", "int8-18", "int8-auto"])
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("shape", [(300, 37, 29), (64, 64, 64), (5, 1, 3), (2000, 32, 32)])
def test_gpu_matches_cpu_bit_for_bit(name, is_complex, shape, rng):
    import cupy as cp

    m, k, n = shape
    a = _special_rows(seed_paper_matrix(rng, (m, k), 4.0, is_complex))
    b = seed_paper_matrix(rng, (k, n), 4.0, is_complex)
    cpu_backend, gpu_backend = gemm_backend.get(name), gemm_backend.get(name)
    expected = cpu_backend.matmul(a, b)
    got = gpu_backend.matmul(cp.asarray(a), cp.asarray(b))
    assert "fallback" not in cpu_backend.last_call_info  # a native fallback is not bit-reproducible across devices
    assert isinstance(got, cp.ndarray) and same_bits(got.get(), expected)
    # the bound and the fp64 rule's estimate come from norms summed on each device in its own
    # order: equal to rounding, the plan exactly
    for key in ("bound", "estimate"):
        values = (gpu_backend.last_call_info.pop(key, 0.0), cpu_backend.last_call_info.pop(key, 0.0))
        assert values[0] == pytest.approx(values[1], rel=1e-12)
    assert gpu_backend.last_call_info == cpu_backend.last_call_info


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("phi, scheme", [(1.0, "ozaki2"), (6.0, "ozaki1")])
def test_gpu_contract_choice_matches_cpu(phi, scheme, rng):
    """int8-auto's default picks its scheme from the scan's exact exponent histograms and the
    norms: the same choice, plan and bits on both devices, whichever scheme it is."""
    import cupy as cp

    a = seed_paper_matrix(rng, (384, 512), phi, True)
    b = seed_paper_matrix(rng, (512, 320), phi, True)
    cpu_backend, gpu_backend = gemm_backend.get("int8-auto"), gemm_backend.get("int8-auto")
    expected = cpu_backend.matmul(a, b)
    assert same_bits(gpu_backend.matmul(cp.asarray(a), cp.asarray(b)).get(), expected)
    assert cpu_backend.last_call_info["scheme"] == scheme
    values = (gpu_backend.last_call_info.pop("estimate"), cpu_backend.last_call_info.pop("estimate"))
    assert values[0] == pytest.approx(values[1], rel=1e-12)
    assert gpu_backend.last_call_info == cpu_backend.last_call_info


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k, splits", [(70_000, 5), (9_000, 18), (1 << 17, 13)])
def test_gpu_split_groups_and_long_k_match_cpu(k, splits, rng):
    import cupy as cp

    a = seed_paper_matrix(rng, (3, k), 1.0, True)
    b = seed_paper_matrix(rng, (k, 5), 1.0, True)
    backend = gemm_backend.get(f"int8-{splits}")
    assert same_bits(backend.matmul(cp.asarray(a), cp.asarray(b)).get(), backend.matmul(a, b))


@pytest.mark.gpu
@requires_gpu
def test_gpu_tiles_and_subnormal_results_match_cpu(rng):
    import cupy as cp

    a = seed_paper_matrix(rng, (513, 200), 2.0, True) * 2.0**-540
    b = seed_paper_matrix(rng, (200, 150), 2.0, True) * 2.0**-530  # products near 2^-1070
    for name in ("int8-9", "int8-auto"):
        backend = gemm_backend.get(name, workspace_bytes=4_000_000)
        expected = backend.matmul(a, b)
        assert np.abs(expected).min() < 2.0**-1022  # some results are subnormal
        assert same_bits(backend.matmul(cp.asarray(a), cp.asarray(b)).get(), expected)


@pytest.mark.gpu
@requires_gpu
def test_gpu_non_finite_input_raises():
    import cupy as cp

    a = cp.ones((4, 4))
    a[2, 3] = cp.nan
    with pytest.raises(BackendError, match="operand a contains NaN or Inf"):
        gemm_backend.get("int8-auto").matmul(a, cp.ones((4, 4)))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", ["int8-12", "int8-auto"])
@pytest.mark.parametrize("shape", [(64, 32, 16), (4096, 8, 1), (3, 64, 100)])
def test_gpu_apply_batched_matches_cpu(name, shape, rng):
    import cupy as cp

    u = seed_paper_matrix(rng, (shape[1], shape[1]), 1.0, True)
    x = seed_paper_matrix(rng, shape, 1.0, True)
    workspace = 50 * gemm_backend.get(name).workspace_bytes_per_row(shape[1], shape[1])  # several chunks
    cpu_backend, gpu_backend = (gemm_backend.get(name, workspace_bytes=workspace) for _ in range(2))
    expected = np.empty_like(x)
    cpu_backend.apply_batched(u, x, expected)
    x_gpu = cp.asarray(x)
    gpu_backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)  # in place
    assert same_bits(x_gpu.get(), expected)
    paths = gpu_backend.last_call_info.pop("kernel"), cpu_backend.last_call_info.pop("kernel")
    assert paths[1] == "tiles" and paths[0] == ("tiles" if shape[2] & (shape[2] - 1) else "fused")
    assert gpu_backend.last_call_info == cpu_backend.last_call_info
    assert gpu_backend.statistics() == cpu_backend.statistics()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("shape", [(64, 128, 1), (2, 256, 16)])
def test_gpu_auto_large_gates_match_cpu(shape, rng):
    """int8-auto's Ozaki-II path: the same bits on both devices, in place on the GPU."""
    import cupy as cp

    u = seed_paper_matrix(rng, (shape[1], shape[1]), 1.0, True)
    x = seed_paper_matrix(rng, shape, 1.0, True)
    cpu_backend, gpu_backend = (gemm_backend.get("int8-auto", large_gates="ozaki2") for _ in range(2))
    expected = np.empty_like(x)
    cpu_backend.apply_batched(u, x, expected)
    x_gpu = cp.asarray(x)
    gpu_backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)
    assert same_bits(x_gpu.get(), expected)
    assert gpu_backend.last_call_info == cpu_backend.last_call_info and cpu_backend.last_call_info["scheme"] == "ozaki2"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n_qubits, gate_size, depth, seed, kernel", [(20, 4, 2, 11, None), (15, 7, 3, 5, "fused")])
def test_gpu_brickwork_simulation_matches_cpu(n_qubits, gate_size, depth, seed, kernel):
    """int8-auto runs give the CPU's bits; 7-qubit gates run in place in the wide fused kernel."""
    from circuits import brickwork
    from qsim import Simulator

    circuit = brickwork(n_qubits, gate_size, depth, seed=seed)
    results = {device: Simulator(backend="int8-auto", device=device, progress=False).run(circuit)
               for device in ("cpu", "gpu")}
    assert same_bits(results["gpu"].state_vector(), results["cpu"].state_vector())
    splits = [info["splits"] for info in results["gpu"].gate_info]
    assert len(splits) == len(circuit.gates) and all(s in range(3, 19) for s in splits)
    assert kernel is None or {info["kernel"] for info in results["gpu"].gate_info} == {kernel}
    assert splits == [info["splits"] for info in results["cpu"].gate_info]



@pytest.mark.gpu
@requires_gpu
def test_gpu_apply_batched_rho_rule_matches_cpu(rng):
    """The seed paper's rule in the simulator: a pass over the state on the device, the same plan
    and bits as the CPU."""
    import cupy as cp

    u = seed_paper_matrix(rng, (32, 32), 1.0, True)
    x = seed_paper_matrix(rng, (16, 32, 8), 2.0, True)
    cpu_backend, gpu_backend = (gemm_backend.get("int8-auto", rho=0.0) for _ in range(2))
    expected = np.empty_like(x)
    cpu_backend.apply_batched(u, x, expected)
    x_gpu = cp.asarray(x)
    gpu_backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)
    assert same_bits(x_gpu.get(), expected)
    assert gpu_backend.last_call_info["splits"] == cpu_backend.last_call_info["splits"]
