"""Which INT8 digit products an Ozaki-I GEMM computes, and the exact order it adds them in.

With s_a digits of A's rows and s_b digits of B's columns (ozaki_split.py), the product is

    C_ij ~= 2^(e_i + f_j) sum over kept pairs (p, q) of 2^(-(p+q) b) (A_p B_q)_ij,

kept pairs being p <= s_a, q <= s_b, p + q <= T (the seed paper's triangle is s_a = s_b = s,
T = s + 1). Every A_p B_q is an exact INT8 x INT8 -> INT32 product. The specification of the
sum, which every implementation (numpy, the unfused cuBLAS path, the fused gate kernel) follows
so that all agree bit for bit:

1. D_t = sum_{p+q=t} (A_p B_q)_ij, exactly (int32 while it cannot overflow, else int64).
2. The diagonals t = T_max, T_max - 1, ..., 2 (T_max = min(T, s_a + s_b); smallest weight
   first) are cut into chunks of consecutive diagonals, each chunk as long as its exact value
   V = sum_{t in chunk} D_t 2^(b (t_top - t)) (t_top the chunk's largest t) stays below 2^31
   for every possible digit (a chunk of one diagonal may reach 2^53), so V is an exact integer
   in int32 (int64) and in float64. int32 lets the fused kernel combine a chunk in the mma
   accumulators' own registers.
3. acc = 0; for each chunk in that order: acc = acc + V * 2^(-b t_top) (the product is exact,
   one rounding per chunk; an FMA gives the same bits).
4. C_ij = ldexp(acc, e_i + f_j) (exact unless the result is subnormal, then correctly rounded).

For the unfused path the products of one diagonal are also grouped into INT8 GEMMs of digits
concatenated along k ([A_p .. A_p'] @ [B_{t-p}; ..; B_{t-p'}]), as many per GEMM as keep the
int32 sum below 2^31 (ProductGroup).
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..arrays import array_module
from ..errors import BackendError
from .split import INT32_MAX, bits_per_slice, max_digit

EXACT_FLOAT64_INTEGERS = 2**53
CHUNK_LIMIT = 2**31  # several diagonals combine while their exact sum stays an int32


@dataclass(frozen=True)
class ProductGroup:
    """Digit products A_p B_{t-p} for p = first..last of diagonal t: one INT8 GEMM of the digits
    concatenated along k."""

    diagonal: int
    first: int
    last: int

    @property
    def length(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class ProductPlan:
    """The products of an Ozaki-I GEMM of inner size `inner` (the embedded size, 2k for complex).

    a_slices, b_slices: digits of A's rows and of B's columns; top: the largest p + q kept.
    groups: the INT8 GEMMs, diagonal by diagonal from the largest t down (accumulation order).
    chunks: tuples of diagonals (largest first) combined exactly before one FP64 addition.
    """

    a_slices: int
    b_slices: int
    top: int
    bits: int
    inner: int
    groups: tuple
    chunks: tuple

    @property
    def n_slices(self) -> int:
        """The larger digit count (memory is planned for it)."""
        return max(self.a_slices, self.b_slices)

    @property
    def pairs(self) -> int:
        """Digit pairs (p, q) computed."""
        return sum(group.length for group in self.groups)

    @property
    def diagonals(self) -> tuple:
        return tuple(t for chunk in self.chunks for t in chunk)

    def diagonal_pairs(self, diagonal: int) -> range:
        """The p of the pairs (p, diagonal - p) kept on a diagonal."""
        return range(max(1, diagonal - self.b_slices), min(self.a_slices, diagonal - 1) + 1)

    def max_diagonal_sum(self, diagonal: int) -> int:
        """The largest |D_t| any digits can give: pairs * inner * 2^(2b - 2)."""
        return len(self.diagonal_pairs(diagonal)) * self.inner * max_digit(self.bits) ** 2

    def describe(self) -> dict:
        return {"a_slices": self.a_slices, "b_slices": self.b_slices, "top": self.top, "pairs": self.pairs}


@functools.lru_cache(maxsize=None)
def plan_products(a_slices: int, inner: int, b_slices: int = None, top: int = None) -> ProductPlan:
    """The plan for (s_a, s_b, T); s_b defaults to s_a and T to max(s_a, s_b) + 1."""
    b_slices = a_slices if b_slices is None else b_slices
    top = max(a_slices, b_slices) + 1 if top is None else top
    if min(a_slices, b_slices) < 1 or not 2 <= top <= a_slices + b_slices:
        raise BackendError(f"no Ozaki plan for s_a={a_slices}, s_b={b_slices}, T={top}")
    bits = bits_per_slice(inner)
    per_pair = max(inner, 1) * max_digit(bits) ** 2
    max_terms = max(1, INT32_MAX // per_pair)
    skeleton = ProductPlan(a_slices, b_slices, top, bits, inner, (), ())
    diagonals = range(min(top, a_slices + b_slices), 1, -1)
    groups = []
    for diagonal in diagonals:
        ps = skeleton.diagonal_pairs(diagonal)
        for first in range(ps.start, ps.stop, max_terms):
            groups.append(ProductGroup(diagonal, first, min(ps.stop - 1, first + max_terms - 1)))
    chunks = _chunk_diagonals(skeleton, diagonals)
    return ProductPlan(a_slices, b_slices, top, bits, inner, tuple(groups), chunks)


def _chunk_diagonals(skeleton: ProductPlan, diagonals) -> tuple:
    """Consecutive diagonals (largest first) whose exact combination stays below 2^31; a
    diagonal that alone passes 2^31 is a chunk of its own (below 2^53)."""
    chunks, current, bound = [], [], 0
    for diagonal in diagonals:
        single = skeleton.max_diagonal_sum(diagonal)
        if single >= EXACT_FLOAT64_INTEGERS:
            raise BackendError(f"inner size {skeleton.inner} is too large for exact diagonal sums")
        if current:
            widened = bound + single * 2 ** (skeleton.bits * (current[0] - diagonal))
            if widened < CHUNK_LIMIT:
                current.append(diagonal)
                bound = widened
                continue
            chunks.append(tuple(current))
        current, bound = [diagonal], single
    chunks.append(tuple(current))
    return tuple(chunks)


def chunk_weights(plan: ProductPlan) -> np.ndarray:
    """2^(-b t_top) for each chunk."""
    return np.array([2.0 ** (-plan.bits * chunk[0]) for chunk in plan.chunks])


def accumulate(plan: ProductPlan, diagonal_sums: dict, exponents):
    """Steps 2-4 of the module docstring. diagonal_sums: {t: D_t} exact integers held in float64
    (or int64) arrays of the output's shape; exponents: e_i + f_j broadcastable to it."""
    xp = array_module(next(iter(diagonal_sums.values())))
    acc = None
    for chunk, weight in zip(plan.chunks, chunk_weights(plan)):
        value = None
        for diagonal in reversed(chunk):  # Horner from the largest weight: exact integers
            term = diagonal_sums[diagonal].astype(xp.float64)
            value = term if value is None else value * 2.0**plan.bits + term
        acc = value * weight if acc is None else acc + value * weight
    return xp.ldexp(acc, exponents)

