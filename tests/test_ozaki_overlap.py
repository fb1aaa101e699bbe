"""int8-auto's matmul with its scan beside the guessed Ozaki-II product (gemm_backend/ozaki/overlap.py):
the guesses kept per shape, and on the GPU the same bits, info and errors as the plain path
whether the guess holds or not."""
import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from gemm_backend.ozaki.overlap import REMEMBERED_SHAPES, Ozaki2Guesses, same_product
from gemm_backend.ozaki.rules import OZAKI1, OZAKI2, Choice

from .helpers import same_bits, seed_paper_matrix

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")
SHAPE = (96, 512, 80)


def test_guesses_keep_the_last_ozaki2_choice_per_shape():
    guesses = Ozaki2Guesses()
    first, second = Choice(OZAKI2, moduli=16), Choice(OZAKI2, moduli=18, gaussian=True)
    guesses.remember((1, 2, 3, True), first, True)
    guesses.remember((4, 5, 6, True), second, True)
    assert guesses.get((1, 2, 3, True)) is first and guesses.get((4, 5, 6, True)) is second
    guesses.remember((1, 2, 3, True), Choice(OZAKI1), False)  # Ozaki-I this time: no guess
    assert guesses.get((1, 2, 3, True)) is None and guesses.get((4, 5, 6, True)) is second
    for m in range(REMEMBERED_SHAPES):
        guesses.remember((m + 100, 1, 1, False), first, True)
    assert guesses.get((4, 5, 6, True)) is None  # the least recently chosen shape went first
    assert guesses.get((100, 1, 1, False)) is first


def test_same_product_compares_moduli_and_their_kind():
    assert same_product(Choice(OZAKI2, moduli=16, info={"a": 1}), Choice(OZAKI2, moduli=16))
    assert not same_product(Choice(OZAKI2, moduli=16), Choice(OZAKI2, moduli=17))
    assert not same_product(Choice(OZAKI2, moduli=16), Choice(OZAKI2, moduli=16, gaussian=True))


def operands(rng, phi):
    m, k, n = SHAPE
    return seed_paper_matrix(rng, (m, k), phi, True), seed_paper_matrix(rng, (k, n), phi, True)


def on_cpu(a, b):
    backend = gemm_backend.get("int8-auto")
    return backend.matmul(a, b), backend.last_call_info


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("phis", [(1.0, 1.0, 1.0), (1.0, 4.0, 1.0), (0.1, 2.0, 2.0)])
def test_gpu_matmuls_of_one_shape_match_the_cpu(phis, rng):
    """Three products of one shape on one backend: the second and third run beside their scan
    when the previous one took Ozaki-II; a guess that does not hold (phi = 4 takes Ozaki-I,
    phi = 2 more moduli) gives the plain path's product. Bits and info equal the CPU's."""
    import cupy as cp

    backend = gemm_backend.get("int8-auto")
    schemes = []
    for call, phi in enumerate(phis):
        a, b = operands(rng, phi)
        expected, info = on_cpu(a, b)
        overlapped_before = backend.overlapped_matmuls
        c = backend.matmul(cp.asarray(a), cp.asarray(b))
        assert same_bits(c.get(), expected)
        assert backend.last_call_info == info
        guessed = call > 0 and schemes[-1] == (OZAKI2, info.get("moduli"), info.get("gaussian"))
        assert backend.overlapped_matmuls - overlapped_before == int(guessed)
        schemes.append((info["scheme"], info.get("moduli"), info.get("gaussian")))
    assert schemes[0][0] == OZAKI2  # the case list must exercise the guess


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("operand", ["a", "b"])
def test_gpu_non_finite_input_beside_the_guess_raises_the_scans_error(operand, rng):
    import cupy as cp

    backend = gemm_backend.get("int8-auto")
    a, b = operands(rng, 1.0)
    backend.matmul(cp.asarray(a), cp.asarray(b))
    assert backend.last_call_info["scheme"] == OZAKI2
    (a if operand == "a" else b)[3, 5] = np.nan
    with pytest.raises(BackendError, match=f"matmul operand {operand} contains NaN or Inf; the INT8 Ozaki scheme"):
        backend.matmul(cp.asarray(a), cp.asarray(b))
