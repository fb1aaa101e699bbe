"""Double-double arithmetic, matmul_dd, apply_batched_dd and the "dd" backend, checked against
exact rational arithmetic (fractions.Fraction holds every float64 exactly)."""
import math
from fractions import Fraction

import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from .helpers import check_apply_batched, crandn
from gemm_backend.doubledouble_gate import apply_batched_dd
from gemm_backend.doubledouble import (
    dd_add, dd_add_double, dd_mul, dd_mul_double, dd_sum, matmul_dd, slice_plan, two_prod,
    two_sum,
)

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")


def wide_range(rng, *shape, decades=3.0):
    """Gaussian values with magnitudes spread over about 10^(+-decades)."""
    return rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * decades)


def exact(x) -> Fraction:
    return Fraction(float(x))


def exact_dd(hi, lo) -> Fraction:
    return Fraction(float(hi)) + Fraction(float(lo))


# -- error-free transforms ------------------------------------------------------------------
ADVERSARIAL_PAIRS = [
    (1.0, 2.0**-53), (1.0, -(2.0**-53)), (1.0, 2.0**-54), (2.0**53, 1.0), (2.0**53, -1.0), (0.1, -0.1),
    (0.0, 0.0), (-0.0, 3.5), (1.0 - 2.0**-53, 2.0**-53), (1e300, 1e-300), (-1e308, 1e308), (5e-324, 1.0),
    (1.0 + 2.0**-52, 1.0 - 2.0**-52), ((2.0**53 - 1) * 2.0**900, 3.0 * 2.0**90), (2.0**1000 / 3, 3.0 / 2.0**1020),
    (-(2.0**996) * 1.9999999999999998, 2.0**-900 * 1.2345678901234567), (math.pi, math.e), (1e-150, 1e-150),
]


def random_pairs(rng, count, exponent_range):
    a = rng.standard_normal(count) * 2.0 ** rng.integers(-exponent_range, exponent_range, count)
    b = rng.standard_normal(count) * 2.0 ** rng.integers(-exponent_range, exponent_range, count)
    return list(zip(a, b))


def test_two_sum_is_exact(rng):
    for a, b in ADVERSARIAL_PAIRS + random_pairs(rng, 300, 600):
        s, e = two_sum(np.float64(a), np.float64(b))
        assert s == a + b
        assert exact(s) + exact(e) == exact(a) + exact(b), (a, b)
        assert abs(e) <= math.ulp(s) / 2


def test_two_sum_vectorised_matches_scalar(rng):
    a, b = rng.standard_normal(50) * 1e5, rng.standard_normal(50)
    s, e = two_sum(a, b)
    assert all(exact(s[i]) + exact(e[i]) == exact(a[i]) + exact(b[i]) for i in range(50))


def in_two_prod_range(a: float, b: float) -> bool:
    """The documented range of two_prod: 2^-969 <= |a * b| < 2^1023, or a * b == 0."""
    p = abs(exact(a) * exact(b))
    return p == 0 or Fraction(2) ** -969 <= p < Fraction(2) ** 1023


def test_two_prod_is_exact(rng):
    pairs = ADVERSARIAL_PAIRS + random_pairs(rng, 300, 450)
    largest = 1.7976931348623157e308
    pairs += [(largest, 0.4999999999999999), (-0.375, largest), (2.0**1000 * 1.1, 2.0**-1000 * 1.3),
              (2.0**-1000 * 1.3, -(2.0**1010) * 1.9999999999999998), (-(2.0**-400) * 1.7, 2.0**-500)]
    pairs = [pair for pair in pairs if in_two_prod_range(*pair)]
    assert len(pairs) > 300
    for a, b in pairs:
        p, e = two_prod(np.float64(a), np.float64(b))
        assert p == a * b
        assert exact(p) + exact(e) == exact(a) * exact(b), (a, b)


def test_two_prod_vectorised_with_large_entries(rng):
    a = wide_range(rng, 64, decades=80)
    a[:4] = [2.0**1000 * 1.25, -(2.0**998) * 1.9, 1e-250, 0.0]
    b = wide_range(rng, 64, decades=10) * 2.0**-20
    assert all(in_two_prod_range(x, y) for x, y in zip(a, b))
    p, e = two_prod(a, b)
    for i in range(64):
        assert exact(p[i]) + exact(e[i]) == exact(a[i]) * exact(b[i])
    scalar_p, scalar_e = two_prod(a[0], b[:3])  # broadcasting a scalar against an array
    assert scalar_p.shape == (3,)
    assert all(exact(scalar_p[i]) + exact(scalar_e[i]) == exact(a[0]) * exact(b[i]) for i in range(3))


# -- double-double operations -------------------------------------------------------------
def random_dd(rng, count, decades=2.0):
    hi = wide_range(rng, count, decades=decades)
    lo = hi * rng.uniform(-1, 1, count) * 2.0**-53
    return two_sum(hi, lo)


@pytest.mark.parametrize("operation, exact_operation, bound", [
    (dd_add, lambda x, y: x + y, 1e-31),
    (dd_mul, lambda x, y: x * y, 1e-30),
])
def test_dd_binary_operations(operation, exact_operation, bound, rng):
    a_hi, a_lo = random_dd(rng, 200)
    b_hi, b_lo = random_dd(rng, 200)
    b_hi[:20], b_lo[:20] = -a_hi[:20] * (1 + 2.0**-40), -a_lo[:20]  # heavy cancellation
    hi, lo = operation(a_hi, a_lo, b_hi, b_lo)
    for i in range(200):
        expected = exact_operation(exact_dd(a_hi[i], a_lo[i]), exact_dd(b_hi[i], b_lo[i]))
        assert abs(exact_dd(hi[i], lo[i]) - expected) <= bound * abs(expected)
        assert hi[i] + lo[i] == hi[i]  # normalized: |lo| <= ulp(hi) / 2


def test_dd_with_double_operand(rng):
    a_hi, a_lo = random_dd(rng, 200)
    b = wide_range(rng, 200)
    add_hi, add_lo = dd_add_double(a_hi, a_lo, b)
    mul_hi, mul_lo = dd_mul_double(a_hi, a_lo, b)
    for i in range(200):
        a = exact_dd(a_hi[i], a_lo[i])
        assert abs(exact_dd(add_hi[i], add_lo[i]) - (a + exact(b[i]))) <= 1e-31 * abs(a + exact(b[i]))
        assert abs(exact_dd(mul_hi[i], mul_lo[i]) - a * exact(b[i])) <= 1e-31 * abs(a * exact(b[i]))


@pytest.mark.parametrize("count", [1, 2, 7, 1000, 1025])
def test_dd_sum(count, rng):
    hi, lo = random_dd(rng, count, decades=4.0)
    total_hi, total_lo = dd_sum(hi, lo)
    expected = sum((exact_dd(hi[i], lo[i]) for i in range(count)), Fraction(0))
    magnitude = sum((abs(exact_dd(hi[i], lo[i])) for i in range(count)), Fraction(0))
    assert abs(exact_dd(total_hi, total_lo) - expected) <= 1e-30 * magnitude


# -- matmul_dd ----------------------------------------------------------------------------
def exact_matmul(a, b):
    """Exact product of two float64 or complex128 matrices as nested lists of (re, im) Fractions."""
    a, b = np.asarray(a, complex), np.asarray(b, complex)
    ar, ai = [[exact(x) for x in row] for row in a.real], [[exact(x) for x in row] for row in a.imag]
    br, bi = [[exact(x) for x in row] for row in b.real], [[exact(x) for x in row] for row in b.imag]
    k = a.shape[1]
    return [[(sum(ar[i][t] * br[t][j] - ai[i][t] * bi[t][j] for t in range(k)),
              sum(ar[i][t] * bi[t][j] + ai[i][t] * br[t][j] for t in range(k)))
             for j in range(b.shape[1])] for i in range(a.shape[0])]


def max_relative_error(hi, lo, expected):
    """Largest |(hi + lo) - exact| / |exact| over entries and real/imaginary parts."""
    hi, lo = np.asarray(hi, complex), np.asarray(lo, complex)
    worst = 0.0
    for i, row in enumerate(expected):
        for j, (re, im) in enumerate(row):
            for part, value in ((np.real, re), (np.imag, im)):
                got = exact_dd(part(hi[i, j]), part(lo[i, j]))
                if value != 0:
                    worst = max(worst, float(abs(got - value) / abs(value)))
                else:
                    assert got == 0
    return worst


@pytest.mark.parametrize("m, k, n", [(5, 7, 3), (4, 33, 6), (3, 1, 2), (2, 130, 3)])
def test_matmul_dd_real_is_exact_to_1e30(m, k, n, rng):
    a, b = wide_range(rng, m, k), wide_range(rng, k, n)
    hi, lo = matmul_dd(a, b)
    assert hi.dtype == np.float64 and hi.shape == (m, n)
    assert max_relative_error(hi, lo, exact_matmul(a, b)) <= 1e-30
    assert np.array_equal(hi + lo, hi)


@pytest.mark.parametrize("m, k, n", [(4, 9, 5), (3, 40, 2), (6, 16, 16)])
def test_matmul_dd_complex_is_exact_to_1e30(m, k, n, rng):
    a = wide_range(rng, m, k) + 1j * wide_range(rng, m, k)
    b = crandn(rng, k, n)
    hi, lo = matmul_dd(a, b)
    assert hi.dtype == np.complex128 and lo.dtype == np.complex128
    assert max_relative_error(hi, lo, exact_matmul(a, b)) <= 1e-30


def test_matmul_dd_mixed_real_complex_integer_and_zero_rows(rng):
    a = wide_range(rng, 4, 6)
    a[1] = 0.0
    b = crandn(rng, 6, 3)
    hi, lo = matmul_dd(a, b)
    assert hi.dtype == np.complex128
    assert max_relative_error(hi, lo, exact_matmul(a, b)) <= 1e-30
    ints = rng.integers(-1000, 1000, (3, 5))
    hi, lo = matmul_dd(ints, ints.T)
    assert np.array_equal(hi, (ints @ ints.T).astype(float)) and not lo.any()


def test_matmul_dd_row_blocks_give_the_same_bits(rng):
    a, b = crandn(rng, 37, 12), crandn(rng, 12, 5)
    whole = matmul_dd(a, b)
    blocked = matmul_dd(a, b, workspace_bytes=1)  # one row at a time
    assert all(np.array_equal(x, y) for x, y in zip(whole, blocked))


def test_matmul_dd_agrees_with_dd_gate_loop(rng):
    """Two independent algorithms (exact slices + dd sum; dd multiply-adds) on a larger case."""
    k = 32
    u, x = crandn(rng, k, k), crandn(rng, 512, k)
    hi, lo = matmul_dd(x, u.T)
    x_hi, x_lo = x.reshape(512, k, 1).copy(), np.zeros((512, k, 1), complex)
    apply_batched_dd(u, x_hi, x_lo)
    difference = (hi - x_hi[:, :, 0]) + (lo - x_lo[:, :, 0])
    assert np.abs(difference).max() <= 1e-29 * np.abs(hi).max()


def test_matmul_dd_rejects_bad_input():
    with pytest.raises(BackendError, match="inner sizes"):
        matmul_dd(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(BackendError, match="2-D"):
        matmul_dd(np.ones((2, 3, 1)), np.ones((3, 2)))
    with pytest.raises(BackendError, match="NaN or Inf"):
        matmul_dd(np.array([[1.0, np.nan]]), np.ones((2, 1)))
    with pytest.raises(BackendError, match="overflow"):
        matmul_dd(np.full((2, 4), 1e300), np.full((4, 2), 1e300))
    with pytest.raises(BackendError, match="real or complex"):
        matmul_dd(np.array([["a"]]), np.ones((1, 1)))


def test_slice_plan_keeps_slice_products_exact():
    for k in (1, 2, 64, 2048, 1 << 16):
        bits, n_slices = slice_plan(k)
        assert n_slices * k * (2**bits - 1) ** 2 < 2**53
        assert n_slices * bits >= 120


# -- apply_batched_dd ---------------------------------------------------------------------
def exact_gate_columns(u, x_hi, x_lo):
    """Exact U @ x[l, :, r] for a dd state, as {(l, r): [(re, im) per row]}."""
    n_left, k, n_right = x_hi.shape
    ur = [[exact(u[i, j].real) for j in range(k)] for i in range(k)]
    ui = [[exact(u[i, j].imag) for j in range(k)] for i in range(k)]
    out = {}
    for l in range(n_left):
        for r in range(n_right):
            xr = [exact_dd(x_hi[l, j, r].real, x_lo[l, j, r].real) for j in range(k)]
            xi = [exact_dd(x_hi[l, j, r].imag, x_lo[l, j, r].imag) for j in range(k)]
            out[l, r] = [(sum(ur[i][j] * xr[j] - ui[i][j] * xi[j] for j in range(k)),
                          sum(ur[i][j] * xi[j] + ui[i][j] * xr[j] for j in range(k))) for i in range(k)]
    return out


def column_relative_errors(expected, y_hi, y_lo):
    """Per column (l, r): ||y - exact||_2 / ||exact||_2, evaluated exactly then rounded."""
    errors = []
    for (l, r), rows in expected.items():
        error = norm = Fraction(0)
        for i, (re, im) in enumerate(rows):
            dr = exact_dd(y_hi[l, i, r].real, y_lo[l, i, r].real) - re
            di = exact_dd(y_hi[l, i, r].imag, y_lo[l, i, r].imag) - im
            error += dr * dr + di * di
            norm += re * re + im * im
        errors.append(math.sqrt(float(error / norm)))
    return errors


def random_dd_state(rng, shape):
    hi = crandn(rng, *shape)
    lo = crandn(rng, *shape) * 2.0**-54 * np.abs(hi)
    re, re_lo = two_sum(hi.real, lo.real)
    im, im_lo = two_sum(hi.imag, lo.imag)
    return re + 1j * im, re_lo + 1j * im_lo


@pytest.mark.parametrize("shape", [(3, 8, 4), (2, 2, 1), (1, 4, 8), (2, 16, 2)])
def test_apply_batched_dd_is_exact_to_1e30(shape, rng):
    k = shape[1]
    u = np.linalg.qr(crandn(rng, k, k))[0]
    x_hi, x_lo = random_dd_state(rng, shape)
    expected = exact_gate_columns(u, x_hi, x_lo)
    apply_batched_dd(u, x_hi, x_lo)
    assert max(column_relative_errors(expected, x_hi, x_lo)) <= 1e-30


def test_apply_batched_dd_blocks_and_strided_views_give_the_same_bits(rng):
    u = crandn(rng, 4, 4)
    x_hi, x_lo = random_dd_state(rng, (6, 4, 8))
    whole = (x_hi.copy(), x_lo.copy())
    apply_batched_dd(u, *whole)
    apply_batched_dd(u, x_hi, x_lo, workspace_bytes=1)  # one column at a time
    assert np.array_equal(whole[0], x_hi) and np.array_equal(whole[1], x_lo)


def test_apply_batched_dd_rejects_bad_input(rng):
    x = np.zeros((2, 4, 2), complex)
    with pytest.raises(BackendError, match="does not match K"):
        apply_batched_dd(np.eye(2), x, x.copy())
    with pytest.raises(BackendError, match="equal"):
        apply_batched_dd(np.eye(4), x, np.zeros((2, 4, 1), complex))
    with pytest.raises(BackendError, match="complex128"):
        apply_batched_dd(np.eye(4), x.real.copy(), x.real.copy())
    with pytest.raises(BackendError, match="NaN or Inf"):
        apply_batched_dd(np.full((4, 4), np.inf), x, x.copy())


# -- the "dd" backend ---------------------------------------------------------------------
def test_backend_matmul_is_the_correctly_rounded_product(rng):
    backend = gemm_backend.get("dd")
    a, b = crandn(rng, 6, 7), crandn(rng, 7, 5)
    c = backend.matmul(a, b)
    assert c.dtype == np.complex128
    expected = exact_matmul(a, b)
    rounded = np.array([[complex(float(re), float(im)) for re, im in row] for row in expected])
    assert np.array_equal(c, rounded)
    assert backend.statistics() == {"calls": 1, "flops": 8.0 * 6 * 7 * 5}
    assert backend.last_call_info["slices"] >= 5


@pytest.mark.parametrize("shape", [(8, 4, 1), (1, 4, 16), (3, 8, 5)])
def test_backend_apply_batched(shape, rng):
    out, in_place = check_apply_batched(gemm_backend.get("dd", workspace_bytes=4096), shape, rng)
    assert np.array_equal(in_place, out)


def test_backend_options():
    backend = gemm_backend.get("dd")
    assert (backend.name, backend.options) == ("dd", {"workspace_bytes": 1 << 30})
    with pytest.raises(BackendError, match="takes no option"):
        gemm_backend.get("dd", splits=3)
    with pytest.raises(BackendError, match="workspace_bytes"):
        gemm_backend.get("dd", workspace_bytes=-1)


# -- GPU ----------------------------------------------------------------------------------
@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("k", [2, 4, 32, 64, 256, 1024])
@pytest.mark.parametrize("n_left, n_right", [(64, 1), (8, 4), (2, 512), (3, 2), (1, 1)])
def test_gpu_apply_batched_dd_equals_cpu(k, n_left, n_right, rng):
    import cupy as cp

    u = np.linalg.qr(crandn(rng, k, k))[0]
    x_hi, x_lo = random_dd_state(rng, (n_left, k, n_right))
    gpu_hi, gpu_lo = cp.asarray(x_hi), cp.asarray(x_lo)
    apply_batched_dd(u, x_hi, x_lo)
    apply_batched_dd(cp.asarray(u), gpu_hi, gpu_lo)
    difference = (gpu_hi.get() - x_hi) + (gpu_lo.get() - x_lo)
    assert np.abs(difference).max() <= 1e-28 * np.abs(x_hi).max()
    # Same operations in the same order with exact products: expected to be bit-identical.
    assert np.array_equal(gpu_hi.get(), x_hi) and np.array_equal(gpu_lo.get(), x_lo)


@pytest.mark.gpu
@requires_gpu
def test_gpu_matmul_dd_equals_cpu(rng):
    import cupy as cp

    a, b = crandn(rng, 300, 64), crandn(rng, 64, 64)
    hi, lo = matmul_dd(a, b)
    gpu_hi, gpu_lo = matmul_dd(cp.asarray(a), cp.asarray(b))
    assert isinstance(gpu_hi, cp.ndarray)
    difference = (gpu_hi.get() - hi) + (gpu_lo.get() - lo)
    assert np.abs(difference).max() <= 1e-30 * np.abs(hi).max()


@pytest.mark.gpu
@requires_gpu
def test_gpu_backend_apply_batched_and_bad_gate_size(rng):
    import cupy as cp

    backend = gemm_backend.get("dd")
    u, x = crandn(rng, 8, 8), crandn(rng, 16, 8, 4)
    expected = np.einsum("ij,ljr->lir", u, x)
    x_gpu = cp.asarray(x)
    backend.apply_batched(cp.asarray(u), x_gpu, x_gpu)
    assert np.abs(x_gpu.get() - expected).max() < 1e-12
    big = cp.zeros((1, 2048, 1), cp.complex128)
    with pytest.raises(BackendError, match="at most 10"):
        apply_batched_dd(cp.eye(2048, dtype=cp.complex128), big, big.copy())
