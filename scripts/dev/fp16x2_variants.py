"""Time launch variants of the fused fp16x2 gate kernel (kernel size: packed "P<K>" or the gate's
own; n-tiles per warp; blocks per multiprocessor) at fp16x2's default block and FP32 block sums,
for several gate sizes and first targets, against the memory floor measured in the same run. The
default launch is tagged "d", the fastest variant per (d, q) is starred. Prints one short table.

    python scripts/dev/fp16x2_variants.py --qubits 28 --gate-sizes 2 3 4 5 6 --targets 0 1 12 top
"""
import argparse

import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from gemm_backend.multiword_gate import MAX_PACKED_K, apply_gate, gate_words, plan_launch, resolve_packing
from qsim.benchmarking import gpu_state_and_floor, first_targets, median_time

# (n-tiles per warp, blocks per multiprocessor)
VARIANTS = [(1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (4, 2), (4, 3)]


def kernel_sizes(k: int) -> list:
    """The gate's own kernel and every packed one (a gate of at least 4, kernels up to 16)."""
    return [k] + [size for size in (8, 16) if 4 <= k < size <= MAX_PACKED_K]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=28)
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[2, 3, 4, 5, 6])
    parser.add_argument("--targets", nargs="+", default=["0", "1", "12", "top"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
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
            results = []
            for size in kernel_sizes(k):
                for n_tiles, blocks in VARIANTS:
                    results.append(time_variant(words[size], state, tuple(range(q, q + d)), default, flag, args.repeats,
                                                plan_launch(k, backend._block_for(k), "fp32", n_tiles, blocks, size)))
            best = min(results)
            cells = "  ".join(f"{name} {t / floor:.2f}{'*' if t == best[0] else ''}" for t, name in results)
            print(f"d={d} q={q:2d}  {cells}", flush=True)
    assert int(flag[0]) == 0, "the kernel flagged NaN or Inf in a finite state"


def time_variant(words, state, targets, default, flag, repeats: int, launch) -> tuple:
    """(seconds, tag) of one launch on the flat state (packed where the launch is; the state
    always has the free qubits at these sizes)."""
    launch, kernel_targets = resolve_packing(launch, targets, state.size)
    packed = f"P{launch.k}" if launch.k != launch.group else ""
    tag = f"{packed}NT{launch.n_tiles}b{launch.blocks_per_sm}{'d' if launch == default else ''}"
    try:
        return median_time(lambda: apply_gate(words, state, state, launch, flag, kernel_targets), True, repeats,
                           batch=3), tag
    except cp.cuda.driver.CUDADriverError as exc:
        return float("inf"), f"{tag}: {exc}"[:60]


if __name__ == "__main__":
    main()
