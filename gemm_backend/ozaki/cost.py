"""The cost models int8-auto uses to choose between Ozaki-I and Ozaki-II, for matmul and for gates.

Both schemes are unfused on this path: INT8 GEMMs on the tensor cores, and per-element passes
through device memory around them. The model counts both, in seconds of an H100:

    Ozaki-I (plan with P digit pairs, complex (m, k) @ (k, n)):
        P * 8 m k n INT8 operations (one real GEMM of the embedded shape m x 2k x 2n per pair)
        + P * (m k + k n + m n) * OZAKI1_ELEMENT_PAIR_SECONDS   (digits written in each pair's
          layout and read by its GEMM, int32 products read by the accumulation)
    Ozaki-II (M moduli):
        M * 3 * 2 m k n INT8 operations (three real m x k x n products per modulus, Karatsuba;
        two on Gaussian moduli)
        + M * (m k + k n) * OZAKI2_RESIDUE_SECONDS + M * m n * OZAKI2_RECONSTRUCT_SECONDS

INT8 operations run at INT8_OPS_PER_SECOND * k' / (k' + INT8_HALF_RATE_INNER), k' the inner
size of one INT8 GEMM (cuBLAS's IMMA kernels need a long inner dimension to reach their rate).
A real product counts as a complex one with k, n halved in the embedding (2 m k n operations
per pair, one product per modulus). Constants are fits to the H100's Ozaki-II stages (square
GEMMs and the N = 30 gate tiles: GEMM rates, residues and reconstruction per element and
modulus) and Ozaki-I tiles (per element and digit pair beside the GEMMs), BENCHMARKS.md. The model ranks the
two schemes; it is not a timing prediction to report. Only the ratio of the two sides matters,
so on the CPU (where neither runs fast) the same choice is made, and the bits of a call do not
depend on the device.

Gates of K = WIDE_GATE_K (int8-auto's large gates, backend.py): the fused wide Ozaki-I kernel
(gate.py) against the Ozaki-II gate path, in passes over the state (gate_cost.py), least-squares
fits to the H100 at N = 30, first target 0, both schemes in one run (BENCHMARKS.md round 24;
scripts/dev/gate_cost_fit.py computes them from bench_gates.py's JSON):

    wide Ozaki-I (P digit pairs)   WIDE_GATE_FIXED_PASSES + P * WIDE_GATE_PASSES_PER_PAIR
                                   (measured 7.40 passes at P = 6, 7.62 at P = 9, 9.37 at P = 19,
                                   20.27 at P = 53)
    Ozaki-II (M moduli)            OZAKI2_GATE_FIXED_PASSES
                                   + M * (2 on Gaussian moduli, else 3) * OZAKI2_GATE_PASSES_PER_PRODUCT
                                   (measured 4.61 passes on 8 Gaussian moduli, 5.78 on 11, 7.29 on 16)

At these fits Ozaki-II models cheaper than every plan the rules make at K = 512 (the loosest
targets: 8 Gaussian moduli, 4.6 passes, against 6 pairs, 6.7), as measured. Like the matmul
model it ranks; the choice depends on the plan and the moduli alone.
"""
from .plan import ProductPlan

INT8_OPS_PER_SECOND = 1.3e15
INT8_HALF_RATE_INNER = 300
OZAKI1_ELEMENT_PAIR_SECONDS = 2.2e-12
OZAKI2_RESIDUE_SECONDS = 4.1e-12
OZAKI2_RECONSTRUCT_SECONDS = 7.1e-12
WIDE_GATE_K = 512
WIDE_GATE_FIXED_PASSES = 5.02
WIDE_GATE_PASSES_PER_PAIR = 0.2825
OZAKI2_GATE_FIXED_PASSES = 1.97  # residues read the state, the reconstruction writes it
OZAKI2_GATE_PASSES_PER_PRODUCT = 0.1674


def int8_seconds(operations: float, inner: int) -> float:
    """Time of INT8 GEMMs of `operations` operations with inner size `inner`."""
    return operations / (INT8_OPS_PER_SECOND * inner / (inner + INT8_HALF_RATE_INNER))


def ozaki1_seconds(plan: ProductPlan, m: int, k: int, n: int, is_complex: bool) -> float:
    """Modelled time of the Ozaki-I tile path for (m, k) @ (k, n) under `plan`."""
    width = 2 if is_complex else 1
    group_inner = plan.inner * plan.pairs / max(len(plan.groups), 1)  # digits concatenated along k
    gemms = int8_seconds(2.0 * plan.pairs * m * (width * k) * (width * n), round(group_inner))
    elements = (m * k + k * n + m * n) * (1 if is_complex else 0.5)
    return gemms + plan.pairs * elements * OZAKI1_ELEMENT_PAIR_SECONDS


def ozaki1_floor_seconds(pairs: int, m: int, k: int, n: int, is_complex: bool) -> float:
    """A floor of ozaki1_seconds over every plan with at least `pairs` digit pairs, whatever its
    grouping: its GEMMs at the full INT8 rate (an infinite inner size) plus its element passes."""
    width = 2 if is_complex else 1
    elements = (m * k + k * n + m * n) * (1 if is_complex else 0.5)
    return pairs * (2.0 * m * (width * k) * (width * n) / INT8_OPS_PER_SECOND + elements * OZAKI1_ELEMENT_PAIR_SECONDS)


def ozaki2_seconds(moduli: int, m: int, k: int, n: int, is_complex: bool, gaussian: bool = False) -> float:
    """Modelled time of int8-crt-<moduli> (int8-gcrt-<moduli> when gaussian) for (m, k) @ (k, n)."""
    products, per_element = ((2 if gaussian else 3), 1.0) if is_complex else (1, 0.5)
    gemms = int8_seconds(2.0 * moduli * products * m * k * n, k)
    elements = moduli * per_element * ((m * k + k * n) * OZAKI2_RESIDUE_SECONDS + m * n * OZAKI2_RECONSTRUCT_SECONDS)
    return gemms + elements


def wide_gate_passes(plan: ProductPlan) -> float:
    """Modelled passes of the wide Ozaki-I gate kernel at K = WIDE_GATE_K under `plan`."""
    return WIDE_GATE_FIXED_PASSES + plan.pairs * WIDE_GATE_PASSES_PER_PAIR


def ozaki2_gate_passes(moduli: int, gaussian: bool) -> float:
    """Modelled passes of an Ozaki-II gate at K = WIDE_GATE_K on `moduli` moduli."""
    return OZAKI2_GATE_FIXED_PASSES + moduli * (2 if gaussian else 3) * OZAKI2_GATE_PASSES_PER_PRODUCT
