"""Time shapes of the wide fused INT8 gate kernel (K = 128, 256: n-tiles per warp, gate digits
held per lane, staged or not) under int8-auto's own plan for each gate (or the plan of --target-error),
for several first targets, against the memory floor measured in the same run. The default shape
is tagged "d", the fastest is starred. Prints one short table.

    python scripts/dev/wide_variants.py --qubits 30 --gate-sizes 7 8 --targets 0 12 top
"""
import dataclasses

import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from gemm_backend.ozaki.gate import apply_fused_gate, plan_launch, wide_launch
from qsim.benchmarking import first_targets, gpu_state_and_floor, variant_arguments, variant_cells

# (n-tiles per warp, gate digits held per lane, staged)
SHAPES = [(4, 3, True), (4, 3, False), (4, 4, True), (2, 9, True), (2, 9, False), (2, 4, False)]


def main():
    args = variant_arguments(__doc__.splitlines()[0], 30, [7, 8])
    n = args.qubits
    rng = np.random.default_rng(1)
    state, floor = gpu_state_and_floor(n)
    flag = cp.zeros(1, cp.int32)
    print(f"N={n} floor {floor * 1e3:.2f} ms")
    for target_error in (None, 1e-10):
        auto = gemm_backend.get("int8-auto", target_error=target_error)
        for d in args.gate_sizes:
            k = 1 << d
            u = cp.asarray(haar_unitary(k, rng))
            plan, _ = auto.gate_plan(u)
            default = plan_launch(k, plan)
            for q in first_targets(n, d, args.targets):
                view = state.reshape(1 << (n - q - d), k, 1 << q)
                variants = []
                for warp_n_tiles, held, staged in SHAPES:
                    held = min(held, plan.b_slices)
                    base = wide_launch(k, plan, staged)
                    if base is None:
                        continue
                    launch = dataclasses.replace(base, warp_n_tiles=warp_n_tiles, gate_digits_held=held)
                    tag = f"W{warp_n_tiles}Q{held}{'s' if staged else ''}{'d' if launch == default else ''}"
                    variants.append((tag, lambda launch=launch: apply_fused_gate(u, view, view, plan, launch, flag)))
                cells = variant_cells(variants, floor, args.repeats)
                print(f"d={d} q={q:2d} plan {plan.a_slices}/{plan.b_slices}/{plan.top} target {target_error}  {cells}",
                      flush=True)
    assert int(flag[0]) == 0, "the kernel flagged NaN or Inf in a finite state"


if __name__ == "__main__":
    main()
