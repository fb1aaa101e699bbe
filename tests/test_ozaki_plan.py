"""Which digit products an Ozaki-I GEMM keeps and the exact order it adds them (ozaki_plan.py)."""
from fractions import Fraction

import numpy as np
import pytest

from gemm_backend import BackendError
from gemm_backend.ozaki.plan import CHUNK_LIMIT, accumulate, chunk_weights, plan_products


@pytest.mark.parametrize("a_slices, b_slices, top", [(7, 7, 8), (5, 9, 10), (9, 5, 12), (3, 3, 6), (13, 13, 14)])
@pytest.mark.parametrize("inner", [4, 64, 128, 1 << 16])
def test_pairs_groups_and_chunks(a_slices, b_slices, top, inner):
    plan = plan_products(a_slices, inner, b_slices, top)
    expected = {(p, q) for p in range(1, a_slices + 1) for q in range(1, b_slices + 1) if p + q <= top}
    planned = {(p, g.diagonal - p) for g in plan.groups for p in range(g.first, g.last + 1)}
    assert planned == expected and plan.pairs == len(expected)
    assert list(plan.diagonals) == list(range(min(top, a_slices + b_slices), 1, -1))
    for group in plan.groups:  # no int32 GEMM can overflow
        assert group.length * inner * 2 ** (2 * plan.bits - 2) <= 2**31 - 1
    for chunk in plan.chunks:  # several diagonals combine only below 2^31, one alone below 2^53
        bound = sum(plan.max_diagonal_sum(t) * 2 ** (plan.bits * (chunk[0] - t)) for t in chunk)
        assert bound < (CHUNK_LIMIT if len(chunk) > 1 else 2**53)
        assert list(chunk) == list(range(chunk[0], chunk[0] - len(chunk), -1))


def test_default_is_the_seed_papers_triangle():
    plan = plan_products(9, 64)
    assert (plan.a_slices, plan.b_slices, plan.top, plan.pairs) == (9, 9, 10, 45)


def test_accumulate_rounds_each_chunk_once(rng):
    """The chunk values are exact integers; the result is the FP64 sum of V * 2^(-b t_top) in
    chunk order (compared with exact rational arithmetic)."""
    plan = plan_products(7, 64)
    sums = {t: rng.integers(-plan.max_diagonal_sum(t), plan.max_diagonal_sum(t), (5, 3)).astype(np.float64)
            for t in plan.diagonals}
    out = accumulate(plan, sums, np.zeros((5, 3), np.int64))
    for i in range(5):
        for j in range(3):
            acc = None
            for chunk, weight in zip(plan.chunks, chunk_weights(plan)):
                value = sum(Fraction(int(sums[t][i, j])) * 2 ** (plan.bits * (chunk[0] - t)) for t in chunk)
                term = float(value) * weight  # exact: an integer below 2^31 times a power of two
                acc = term if acc is None else acc + term
            assert out[i, j] == acc


def test_bad_plans():
    for args in [(0, 64), (7, 64, 7, 1), (7, 64, 7, 15), (3, 64, 0, 3)]:
        with pytest.raises(BackendError, match="no Ozaki plan"):
            plan_products(*args)
    with pytest.raises(BackendError, match="too large"):
        plan_products(7, 1 << 30)
