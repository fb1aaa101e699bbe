"""How long one gate takes, in passes over the state: the cost model behind automatic fusion.

One pass is reading and writing the whole state once, the memory floor of any gate. Fusing gates
into wider blocks saves passes while a block stays memory-bound and costs more once it becomes
compute-bound; so the fusion that minimises sum(passes of each fused gate) is the fastest one.
A backend answers `GemmBackend.gate_passes(k, on_gpu, scattered)`; the tables here hold what the
GPU kernels were measured at (H100, N = 30, per-gate medians over every first target,
BENCHMARKS.md) and the roofline the other paths follow.
Only ratios between gate sizes matter to the choice, so one GPU's figures serve all of them.
"""

# Passes per gate on the GPU by qubit count d, in-place kernels (d <= 6) and cuBLAS ZGEMM above.
NATIVE_GPU_PASSES = {1: 1.08, 2: 1.10, 3: 1.07, 4: 1.06, 5: 1.07, 6: 1.22, 7: 3.3, 8: 5.1, 9: 9.0, 10: 16.0}
# The fused INT8 Ozaki-I kernels at int8-auto's default (FP64-contract) plans: d <= 5 (BENCHMARKS.md
# round 7; d = 1 from earlier rounds), d = 6 (round 13), the wide kernel at d = 7, 8 (round 24,
# median of first targets 0, top and spread), then Ozaki-II on 16 Gaussian moduli in place (d = 9,
# 10; round 24, median of first targets 0, middle and top).
INT8_FUSED_GPU_PASSES = {1: 2.1, 2: 1.37, 3: 1.37, 4: 1.35, 5: 1.76, 6: 3.0, 7: 4.77, 8: 8.16, 9: 7.71, 10: 10.02}
# A gate on non-contiguous targets without an in-place kernel: the chunked transposed copy adds a
# gather and a scatter pass (qsim/apply.py).
TRANSPOSED_EXTRA_PASSES = 2.0
# Sustained FP64 flops per byte of memory traffic at which a gate turns compute-bound: about 20 for
# a GPU (tens of TFLOP/s over a few TB/s), about 8 for a CPU socket through BLAS.
GPU_FLOPS_PER_BYTE = 20.0
CPU_FLOPS_PER_BYTE = 8.0
BYTES_PER_AMPLITUDE_PASS = 32  # complex128 read and written


def roofline_passes(k: int, flops_per_byte: float, flops_per_multiply_add: float = 8.0) -> float:
    """Passes of a dense k x k complex gate at a machine balance of flops_per_byte: at least one,
    more once its k complex multiply-adds per amplitude outweigh the amplitude's memory traffic."""
    return max(1.0, flops_per_multiply_add * k / (BYTES_PER_AMPLITUDE_PASS * flops_per_byte))


def measured_passes(table: dict, k: int, fallback: float) -> float:
    """table[d] for k = 2^d, else `fallback` (sizes the table does not cover)."""
    return table.get(k.bit_length() - 1, fallback)
