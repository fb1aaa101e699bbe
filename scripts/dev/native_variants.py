"""Time launch variants of the DMMA gate kernel (n-tiles per warp, prefetch, blocks per
multiprocessor) for several gate sizes and first targets, against the memory floor measured in
the same run; the fastest variant per (d, q) is marked. Prints one short table.

    python scripts/dev/native_variants.py --qubits 30 --gate-sizes 5 6 --targets 0 1 2 3 middle top
"""
import argparse

import numpy as np

import cupy as cp

from qsim.benchmarking import first_targets
from circuits import haar_unitary
from gemm_backend.errors import BackendError
from gemm_backend.native.gate import apply_native_gate, gate_fragments, launch_shape
from qsim.benchmarking import copy_bandwidth, median_time

# (n-tiles per warp, prefetch, blocks per multiprocessor, DMMA k)
VARIANTS = [(1, False, 2, 4), (2, False, 1, 4), (1, False, 2, 8), (2, False, 1, 8), (2, False, 2, 8), (1, True, 2, 8)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[5, 6])
    parser.add_argument("--targets", nargs="+", default=["0", "1", "2", "3", "middle", "top"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = args.qubits
    rng = np.random.default_rng(1)
    state = cp.asarray(rng.standard_normal(1 << n)) + 1j * cp.asarray(rng.standard_normal(1 << n))
    state /= cp.linalg.norm(state)
    floor = 32 * (1 << n) / copy_bandwidth(True)
    print(f"N={n} floor {floor * 1e3:.2f} ms")
    for d in args.gate_sizes:
        k = 1 << d
        u = cp.asarray(haar_unitary(k, rng))
        fragments = gate_fragments(u)
        for q in first_targets(n, d, args.targets):
            view = state.reshape(1 << (n - q - d), k, 1 << q)
            results = []
            for n_tiles, prefetch, blocks, mma_k in VARIANTS:
                tag = f"NT{n_tiles}{'p' if prefetch else '-'}b{blocks}k{mma_k}"
                try:
                    launch = launch_shape(k, n_tiles, prefetch, blocks, mma_k)
                    seconds = median_time(lambda: apply_native_gate(u, view, view, launch=launch, fragments=fragments), True,
                                          args.repeats, batch=3)
                    results.append((seconds, f"{tag}w{launch.warps}"))
                except (BackendError, cp.cuda.driver.CUDADriverError) as exc:
                    results.append((float("inf"), f"{tag}: {exc}"[:60]))
            best = min(results)
            cells = "  ".join(f"{name} {t / floor:.2f}{'*' if t == best[0] else ''}" for t, name in results)
            print(f"d={d} q={q:2d}  {cells}", flush=True)


if __name__ == "__main__":
    main()
