"""Time launch variants of the fused fp16x2 gate kernel (kernel size: packed "P<K>" or the gate's
own; n-tiles per warp; blocks per multiprocessor) at fp16x2's default block and FP32 block sums,
for several gate sizes and first targets, against the memory floor measured in the same run. The
default launch is tagged "d", the fastest variant per (d, q) is starred. Prints one short table.

    python scripts/dev/fp16x2_variants.py --qubits 28 --gate-sizes 2 3 4 5 6 --targets 0 1 12 top
"""
import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from gemm_backend.multiword_gate import MAX_PACKED_K, apply_gate, gate_words, plan_launch, resolve_packing
from qsim.benchmarking import first_targets, gpu_state_and_floor, variant_arguments, variant_cells

# (n-tiles per warp, blocks per multiprocessor)
VARIANTS = [(1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (4, 2), (4, 3)]


def kernel_sizes(k: int) -> list:
    """The gate's own kernel and every packed one (a gate of at least 4, kernels up to 16)."""
    return [k] + [size for size in (8, 16) if 4 <= k < size <= MAX_PACKED_K]


def main():
    args = variant_arguments(__doc__.splitlines()[0], 28, [2, 3, 4, 5, 6])
    n = args.qubits
    rng = np.random.default_rng(1)
    state, floor = gpu_state_and_floor(n)
    backend = gemm_backend.get("fp16x2")
    flag = cp.zeros(1, cp.int32)  # the NaN/Inf flag, read at the end as in a run: no synchronisation per gate
    print(f"N={n} floor {floor * 1e3:.2f} ms")
    for d in args.gate_sizes:
        k = 1 << d
        u = haar_unitary(k, rng)
        words = {size: gate_words(u, size).to_device() for size in kernel_sizes(k)}
        default = plan_launch(k, backend._block_for(k), "fp32")
        for q in first_targets(n, d, args.targets):
            targets = tuple(range(q, q + d))
            variants = [variant(words, state, targets, default, flag,
                                plan_launch(k, backend._block_for(k), "fp32", n_tiles, blocks, size))
                        for size in kernel_sizes(k) for n_tiles, blocks in VARIANTS]
            print(f"d={d} q={q:2d}  {variant_cells(variants, floor, args.repeats)}", flush=True)
    assert int(flag[0]) == 0, "the kernel flagged NaN or Inf in a finite state"


def variant(words, state, targets, default, flag, launch) -> tuple:
    """(tag, call) of one launch on the flat state (packed where the launch is; the state always
    has the free qubits at these sizes)."""
    launch, kernel_targets = resolve_packing(launch, targets, state.size)
    packed = f"P{launch.k}" if launch.k != launch.group else ""
    tag = f"{packed}NT{launch.n_tiles}b{launch.blocks_per_sm}{'d' if launch == default else ''}"
    return tag, lambda: apply_gate(words[launch.k], state, state, launch, flag, kernel_targets)


if __name__ == "__main__":
    main()
