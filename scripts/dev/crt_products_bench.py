"""Experiment: Ozaki-II's INT8 products reduced modulo p in the GEMM's epilogue (int8 out,
scripts/dev/kernels/crt_products.cu: 128 x 128 block tiles, and the block's rows of a resident in
shared memory; and the package's kernel, ozaki/crt_products.py: wgmma fed by bulk tensor copies)
against cuBLAS's int32 products (gemm_tn_blocks), on a gate chunk's shapes: every block's residues checked against the int32 products reduced modulo p, then all
timed. Development script; prints one table.

    python scripts/dev/crt_products_bench.py --rows 8192 --k 1024 --moduli 16
"""
import argparse
from pathlib import Path

import numpy as np

from gemm_backend.arrays import cupy_module
from gemm_backend.cublas_ex import gemm_tn_blocks
from gemm_backend.ozaki.crt import crt_plan
from gemm_backend.ozaki.crt_products import reduced_products
from qsim.benchmarking import median_time, print_table

SOURCE = Path(__file__).parent / "kernels" / "crt_products.cu"
TILE, STAGES, TILE_K = 128, 4, 64
RESIDENT_THREADS, RESIDENT_STAGES, RESIDENT_N = 512, 3, 256
COLUMNS = [("rows", "rows", "{}"), ("k", "k", "{}"), ("blocks", "blocks", "{}"), ("cublas", "cuBLAS int32 ms", "{:.3f}"),
           ("cublas_pops", "POPS", "{:.2f}"), ("mod", "tiles, int8 out ms", "{:.3f}"), ("mod_pops", "POPS", "{:.2f}"),
           ("resident", "resident rows, int8 out ms", "{:.3f}"), ("resident_pops", "POPS", "{:.2f}"),
           ("package", "crt_products.cu ms", "{:.3f}"), ("package_pops", "POPS", "{:.2f}"),
           ("exact", "residues equal", "{}")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[8192, 16384])
    parser.add_argument("--k", type=int, nargs="+", default=[1024, 512])
    parser.add_argument("--moduli", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    cp = cupy_module()
    plan = crt_plan(args.moduli, True)
    parts = 2
    blocks = plan.count * parts
    moduli = cp.asarray(np.ascontiguousarray(plan.p))
    module = cp.RawModule(code=SOURCE.read_text(), options=("--std=c++17",))
    kernel = module.get_function("crt_products_mod")
    kernel.max_dynamic_shared_size_bytes = STAGES * 2 * TILE * TILE_K
    resident_kernel = module.get_function("crt_products_mod_resident")
    rng = cp.random.default_rng(1)
    table = []
    for rows, k in zip(args.rows, args.k):
        width = blocks * k
        a = rng.integers(-120, 121, size=(rows, width), dtype=cp.int8)
        g = rng.integers(-120, 121, size=(k, width), dtype=cp.int8)
        products = cp.empty((blocks, rows, k), cp.int32)
        residues = cp.empty((blocks, rows, k), cp.int8)

        def cublas():
            gemm_tn_blocks(a, g, k, blocks, out=products)

        def modular():
            kernel(((k + TILE - 1) // TILE, (rows + TILE - 1) // TILE, blocks), (256,),
                   (a, cp.int64(rows), cp.int64(width), g, cp.int32(k), cp.int64(width), cp.int32(k), cp.int32(parts),
                    moduli, residues), shared_mem=STAGES * 2 * TILE * TILE_K)

        resident_bytes = TILE * k + RESIDENT_STAGES * RESIDENT_N * TILE_K
        resident_kernel.max_dynamic_shared_size_bytes = resident_bytes

        def resident():
            resident_kernel((1, (rows + TILE - 1) // TILE, blocks), (RESIDENT_THREADS,),
                            (a, cp.int64(rows), cp.int64(width), g, cp.int32(k), cp.int64(width), cp.int32(k),
                             cp.int32(parts), moduli, residues), shared_mem=resident_bytes)

        def package():
            reduced_products(a, g, k, blocks, parts, moduli, residues)

        cublas()
        p = cp.repeat(cp.asarray(np.asarray(plan.p, np.int64)), parts)[:, None, None]
        expected = (products.astype(cp.int64) % p + p) % p
        expected = cp.where(expected > (p - 1) // 2, expected - p, expected)
        exact = []
        for run in (modular, resident, package):
            residues.fill(0)
            run()
            exact.append(bool((expected == residues.astype(cp.int64)).all()))
        operations = 2.0 * blocks * rows * k * k
        times = [median_time(run, True, args.repeats) for run in (cublas, modular, resident, package)]
        row = {"rows": rows, "k": k, "blocks": blocks, "exact": "/".join(map(str, exact))}
        for key, seconds in zip(("cublas", "mod", "resident", "package"), times):
            row[key], row[key + "_pops"] = seconds * 1e3, operations / seconds / 1e15
        table.append(row)
    print_table(table, COLUMNS)


if __name__ == "__main__":
    main()
