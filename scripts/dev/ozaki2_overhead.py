"""Where int8-auto's Ozaki-II square product spends its time beyond int8-crt-<m>'s: the scan
(row exponents and span statistics of both operands) against the product itself, on the GPU.

    python scripts/dev/ozaki2_overhead.py --sizes 8192 16384 --phi 1 4
"""
import argparse

import cupy as cp
import numpy as np

import gemm_backend
from gemm_backend.arrays import is_gpu_array
from qsim.benchmarking import median_time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8192, 16384])
    parser.add_argument("--phi", type=float, nargs="+", default=[1.0])
    parser.add_argument("--moduli", type=int, nargs="+", default=[15, 16, 17, 18])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = cp.random.default_rng(1)
    for n in args.sizes:
        for phi in args.phi:
            def part():
                return (rng.random((n, n)) - 0.5) * cp.exp(phi * rng.standard_normal((n, n)))
            a, b = part() + 1j * part(), part() + 1j * part()
            auto = gemm_backend.get("int8-auto")
            cells = {}
            cells["auto"] = median_time(lambda: auto.matmul(a, b), True, args.repeats, warmup=1)
            info = auto.last_call_info
            workspace = auto.workspace.for_call(is_gpu_array(a))
            a_rows = a.view(cp.float64)
            cells["scan"] = median_time(lambda: auto._scan(a_rows, b, 2, workspace), True, args.repeats, warmup=1)
            for m in args.moduli:
                crt = gemm_backend.get(f"int8-crt-{m}")
                cells[f"crt{m}"] = median_time(lambda: crt.matmul(a, b), True, args.repeats, warmup=1)
            cells["zgemm"] = median_time(lambda: a @ b, True, args.repeats, warmup=1)
            row = "  ".join(f"{key} {value * 1e3:8.1f}" for key, value in cells.items())
            print(f"n={n} phi={phi}  {info.get('scheme')} {info.get('moduli') or info.get('pairs')} "
                  f"span {info.get('span_bits')}  ms: {row}", flush=True)
            del a, b
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
