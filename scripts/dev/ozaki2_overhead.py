"""Where int8-auto's Ozaki-II square product spends its time beyond int8-crt-<m>'s: the scan
(row exponents and span statistics of both operands) against the product itself, and the
products on Gaussian moduli (int8-gcrt-<m>) beside them, on the GPU.

    python scripts/dev/ozaki2_overhead.py --sizes 8192 16384 --phi 1 4
"""
import argparse

import cupy as cp

import gemm_backend
from gemm_backend.arrays import is_gpu_array
from qsim.benchmarking import median_time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8192, 16384])
    parser.add_argument("--phi", type=float, nargs="+", default=[1.0])
    parser.add_argument("--moduli", type=int, nargs="+", default=[15, 16, 17, 18])
    parser.add_argument("--gaussian", type=int, nargs="*", default=[18, 19], help="int8-gcrt-<m> to time too")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = cp.random.default_rng(1)
    for n in args.sizes:
        for phi in args.phi:
            time_case(rng, n, phi, args)
            cp.get_default_memory_pool().free_all_blocks()


def time_case(rng, n: int, phi: float, args) -> None:
    """One row: int8-auto, its scan, int8-crt-<m> and int8-gcrt-<m>, ZGEMM on seed-paper inputs."""
    def part():
        return (rng.random((n, n)) - 0.5) * cp.exp(phi * rng.standard_normal((n, n)))
    a, b = part() + 1j * part(), part() + 1j * part()
    auto = gemm_backend.get("int8-auto")
    cells = {"auto": median_time(lambda: auto.matmul(a, b), True, args.repeats, warmup=1)}
    info = auto.last_call_info
    workspace = auto.workspace.for_call(is_gpu_array(a))
    a_rows = a.view(cp.float64)
    cells["scan"] = median_time(lambda: auto._scan(a_rows, b, 2, workspace), True, args.repeats, warmup=1)
    for name in [f"crt-{m}" for m in args.moduli] + [f"gcrt-{m}" for m in args.gaussian]:
        crt = gemm_backend.get(f"int8-{name}")
        cells[name] = median_time(lambda: crt.matmul(a, b), True, args.repeats, warmup=1)
    cells["zgemm"] = median_time(lambda: a @ b, True, args.repeats, warmup=1)
    row = "  ".join(f"{key} {value * 1e3:8.1f}" for key, value in cells.items())
    chosen = f"{info.get('moduli')}{'g' if info.get('gaussian') else ''}" if "moduli" in info else info.get("pairs")
    print(f"n={n} phi={phi}  {info.get('scheme')} {chosen} span {info.get('span_bits')}  ms: {row}", flush=True)

if __name__ == "__main__":
    main()
