"""int8-auto's default contract: its result is as accurate as native FP64 GEMM (numpy) on the same
inputs, entry by entry and normwise, both measured against a double-double product
(gemm_backend/ozaki/contract.py has the analysis, spans.py the span model, cost.py the choice of scheme).

"As accurate" is checked as: each of int8-auto's max and mean elementwise relative errors and
its normwise error is at most CONTRACT_FACTOR times numpy's, where a numpy error below the unit
roundoff (products it happens to get exact) counts as the unit roundoff: an answer correctly
rounded to float64 may be u off, whatever numpy got."""
import json
import math
from dataclasses import astuple

import numpy as np
import pytest

import gemm_backend
from circuits import brickwork, haar_unitary
from gemm_backend.doubledouble import matmul_dd, two_sum
from gemm_backend.ozaki.contract import fp64_budget, fp64_product_budget
from gemm_backend.ozaki.spans import ProductSpans, product_spans, summarize_spans
from gemm_backend.ozaki import cost, rules
from gemm_backend.ozaki.contract import gate_error_model, matmul_error_model
from gemm_backend.ozaki.cost import ozaki1_floor_seconds, ozaki1_seconds, ozaki2_seconds
from gemm_backend.ozaki.gate import embedded_gate_rows
from gemm_backend.ozaki.plan import plan_products
from gemm_backend.ozaki.split import bits_per_slice, row_exponents
from qsim import Simulator
from qsim.accuracy import accuracy_report
from qsim.reference import reference_state

from .helpers import REPOSITORY, load_script, same_bits, seed_paper_matrix

UNIT_ROUNDOFF = 2.0**-53
CONTRACT_FACTOR = 2.0
PHIS = (0.1, 0.5, 1.0, 2.0, 4.0, 6.0)
INNER_SIZES = (8, 100, 1000, 4096)
ROWS, COLUMNS = 8, 6


def errors(c, reference) -> dict:
    """max and mean of |c_ij - r_ij| / |r_ij| over the nonzero r_ij, and max |C - R| / max |R|
    (complex moduli), r = hi + lo; the difference is taken with two_sum so that it is exact
    before its one rounding."""
    hi, lo = (np.asarray(x, np.complex128) for x in reference)
    c = np.asarray(c, np.complex128)

    def difference(x, h, low):
        s, e = two_sum(x, -h)
        return s + (e - low)

    distance = np.hypot(difference(c.real, hi.real, lo.real), difference(c.imag, hi.imag, lo.imag))
    magnitude = np.abs(hi)
    nonzero = magnitude > 0
    relative = distance[nonzero] / magnitude[nonzero]
    return {"max": float(relative.max()), "mean": float(relative.mean()),
            "normwise": float(distance.max() / magnitude.max())}


def check_contract(c, reference, native) -> dict:
    """Assert int8-auto's errors are within CONTRACT_FACTOR of numpy's (module docstring);
    returns both sets of errors."""
    ours, theirs = errors(c, reference), errors(native, reference)
    for measure in ours:
        assert ours[measure] <= CONTRACT_FACTOR * max(theirs[measure], UNIT_ROUNDOFF), (measure, ours, theirs)
    return {"int8-auto": ours, "numpy": theirs}


def draw(rng, shape, family: str):
    """Complex inputs: the seed paper's phi family ("phi=<phi>"), standard normal, or uniform (0, 1]."""
    if family.startswith("phi="):
        return seed_paper_matrix(rng, shape, float(family[4:]), True)
    if family == "normal":
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return (1.0 - rng.random(shape)) + 1j * (1.0 - rng.random(shape))


FAMILIES = [f"phi={phi}" for phi in PHIS] + ["normal", "uniform"]


@pytest.mark.slow
@pytest.mark.parametrize("k", INNER_SIZES)
@pytest.mark.parametrize("family", FAMILIES)
def test_default_is_as_accurate_as_numpy(family, k, rng):
    a, b = draw(rng, (ROWS, k), family), draw(rng, (k, COLUMNS), family)
    backend = gemm_backend.get("int8-auto")
    c = backend.matmul(a, b)
    check_contract(c, matmul_dd(a, b), a @ b)
    info = backend.last_call_info
    assert info["rule"] == "fp64" and info["estimate"] <= fp64_product_budget(2 * k)
    assert ("moduli" in info) == (info["scheme"] == "ozaki2") and ("splits" in info) == (info["scheme"] == "ozaki1")


def test_both_schemes_are_chosen_and_reported(rng):
    """The cost model takes Ozaki-II where its per-element work is paid back (long inner sums,
    a narrow dynamic range) and Ozaki-I where the moduli would have to cover a wide range."""
    narrow, wide = (gemm_backend.get("int8-auto") for _ in range(2))
    narrow.matmul(draw(rng, (64, 1024), "phi=1.0"), draw(rng, (1024, 64), "phi=1.0"))
    wide.matmul(draw(rng, (16, 256), "phi=6.0"), draw(rng, (256, 16), "phi=6.0"))
    assert narrow.last_call_info["scheme"] == "ozaki2" and narrow.last_call_info["moduli"] in range(14, 19)
    assert narrow.statistics()["ozaki2_matmuls"] == 1 and narrow.statistics()["splits_histogram"] == {}
    assert wide.last_call_info["scheme"] == "ozaki1" and wide.last_call_info["splits"] >= 11
    for backend in (narrow, wide):
        model = backend.last_call_info["model_s"]
        chosen = model[backend.last_call_info["scheme"]]
        assert chosen is not None and all(t is None or chosen <= t for t in model.values())


def test_zero_rows_and_columns(rng):
    a, b = draw(rng, (12, 300), "phi=2.0"), draw(rng, (300, 9), "phi=2.0")
    a[[0, 5]] = 0
    b[:, [2, 8]] = 0
    a[7, :150] = 0  # half a row
    c = gemm_backend.get("int8-auto").matmul(a, b)
    assert not c[[0, 5]].any() and not c[:, [2, 8]].any()
    check_contract(c, matmul_dd(a, b), a @ b)
    assert not gemm_backend.get("int8-auto").matmul(np.zeros((3, 5), complex), b[:5]).any()


@pytest.mark.parametrize("a_exponent, b_exponent", [(-997, 0), (997, -20), (-700, 700), (0, -1000)])
def test_tiny_and_huge_scales(a_exponent, b_exponent, rng):
    """Operands near the ends of the float64 range: the contract holds, and since every scale is a
    power of two the result is the unscaled one scaled, bit for bit, where it is a normal number."""
    a, b = draw(rng, (10, 200), "phi=1.0"), draw(rng, (200, 8), "phi=1.0")
    scaled_a, scaled_b = np.ldexp(a.real, a_exponent) + 1j * np.ldexp(a.imag, a_exponent), \
        np.ldexp(b.real, b_exponent) + 1j * np.ldexp(b.imag, b_exponent)
    c = gemm_backend.get("int8-auto").matmul(scaled_a, scaled_b)
    shift = a_exponent + b_exponent
    hi, lo = matmul_dd(a, b)  # the exact product scales exactly
    reference = tuple(np.ldexp(x.real, shift) + 1j * np.ldexp(x.imag, shift) for x in (hi, lo))
    check_contract(c, reference, scaled_a @ scaled_b)
    unscaled = gemm_backend.get("int8-auto").matmul(a, b)
    normal = np.abs(unscaled) * 2.0**shift > 2.0**-1000
    expected = np.ldexp(unscaled.real, shift) + 1j * np.ldexp(unscaled.imag, shift)
    assert normal.mean() > 0.9 and same_bits(c[normal], expected[normal])


def test_real_inputs(rng):
    a, b = seed_paper_matrix(rng, (16, 700), 4.0, False), seed_paper_matrix(rng, (700, 12), 4.0, False)
    c = gemm_backend.get("int8-auto").matmul(a, b)
    assert c.dtype == np.float64
    check_contract(c, matmul_dd(a, b), a @ b)


def test_the_former_default_loses_small_entries_of_wide_range_products(rng):
    """The regression the contract fixes (issue 23): a normwise target lets the small entries of a
    phi = 5 product lose most of their digits; the default keeps them."""
    a, b = draw(rng, (16, 256), "phi=5.0"), draw(rng, (256, 16), "phi=5.0")
    reference = matmul_dd(a, b)
    native = errors(a @ b, reference)
    former = errors(gemm_backend.get("int8-auto", bound="worst-case").matmul(a, b), reference)
    assert former["mean"] > 1000 * native["mean"] and former["max"] > 1000 * native["max"]
    check_contract(gemm_backend.get("int8-auto").matmul(a, b), reference, a @ b)


def test_small_products_aligned_against_the_large_elements():
    """Rows [1, eps] against a permutation: every entry is a single product, half of them eps.
    FP64 gets them exactly; the contract needs eps's own digits (more digits for eps = 1e-12),
    and where no plan of <= 18 digits or 20 moduli holds them (eps = 1e-30) it takes the native
    product."""
    permutation = np.array([[0.0, 1.0], [1.0, 0.0]])
    for eps in (1e-12, 1e-30):
        a = np.array([[1.0, eps], [eps, 1.0]]) * (1 + 1j / 3)
        backend = gemm_backend.get("int8-auto")
        c = backend.matmul(a, permutation)
        if eps == 1e-12:
            assert backend.last_call_info["scheme"] == "ozaki1" and backend.last_call_info["splits"] >= 10
            assert (np.abs(c - a @ permutation) / np.abs(a @ permutation)).max() <= UNIT_ROUNDOFF
        else:
            assert backend.last_call_info == {"splits": None, "fallback": "zgemm"}
            assert same_bits(c, a @ permutation)


@pytest.mark.parametrize("family", ["phi=0.1", "phi=1.0", "phi=4.0", "phi=6.0", "normal", "uniform"])
@pytest.mark.parametrize("k", [8, 512, 4096])
def test_span_model_covers_the_measured_spans(family, k, rng):
    """product_spans against the spans measured directly: log2 of 2^(e_i + f_j) and of
    ||a_i|| ||b_j|| over S_ij = (|A| |B|)_ij and over T_ij = ((A * A) (B * B))_ij^(1/2) (real embedding). The model must not fall
    below the largest by more than the contract's margin covers (it would under-provision digits)
    and should not sit far above it (it would waste them: it does by up to ~18 bits on the
    heaviest-tailed inputs with k = 8, where a row's 16 parts say little about its shape)."""
    a, b = draw(rng, (24, k), family), draw(rng, (k, 20), family)
    a_rows = a.view(np.float64)
    b_rows = np.ascontiguousarray(embedded_gate_rows(np.ascontiguousarray(b.T))[0::2])
    a_exps, _ = row_exponents(a_rows, 8)
    b_exps, _ = row_exponents(b_rows, 8)
    summaries = summarize_spans(a_rows, a_exps), summarize_spans(b_rows, b_exps)
    exponent_scale = np.ldexp(1.0, a_exps[:, None] + b_exps[None, :])
    norm_scale = np.outer(np.linalg.norm(a_rows, axis=1), np.linalg.norm(b_rows, axis=1))
    magnitudes = {1: np.abs(a_rows) @ np.abs(b_rows).T, 2: np.sqrt((a_rows * a_rows) @ (b_rows * b_rows).T)}
    for power, magnitude in magnitudes.items():  # S_ij and T_ij
        spans = product_spans(*summaries, 2, power=power)
        for estimate, scale in ((spans.exponents, exponent_scale), (spans.norms, norm_scale)):
            measured = float(np.log2(scale / magnitude).max())
            assert measured - 2 <= estimate <= measured + (20 if k == 8 else 10), (power, estimate, measured)


def full_search_choice(a_summary, b_summary, shape):
    """matmul_choice's scheme and counts as the full comparison makes them: every span searched,
    the cheapest Ozaki-I plan and the fewest moduli both modelled, the cheaper one taken."""
    m, k, n, _ = shape
    inner = 2 * k
    budget = fp64_product_budget(inner)
    spans = product_spans(a_summary, b_summary, 2, power=2)
    least = rules._least_spans(inner)
    spans = ProductSpans(*(max(value, floor) for value, floor in zip(astuple(spans), astuple(least))))
    ozaki1 = rules._cheapest_ozaki1(matmul_error_model(a_summary, b_summary, spans, bits_per_slice(inner)),
                                    inner, budget)
    ozaki2 = rules._cheapest_ozaki2(k, spans.norms, budget, rules._matmul_seconds(shape))
    ozaki1_s = None if ozaki1.plan is None else ozaki1_seconds(ozaki1.plan, m, k, n, True)
    if ozaki2 is not None and (ozaki1_s is None or ozaki2.info["model"] < ozaki1_s):
        return ("ozaki2", ozaki2.moduli, ozaki2.gaussian)
    return ("ozaki1", ozaki1.plan) if ozaki1.plan is not None else (None,)


@pytest.mark.parametrize("family", ["phi=0.1", "phi=1.0", "phi=2.0", "phi=4.0", "normal"])
@pytest.mark.parametrize("k", [64, 512, 4096])
@pytest.mark.parametrize("rows", [64, 8192])
def test_matmul_choice_skips_only_what_cannot_win(family, k, rows, rng):
    """matmul_choice stops after the norms' span when Ozaki-I's floor exceeds Ozaki-II's time;
    it must choose exactly what the full search chooses (shapes from 64 to 8192 rows: the cost
    model sees the shape, the spans come from a sample of rows)."""
    a, b = draw(rng, (24, k), family), draw(rng, (k, 20), family)
    a_rows = a.view(np.float64)
    b_rows = np.ascontiguousarray(embedded_gate_rows(np.ascontiguousarray(b.T))[0::2])
    summaries = [summarize_spans(x, row_exponents(x, bits_per_slice(2 * k))[0]) for x in (a_rows, b_rows)]
    shape = (rows, k, rows, True)
    choice = gemm_backend.get("int8-auto").split_rule.matmul_choice(rows, k, rows, True,
                                                                     {"a": summaries[0], "b": summaries[1]})
    made = ("ozaki2", choice.moduli, choice.gaussian) if choice.scheme == "ozaki2" else \
        (("ozaki1", choice.plan) if choice.plan is not None else (None,))
    assert made == full_search_choice(*summaries, shape)


def test_ozaki1_floor_is_below_every_plan_with_as_many_pairs():
    shapes = [(8192, 8192, 8192, True), (64, 4096, 64, True), (1 << 20, 32, 32, True), (300, 500, 700, False)]
    for s_a in range(2, 19, 4):
        for s_b in range(2, 19, 5):
            for top in (max(s_a, s_b) + 1, s_a + s_b):
                for m, k, n, is_complex in shapes:
                    plan = plan_products(s_a, (2 if is_complex else 1) * k, s_b, top)
                    floor = ozaki1_floor_seconds(plan.pairs, m, k, n, is_complex)
                    assert 0 < floor <= ozaki1_seconds(plan, m, k, n, is_complex)
                    assert floor < ozaki1_floor_seconds(plan.pairs + 1, m, k, n, is_complex)


# -- gates: planned from the gate alone --------------------------------------------------------
@pytest.mark.parametrize("d", [2, 5, 6])
def test_gate_side_is_exact_to_fp64_for_basis_state_columns(d, rng):
    """Columns that are basis vectors give y = u[:, l]: native FP64 returns the entries exactly,
    so every output must be within u of them relative to its own size, small entries included
    (the normwise worst-case rule gives them up to ||u_i|| / |u_il| more)."""
    k = 1 << d
    u = haar_unitary(k, rng)
    x = np.zeros((1, k, k), complex)
    x[0] = np.eye(k)  # column l of the view is e_l
    out = np.empty_like(x)
    backend = gemm_backend.get("int8-auto")
    backend.apply_batched(u, x, out)
    relative = np.abs(out[0] - u) / np.abs(u)
    assert relative.max() <= 2 * UNIT_ROUNDOFF
    if d == 5:
        former = gemm_backend.get("int8-auto", bound="worst-case")
        former.apply_batched(u, x, out)
        assert (np.abs(out[0] - u) / np.abs(u)).max() > 4 * UNIT_ROUNDOFF  # this test can tell the rules apart


def test_gate_plan_holds_for_concentrated_and_spread_states(rng):
    """The state is not looked at: one plan for every state, within the contract on spread
    (Porter-Thomas) columns and on columns with one large amplitude among tiny ones."""
    k = 32
    u = haar_unitary(k, rng)
    spread = (rng.standard_normal((64, k, 4)) + 1j * rng.standard_normal((64, k, 4))) / math.sqrt(2 * k)
    concentrated = spread * 1e-9
    concentrated[:, 0, :] = 1.0
    for x in (spread, concentrated):
        backend = gemm_backend.get("int8-auto")
        out = np.empty_like(x)
        backend.apply_batched(u, x, out)
        rows = x.transpose(0, 2, 1).reshape(-1, k)
        reference = tuple(t.reshape(64, 4, k).transpose(0, 2, 1) for t in matmul_dd(rows, u.T))
        check_contract(out, reference, np.matmul(u, x))
        assert backend.last_call_info["rule"] == "fp64" and backend.last_call_info["estimate"] <= fp64_budget(2 * k)


def test_gate_model_without_the_every_state_guarantee_asks_less_only_of_the_state():
    """every_state=False (gate_alignment_cost.py's comparison) drops only mu_i from the state's
    terms: the gate's truncation is the same, the rest smaller for a Haar gate (no zero entries)."""
    u = haar_unitary(32, np.random.default_rng(7))
    rows = embedded_gate_rows(u)
    exponents, _ = row_exponents(rows, 8)
    every, normwise = (gate_error_model(rows, exponents, 8, every_state) for every_state in (True, False))
    assert normwise.trunc_b == every.trunc_b
    assert normwise.trunc_a < every.trunc_a and (normwise.pair < every.pair).all()


@pytest.mark.slow
@pytest.mark.parametrize("n_qubits, gate_size, depth", [(12, 5, 10), (14, 5, 8), (11, 3, 12), (10, 6, 6)])
def test_brickwork_states_as_accurate_as_native(n_qubits, gate_size, depth):
    """The simulator with the default int8-auto against the double-double reference, beside the
    native engine (numpy), on brickwork circuits of Haar-random gates: max and mean relative
    amplitude error and the 2-norm error within CONTRACT_FACTOR of native's."""
    circuit = brickwork(n_qubits, gate_size, depth, seed=n_qubits + depth)
    hi, lo = reference_state(circuit, device="cpu", progress=False)
    reports = {name: accuracy_report(Simulator(backend=name, device="cpu", progress=False).run(circuit).state_vector(),
                                     hi, lo)
               for name in ("int8-auto", "cublas")}
    for measure in ("max_rel_amplitude_error", "mean_rel_amplitude_error", "l2_error"):
        ours, native = reports["int8-auto"][measure], reports["cublas"][measure]
        assert ours <= CONTRACT_FACTOR * max(native, UNIT_ROUNDOFF), (measure, ours, native)


# -- the cost model ------------------------------------------------------------------------------
def test_cost_model_reproduces_the_benchmarks_it_was_fitted_to():
    """BENCHMARKS.md, H100: int8-crt-15 at 8192^3 53.6 ms (round 4); Ozaki-I tiles (7/6/8) on the
    N = 30, d = 10 gate 338 ms and Ozaki-II (13) 276 ms (round 3); within 30%, and the ranking of
    each pair of measurements kept."""
    square = ozaki2_seconds(15, 8192, 8192, 8192, True)
    assert square == pytest.approx(0.0536, rel=0.3)
    plan = plan_products(7, 2048, 6, 8)
    gate_ozaki1 = ozaki1_seconds(plan, 1 << 20, 1024, 1024, True)
    gate_ozaki2 = ozaki2_seconds(13, 1 << 20, 1024, 1024, True)
    assert gate_ozaki1 == pytest.approx(0.338, rel=0.3) and gate_ozaki2 == pytest.approx(0.276, rel=0.3)
    assert gate_ozaki2 < gate_ozaki1
    # d = 7: Ozaki-I tiles (7/7/8) 211 ms against Ozaki-II (14) 272 ms
    assert ozaki1_seconds(plan_products(7, 256), 1 << 23, 128, 128, True) < ozaki2_seconds(14, 1 << 23, 128, 128, True)
    # square 8192: Ozaki-II (15 moduli) far ahead of Ozaki-I with 8 digits (228 ms, BENCHMARKS.md)
    assert 2 * square < ozaki1_seconds(plan_products(8, 16384), 8192, 8192, 8192, True)


def test_gate_cost_model_is_the_least_squares_fit_of_its_measurements():
    """cost.py's K = 512 gate model is the least-squares line, to its printed digits, through the
    H100 measurements it cites (benchmarks/h100/round24/3_fits/fits.json, first target 0, both
    schemes in one run): passes over the state against the wide kernel's digit pairs and against
    Ozaki-II's INT8 products (two a Gaussian modulus), as scripts/dev/gate_cost_fit.py reads them."""
    fits = json.loads((REPOSITORY / "benchmarks/h100/round24/3_fits/fits.json").read_text())
    measured = load_script("scripts/dev/gate_cost_fit.py").points(fits["rows"], fits["backends"], "0")
    for scheme, (fixed, per_unit) in {
            "ozaki1": (cost.WIDE_GATE_FIXED_PASSES, cost.WIDE_GATE_PASSES_PER_PAIR),
            "ozaki2": (cost.OZAKI2_GATE_FIXED_PASSES, cost.OZAKI2_GATE_PASSES_PER_PRODUCT)}.items():
        units, passes = np.array(measured[512, scheme]).T
        slope, intercept = np.polyfit(units, passes, 1)
        assert len(units) == 4 and (fixed, per_unit) == pytest.approx((intercept, slope), abs=0.006), scheme


@pytest.mark.parametrize("workspace", [None, 1 << 24])
def test_ozaki2_products_get_the_backends_workspace_setting(workspace, rng, monkeypatch):
    """An automatic workspace is measured by the Ozaki-II product itself, after its output is
    allocated (a size measured before int8-auto's scan overcommitted the GPU at 16384^3); an
    explicit one is passed on unchanged."""
    from gemm_backend.workspace import Workspace

    backend = gemm_backend.get("int8-auto", workspace_bytes=workspace)
    backend.matmul(draw(rng, (64, 1024), "phi=1.0"), draw(rng, (1024, 64), "phi=1.0"))
    info = backend.last_call_info
    assert info["scheme"] == "ozaki2"
    ozaki2_workspace = backend._ozaki2_backends[info["moduli"], info["gaussian"]].workspace
    assert ozaki2_workspace == Workspace.from_option(workspace, True) and ozaki2_workspace.automatic == (workspace is None)
