"""Ozaki-II on Gaussian moduli (int8-gcrt-<m>, gemm_backend/ozaki/crt.py): the moduli and their
constants, the bound, agreement with the ordinary moduli where the scaling bits coincide, and the
GPU path against the CPU specification. Integer exactness is tested with the ordinary moduli in
test_ozaki_crt.py; the kernels bit for bit in test_ozaki_crt_kernels.py."""
import math

import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.ozaki.crt import crt_plan
from gemm_backend.registry import CRT_MODULI

from .helpers import same_bits, seed_paper_matrix
from .test_ozaki_crt import bound_ratios, crt, requires_gpu


def test_gaussian_moduli_have_a_square_root_of_minus_one():
    from gemm_backend.ozaki.crt import gaussian_moduli
    from gemm_backend.registry import GAUSSIAN_MODULI

    moduli = gaussian_moduli(GAUSSIAN_MODULI.stop - 1)
    assert moduli[:6] == (241, 233, 229, 221, 205, 197) and all(p % 2 for p in moduli)
    assert all(math.gcd(p, q) == 1 for i, p in enumerate(moduli) for q in moduli[:i])
    for m in (GAUSSIAN_MODULI.start, GAUSSIAN_MODULI.stop - 1):
        plan = crt_plan(m, gaussian=True)
        for p, root, y, re, im in zip(plan.moduli, plan.root, plan.inverse, plan.re_inverse, plan.im_inverse):
            assert (int(root) ** 2 + 1) % p == 0
            assert (2 * int(re) - int(y)) % p == 0 and (2 * int(root) * int(im) - int(y)) % p == 0
    with pytest.raises(BackendError, match="Gaussian moduli must be in 8..22"):
        crt_plan(23, gaussian=True)
    with pytest.raises(BackendError, match="8..22"):
        gemm_backend.get("int8-gcrt-23")


@pytest.mark.parametrize("k", [1, 64, 1000])
@pytest.mark.parametrize("phi", [1.0, 4.0])
def test_gaussian_bound_is_met_and_matches_the_same_bits_of_karatsuba(phi, k, rng):
    """The bound holds; and where a Gaussian plan has the scaling bits of a Karatsuba plan both
    compute the same integer product C' exactly, so they round to the same bits."""
    a = seed_paper_matrix(rng, (30, k), phi, True)
    b = seed_paper_matrix(rng, (k, 20), phi, True)
    reference = matmul_dd(a, b)
    for m in (8, 14, 19, 22):
        c = gemm_backend.get(f"int8-gcrt-{m}").matmul(a, b)
        assert bound_ratios(c, a, b, m, reference, gaussian=True)[0] <= 1
    gaussian, karatsuba = crt_plan(18, gaussian=True), crt_plan(17)
    assert (gaussian.a_bits, gaussian.b_bits) != (karatsuba.a_bits, karatsuba.b_bits)
    pairs = [(g, c) for g in range(8, 23) for c in CRT_MODULI
             if (crt_plan(g, True).a_bits, crt_plan(g, True).b_bits) == (crt_plan(c).a_bits, crt_plan(c).b_bits)]
    assert pairs
    for g, c in pairs[:3]:
        assert same_bits(gemm_backend.get(f"int8-gcrt-{g}").matmul(a, b), crt(c).matmul(a, b))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("m", [9, 16, 19, 22])
@pytest.mark.parametrize("is_complex", [False, True])
def test_gpu_gaussian_products_equal_the_cpu_path(m, is_complex, rng):
    import cupy as cp

    a = seed_paper_matrix(rng, (300, 257), 2.0, is_complex)
    b = seed_paper_matrix(rng, (257, 130), 2.0, is_complex)
    a[3] = 0
    expected = gemm_backend.get(f"int8-gcrt-{m}").matmul(a, b)
    got = gemm_backend.get(f"int8-gcrt-{m}").matmul(cp.asarray(a), cp.asarray(b)).get()
    assert same_bits(got, expected)
