"""Time shapes of the wide fused INT8 gate kernel (K = 64 .. 512: n-tiles per warp, gate digits
held per lane, staged or not, columns per block, blocks per multiprocessor, mma.sync or wgmma: tag g,
with two chunks of products in flight: g2) under int8-auto's own plan for each gate (or the plan
of --target-error), for several first targets, against the memory floor measured in the same run;
at K = 64 beside the fused kernel's default launch (tag "fused"). The default shape is tagged "d",
the fastest is starred. Prints one short table.

    python scripts/dev/wide_variants.py --qubits 30 --gate-sizes 6 7 8 9 --targets 0 12 top
    python scripts/dev/wide_variants.py --gate-sizes 7 --shapes W4Q3sN32B1g W4Q3sN32B1g2
"""
import dataclasses
import itertools

import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from gemm_backend.ozaki.gate import WideLaunch, apply_fused_gate, plan_launch, wgmma_fits, wide_launch
from qsim.benchmarking import first_targets, gpu_state_and_floor, variant_arguments, variant_cells

# (n-tiles per warp, gate digits held per lane, staged, columns per block, blocks per multiprocessor)
SHAPES = [(4, 3, True, 64, 1), (4, 3, True, 32, 1), (4, 3, False, 32, 1), (2, 9, False, 32, 1), (1, 3, False, 32, 2),
          (1, 3, False, 16, 2), (1, 3, True, 16, 2), (2, 9, False, 16, 1), (2, 3, False, 16, 1), (1, 9, False, 16, 1)]


def wide_gate_cases(state, n_qubits: int, gate_sizes, targets, seed: int = 1):
    """(label, u, plan, view) for every rule (int8-auto's default, then --target-error 1e-10), gate
    size and first target: a Haar gate, its plan under that rule, and the (L, K, R) view of state."""
    rng = np.random.default_rng(seed)
    for target_error in (None, 1e-10):
        auto = gemm_backend.get("int8-auto", target_error=target_error)
        for d in gate_sizes:
            k = 1 << d
            u = cp.asarray(haar_unitary(k, rng))
            plan, _ = auto.gate_plan(u)
            for q in first_targets(n_qubits, d, targets):
                label = f"d={d} q={q:2d} plan {plan.a_slices}/{plan.b_slices}/{plan.top} target {target_error}"
                yield label, u, plan, state.reshape(1 << (n_qubits - q - d), k, 1 << q)


def main():
    args = variant_arguments(__doc__.splitlines()[0], 30, [7, 8], shapes=True)
    state, floor = gpu_state_and_floor(args.qubits)
    flag = cp.zeros(1, cp.int32)
    print(f"N={args.qubits} floor {floor * 1e3:.2f} ms")
    for label, u, plan, view in wide_gate_cases(state, args.qubits, args.gate_sizes, args.targets):
        k = u.shape[0]
        default = plan_launch(k, plan)
        variants = []
        if default is not None and not isinstance(default, WideLaunch):  # K = 64: the fused kernel
            variants.append(("fused", lambda launch=default, u=u, plan=plan, view=view:
                             apply_fused_gate(u, view, view, plan, launch, flag)))
        for (warp_n_tiles, held, staged, columns, blocks), in_flight in itertools.product(SHAPES, (0, 1, 2)):
            wgmma = in_flight > 0
            base = wide_launch(k, plan, staged, columns, blocks, wgmma=wgmma)
            if base is None or (wgmma and not wgmma_fits(warp_n_tiles, columns)):
                continue
            held = min(held, plan.b_slices)
            launch = dataclasses.replace(base, warp_n_tiles=warp_n_tiles, gate_digits_held=held, wgmma=wgmma,
                                         chunks_in_flight=max(1, in_flight))
            shape = (f"W{warp_n_tiles}Q{held}{'s' if staged else ''}N{columns}B{blocks}"
                     f"{'' if not wgmma else 'g' if in_flight == 1 else 'g2'}")
            if args.shapes and shape not in args.shapes:
                continue
            tag = shape + ("d" if launch == default else "")
            variants.append((tag, lambda launch=launch, u=u, plan=plan, view=view:
                             apply_fused_gate(u, view, view, plan, launch, flag)))
        print(f"{label}  {variant_cells(variants, floor, args.repeats)}", flush=True)
    assert int(flag[0]) == 0, "the kernel flagged NaN or Inf in a finite state"


if __name__ == "__main__":
    main()
