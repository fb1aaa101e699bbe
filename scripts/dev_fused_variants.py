"""Time variants of the fused INT8 gate kernel (n-tiles per warp, prefetch) on one gate shape.

    python scripts/dev_fused_variants.py --qubits 28 --gate-size 5 --splits 7
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import cupy as cp  # noqa: E402

from circuits import haar_unitary  # noqa: E402
from gemm_backend.ozaki_gate import apply_fused_gate, plan_launch  # noqa: E402
from gemm_backend.ozaki_plan import plan_products  # noqa: E402
from timing import median_time  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--qubits", type=int, default=28)
    parser.add_argument("--gate-size", type=int, default=5)
    parser.add_argument("--splits", type=int, default=7)
    parser.add_argument("--first-target", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, d, q = args.qubits, args.gate_size, args.first_target
    k = 1 << d
    rng = np.random.default_rng(1)
    state = cp.asarray(rng.standard_normal(1 << n) + 1j * rng.standard_normal(1 << n))
    state /= cp.linalg.norm(state)
    view = state.reshape(1 << (n - q - d), k, 1 << q)
    u = cp.asarray(haar_unitary(k, rng))
    plan = plan_products(args.splits, 2 * k)
    floor = 32 * (1 << n) / 2.94e12
    print(f"N={n} d={d} q={q} s={args.splits} floor {floor * 1e3:.2f} ms")
    for n_tiles in (1, 2, 4):
        for prefetch in (True, False):
            for blocks_per_sm in (1, 2):
                launch = plan_launch(k, plan, n_tiles=n_tiles, prefetch=prefetch, blocks_per_sm=blocks_per_sm)
                if launch is None or launch.prefetch != prefetch or (blocks_per_sm == 2 and n_tiles == 4):
                    continue
                try:
                    seconds = median_time(lambda: apply_fused_gate(u, view, view, plan, launch), True, args.repeats)
                    print(f"NT={n_tiles} prefetch={launch.prefetch} blocks/SM={blocks_per_sm} warps={launch.warps} "
                          f"smem={launch.shared_bytes} {seconds * 1e3:.2f} ms  x_floor {seconds / floor:.2f}")
                except Exception as exc:  # noqa: BLE001
                    print(f"NT={n_tiles} prefetch={launch.prefetch} blocks/SM={blocks_per_sm}: "
                          f"{type(exc).__name__}: {str(exc)[:200]}")

if __name__ == "__main__":
    main()
