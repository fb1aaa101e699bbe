"""Time launch variants of the fused fp16x2 gate kernel (n-tiles per warp, blocks per
multiprocessor) at fp16x2's default block and FP32 block sums, for several gate sizes and first
targets, against the memory floor measured in the same run. The default shape is tagged "d", the
fastest variant per (d, q) is starred. Prints one short table.

    python scripts/dev/fp16x2_variants.py --qubits 28 --gate-sizes 2 3 4 5 6 --targets 0 1 12 top
"""
import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from gemm_backend.multiword_gate import apply_gate, default_shape, gate_words, plan_launch
from qsim.benchmarking import first_targets, gpu_state_and_floor, variant_arguments, variant_cells

# (n-tiles per warp, blocks per multiprocessor)
VARIANTS = [(1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (4, 2), (4, 3)]


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
        words = gate_words(haar_unitary(k, rng)).to_device()
        default = default_shape(k)
        for q in first_targets(n, d, args.targets):
            view = state.reshape(1 << (n - q - d), k, 1 << q)
            variants = []
            for n_tiles, blocks in VARIANTS:
                launch = plan_launch(k, backend._block_for(k), "fp32", n_tiles=n_tiles, blocks_per_sm=blocks)
                tag = f"NT{n_tiles}b{blocks}{'d' if (n_tiles, blocks) == default else ''}"
                variants.append((tag, lambda launch=launch: apply_gate(words, view, view, launch, flag)))
            cells = variant_cells(variants, floor, args.repeats)
            print(f"d={d} q={q:2d}  {cells}", flush=True)
    assert int(flag[0]) == 0, "the kernel flagged NaN or Inf in a finite state"


if __name__ == "__main__":
    main()
