"""Time launch variants of the fused INT8 gate kernel (n-tiles per warp, prefetch, blocks per
multiprocessor) under int8-auto's own plan for each gate, for several gate sizes and first
targets, against the memory floor measured in the same run. The default shape is tagged "d",
the fastest variant per (d, q) is starred. Prints one short table.

    python scripts/dev/fused_variants.py --qubits 30 --gate-sizes 3 4 5 6 --targets 0 1 12 top
"""
import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from gemm_backend.ozaki.gate import apply_fused_gate, default_shape, plan_launch
from qsim.benchmarking import first_targets, gpu_state_and_floor, variant_arguments, variant_cells

# (n-tiles per warp, prefetch, blocks per multiprocessor)
VARIANTS = [(1, True, 2), (1, False, 2), (2, False, 2), (2, True, 2), (2, False, 1), (1, True, 1), (4, False, 1),
            (1, False, 3), (1, True, 3), (1, False, 4)]


def main():
    args = variant_arguments(__doc__.splitlines()[0], 30, [5, 6])
    n = args.qubits
    rng = np.random.default_rng(1)
    state, floor = gpu_state_and_floor(n)
    auto = gemm_backend.get("int8-auto")
    flag = cp.zeros(1, cp.int32)  # the NaN/Inf flag, read at the end as in a run: no synchronisation per gate
    print(f"N={n} floor {floor * 1e3:.2f} ms")
    for d in args.gate_sizes:
        k = 1 << d
        u = cp.asarray(haar_unitary(k, rng))
        plan, _ = auto.gate_plan(u)
        default = default_shape(k, plan.a_slices, plan.b_slices)
        for q in first_targets(n, d, args.targets):
            view = state.reshape(1 << (n - q - d), k, 1 << q)
            variants = []
            for n_tiles, prefetch, blocks in VARIANTS:
                launch = plan_launch(k, plan, n_tiles=n_tiles, prefetch=prefetch, blocks_per_sm=blocks)
                if launch is None or launch.prefetch != prefetch or launch.blocks_per_sm != blocks:
                    continue
                tag = f"NT{n_tiles}{'p' if prefetch else '-'}b{blocks}{'d' if (n_tiles, prefetch, blocks) == default else ''}"
                variants.append((tag, lambda launch=launch: apply_fused_gate(u, view, view, plan, launch, flag)))
            cells = variant_cells(variants, floor, args.repeats)
            print(f"d={d} q={q:2d} s={plan.a_slices}  {cells}", flush=True)
    assert int(flag[0]) == 0, "the kernel flagged NaN or Inf in a finite state"


if __name__ == "__main__":
    main()
