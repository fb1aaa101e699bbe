"""The a-priori error bound of the Ozaki-I product and the error-target rule (ozaki_bound.py),
against products measured with the double-double reference."""
import numpy as np
import pytest

import gemm_backend
from circuits import haar_unitary
from gemm_backend import BackendError
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.ozaki.bound import (
    UNIT_ROUNDOFF,
    choose_plan,
    fp64_gemm_bound,
    relative_bound,
    summarize_rows,
    worst_case_columns,
)
from gemm_backend.ozaki.gate import embedded_gate_rows
from gemm_backend.ozaki.plan import plan_products
from gemm_backend.ozaki.split import bits_per_slice, row_exponents

from .helpers import crandn, seed_paper_matrix

PHIS = (0.1, 1.0, 2.0, 4.0)
TIGHTNESS = 2.0**12  # the bound may be at most this far above the measured error


def summaries(a, b):
    """(inner, summary of A's embedded rows, summary of B's embedded columns, row norms, column norms)."""
    a_rows = np.ascontiguousarray(a).view(np.float64)
    b_rows = embedded_gate_rows(np.ascontiguousarray(b.T))
    inner = a_rows.shape[1]
    bits = bits_per_slice(inner)
    a_exps, _ = row_exponents(a_rows, bits)
    b_exps, _ = row_exponents(b_rows, bits)
    return (inner, summarize_rows(a_rows, a_exps, bits), summarize_rows(b_rows, b_exps, bits),
            np.linalg.norm(a_rows, axis=1), np.linalg.norm(b_rows[0::2], axis=1))


def measured(c, reference, a_norms, b_norms, rounding: bool):
    """max over entries and parts of |c - C| / (||a_i|| ||b_j||); with rounding=True the
    result's own rounding u |C| is taken off first (the theorem's u g |C| term)."""
    hi, lo = reference
    scale = np.outer(a_norms, b_norms)
    worst = 0.0
    for part in (np.real, np.imag):
        error = np.abs((part(c) - part(hi)) - part(lo))
        if rounding:
            error = np.maximum(error - 1.01 * UNIT_ROUNDOFF * np.abs(part(hi)), 0)
        nonzero = scale > 0
        worst = max(worst, float((error[nonzero] / scale[nonzero]).max(initial=0.0)))
    return worst


def check_bound(a, b, splits_list, tight: bool):
    inner, sa, sb, a_norms, b_norms = summaries(a, b)
    reference = matmul_dd(a, b)
    for splits in splits_list:
        plan = plan_products(splits, inner)
        c = gemm_backend.get(f"int8-{splits}").matmul(a, b)
        bound = relative_bound(plan, sa, sb)
        assert measured(c, reference, a_norms, b_norms, rounding=True) <= bound
        if tight:
            assert bound <= TIGHTNESS * measured(c, reference, a_norms, b_norms, rounding=False)


@pytest.mark.parametrize("phi", PHIS)
@pytest.mark.parametrize("k", [64, 1024, 16384])
def test_bound_holds_and_is_tight_on_the_seed_papers_inputs(phi, k, rng):
    a = seed_paper_matrix(rng, (12, k), phi)
    b = seed_paper_matrix(rng, (k, 10), phi)
    check_bound(a, b, (3, 5, 7), tight=True)


def test_bound_holds_at_k_two_to_the_sixteen(rng):
    k = 1 << 16
    check_bound(seed_paper_matrix(rng, (3, k), 2.0), seed_paper_matrix(rng, (k, 2), 2.0), (4, 6), tight=False)


def test_bound_holds_for_wide_exponent_ranges_and_zero_rows(rng):
    a = crandn(rng, 16, 48) * np.ldexp(1.0, rng.integers(-300, 300, (16, 48)))
    b = crandn(rng, 48, 12) * np.ldexp(1.0, rng.integers(-200, 200, (48, 12)))
    a[3], b[:, 5] = 0, 0
    a[7, :40] = 0
    check_bound(a, b, (3, 6, 9, 13), tight=False)


def test_bound_holds_for_a_times_its_inverse(rng):
    a = rng.standard_normal((40, 40)) + 0j
    check_bound(a, np.linalg.inv(a), (4, 7, 10), tight=False)


def test_gate_only_bound_holds_for_any_state(rng):
    """The simulator's rule: the gate's summary and worst_case_columns() bound the product for
    every state, spiky and sparse ones included."""
    for d in (2, 5, 6):
        k = 1 << d
        u = haar_unitary(k, rng)
        columns = crandn(rng, k, 40)
        columns[:, 0] = 0
        columns[0, 1] = 1.0  # one nonzero amplitude
        columns[:, 2] *= np.ldexp(1.0, rng.integers(-60, 0, k))  # wide range inside a column
        gate_rows = embedded_gate_rows(u)
        bits = bits_per_slice(2 * k)
        gate_summary = summarize_rows(gate_rows, row_exponents(gate_rows, bits)[0], bits)
        state_summary = worst_case_columns(2 * k, bits)
        reference = matmul_dd(columns.T, u.T)  # rows of A = state columns, as apply_batched sees them
        _, _, _, a_norms, b_norms = summaries(columns.T, u.T)
        for splits in (3, 5, 7):
            backend = gemm_backend.get(f"int8-{splits}")
            out = np.empty((1, k, 40), complex)
            backend.apply_batched(u, columns[None], out)
            bound = relative_bound(plan_products(splits, 2 * k), state_summary, gate_summary)
            assert measured(out[0].T, reference, a_norms, b_norms, rounding=True) <= bound


@pytest.mark.parametrize("target", [1e-6, 1e-10, 1e-14, 1e-16])
def test_target_error_is_met(target, rng):
    a = seed_paper_matrix(rng, (20, 256), 1.0)
    b = seed_paper_matrix(rng, (256, 16), 1.0)
    _, _, _, a_norms, b_norms = summaries(a, b)
    backend = gemm_backend.get("int8-auto", target_error=target)
    c = backend.matmul(a, b)
    info = backend.last_call_info
    assert info["rule"] == "target" and info["bound"] <= target
    assert measured(c, matmul_dd(a, b), a_norms, b_norms, rounding=True) <= target
    if target >= 1e-10:  # a loose target really buys fewer digit products than FP64's
        assert info["pairs"] < plan_products(7, 512).pairs


@pytest.mark.parametrize("phi", PHIS)
def test_worst_case_target_is_fp64s_normwise_bound(phi, rng):
    """bound="worst-case" (the default before the FP64 contract): every entry within
    gamma_n ||a_i|| ||b_j|| (plus its own rounding), FP64 GEMM's bound in its normwise-per-entry
    form. (Normwise: small entries of wide-range products get less relative accuracy than FP64
    gives them; the default fp64 rule, test_ozaki_accuracy_contract.py, keeps it.)"""
    a = seed_paper_matrix(rng, (24, 512), phi)
    b = seed_paper_matrix(rng, (512, 24), phi)
    _, _, _, a_norms, b_norms = summaries(a, b)
    backend = gemm_backend.get("int8-auto", bound="worst-case")
    c = backend.matmul(a, b)
    assert backend.last_call_info["bound"] <= fp64_gemm_bound(1024)
    assert measured(c, matmul_dd(a, b), a_norms, b_norms, rounding=True) <= fp64_gemm_bound(1024)


def test_choose_plan_prefers_fewest_products():
    k = 32
    gate = embedded_gate_rows(haar_unitary(k, np.random.default_rng(0)))
    bits = bits_per_slice(2 * k)
    summary = summarize_rows(gate, row_exponents(gate, bits)[0], bits)
    worst = worst_case_columns(2 * k, bits)
    loose, _ = choose_plan(2 * k, worst, summary, 1e-6)
    strict, bound = choose_plan(2 * k, worst, summary, fp64_gemm_bound(2 * k))
    assert loose.pairs < strict.pairs and bound <= fp64_gemm_bound(2 * k)
    assert (strict.a_slices, strict.b_slices) == (7, 7)  # 8-bit digits: 7 meet FP64 at d = 5
    assert choose_plan(2 * k, worst, summary, 1e-45) == (None, None)


def test_bad_targets():
    for target in (0, -1e-10, 1.0, float("nan"), "1e-10", True):
        with pytest.raises(BackendError, match="target_error must be"):
            gemm_backend.get("int8-auto", target_error=target)
    with pytest.raises(BackendError, match="target_error applies only"):
        gemm_backend.get("int8-auto", target_error=1e-10, rho=1.0)
    with pytest.raises(BackendError, match="no INT8 plan"):
        gemm_backend.get("int8-auto", target_error=1e-45).matmul(np.ones((2, 2)), np.ones((2, 2)))
