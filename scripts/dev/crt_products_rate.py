"""Ozaki-II's products reduced on the chip (crt_products.reduced_products) timed alone, batched so
that no host time shows: ms a call, the tensor rate and the DRAM rate it would need to move its
bytes (a's residues read once, the int8 residues written once). Development script; prints one table.

    python scripts/dev/crt_products_rate.py --rows 16384 --cols 512 --padded 512 --moduli 16
"""
import argparse

import numpy as np

from gemm_backend.arrays import cupy_module
from gemm_backend.ozaki import crt_products
from gemm_backend.ozaki.crt import crt_plan
from qsim.benchmarking import median_time, print_table

COLUMNS = [("rows", "rows", "{}"), ("cols", "cols", "{}"), ("padded", "padded", "{}"), ("blocks", "blocks", "{}"),
           ("ms", "ms", "{:.3f}"), ("pops", "POPS", "{:.2f}"), ("tbs", "DRAM TB/s needed", "{:.2f}")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[16384, 8192])
    parser.add_argument("--cols", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--padded", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--moduli", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args()
    cp = cupy_module()
    plan = crt_plan(args.moduli, True)
    blocks = plan.count * 2
    moduli = cp.asarray(np.ascontiguousarray(plan.p))
    rng = cp.random.default_rng(1)
    table = []
    for rows, cols, padded in zip(args.rows, args.cols, args.padded):
        a = rng.integers(-120, 121, size=(rows, blocks * padded), dtype=cp.int8)
        g = rng.integers(-120, 121, size=(cols, blocks * padded), dtype=cp.int8)
        out = cp.empty((blocks, rows, cols), cp.int8)
        seconds = median_time(lambda: crt_products.reduced_products(a, g, padded, blocks, 2, moduli, out), True,
                              args.repeats, batch=args.batch)
        table.append({"rows": rows, "cols": cols, "padded": padded, "blocks": blocks, "ms": seconds * 1e3,
                      "pops": 2.0 * blocks * rows * cols * padded / seconds / 1e15,
                      "tbs": (a.nbytes + out.nbytes) / seconds / 1e12})
    print_table(table, COLUMNS)


if __name__ == "__main__":
    main()
