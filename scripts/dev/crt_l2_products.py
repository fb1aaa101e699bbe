"""Experiment: can Ozaki-II's int32 products stay in the L2? Today one strided-batched cuBLAS call
writes every block's int32 products of a chunk (1 GB at 8192 columns, K = 1024, 32 blocks) and
the reconstruction reads them back from DRAM. Here the chunk's rows are taken `sub` at a time and
the blocks `group` at a time, so that each call's int32 products (group x sub x K) fit the L2;
a small kernel reduces them at once to int8 residues (symmetric, modulo each block's p), which
are all the reconstruction needs. Times both, with a kernel that reads every block's value of
each output (as the reconstruction does) from the int32 products or from the int8 residues, and
checks the residues against the int32 products. Development script; prints one table.

    python scripts/dev/crt_l2_products.py --rows 8192 --k 1024 --sub 512 1024 --group 4 8
"""
import argparse

import numpy as np

from gemm_backend.arrays import cupy_module
from gemm_backend.ozaki.crt import crt_plan
from qsim.benchmarking import median_time, print_table

KERNELS = r"""
// residues[b][row0 + i][c] = products[b - first][i][c] mods p_(b / parts), b = first .. first + group - 1
extern "C" __global__ void reduce_products(const int4 *products, long long quads_per_block, int first, int parts,
                                           const double *moduli, long long row0, long long rows, int k,
                                           int *residues, long long group_quads)
{
    for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < group_quads;
         q += (long long)gridDim.x * blockDim.x) {
        const int b = first + (int)(q / quads_per_block);
        const long long within = q % quads_per_block;
        const int p = (int)moduli[b / parts];
        const int magic = (int)((0x100000000ull + p / 2) / p), half = (p - 1) / 2;
        const int4 v = products[q];
        const int values[4] = {v.x, v.y, v.z, v.w};
        unsigned packed = 0;
        for (int e = 0; e < 4; ++e) {
            const int u = values[e] - __mulhi(values[e], magic) * p;
            packed |= (unsigned)((u > half ? u - p : u) & 0xff) << (8 * e);
        }
        residues[((long long)b * rows * k + row0 * k) / 4 + within] = (int)packed;
    }
}

// sums[o] = sum over the blocks of values[b][o]: every block's value of each output read once.
template <class T>
__device__ void read_blocks(const T *values, long long outputs, int blocks, int *sums)
{
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < outputs; o += (long long)gridDim.x * blockDim.x) {
        int s = 0;
        for (int b = 0; b < blocks; ++b) s += values[b * outputs + o];
        sums[o] = s;
    }
}
extern "C" __global__ void read_int32(const int *v, long long outputs, int blocks, int *sums) { read_blocks(v, outputs, blocks, sums); }
extern "C" __global__ void read_int8(const signed char *v, long long outputs, int blocks, int *sums) { read_blocks(v, outputs, blocks, sums); }
"""
COLUMNS = [("rows", "rows", "{}"), ("k", "k", "{}"), ("sub", "sub", "{}"), ("group", "group", "{}"),
           ("gemm", "int32 GEMM ms", "{:.3f}"), ("read32", "read int32 ms", "{:.3f}"),
           ("l2", "sub-chunked GEMM + int8 ms", "{:.3f}"), ("read8", "read int8 ms", "{:.3f}"),
           ("ratio", "new / today", "{:.2f}"), ("exact", "residues equal", "{}")]


def strided_gemm(a, g, out, first_row, rows, first_block, blocks, k, width):
    """out (blocks, rows, k) int32 = block products of a's rows first_row.. and g, blocks first_block.."""
    cp = cupy_module()
    from cupy_backends.cuda.libs import cublas
    one, zero = np.array(1, np.int32), np.array(0, np.int32)
    handle = cp.cuda.device.get_cublas_handle()
    cublas.gemmStridedBatchedEx(handle, 1, 0, k, rows, k, one.ctypes.data, g.data.ptr + first_block * k, 3, width, k,
                                a.data.ptr + first_row * width + first_block * k, 3, width, k, zero.ctypes.data,
                                out.data.ptr, 10, k, rows * k, blocks, 72, -1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--moduli", type=int, default=16)
    parser.add_argument("--sub", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--group", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    cp = cupy_module()
    module = cp.RawModule(code=KERNELS, options=("--std=c++17",))
    reduce, read32, read8 = (module.get_function(name) for name in ("reduce_products", "read_int32", "read_int8"))
    plan = crt_plan(args.moduli, True)
    parts, blocks, rows, k = 2, 2 * args.moduli, args.rows, args.k
    width = blocks * k
    moduli = cp.asarray(np.ascontiguousarray(plan.p))
    rng = cp.random.default_rng(1)
    a = rng.integers(-120, 121, size=(rows, width), dtype=cp.int8)
    g = rng.integers(-120, 121, size=(k, width), dtype=cp.int8)
    products = cp.empty((blocks, rows, k), cp.int32)
    residues = cp.empty((blocks, rows, k), cp.int8)
    sums = cp.empty(rows * k, cp.int32)
    grid = 132 * 16

    def today():
        strided_gemm(a, g, products, 0, rows, 0, blocks, k, width)

    p = cp.repeat(cp.asarray(np.asarray(plan.p, np.int64)), parts)[:, None, None]
    today()
    expected = (products.astype(cp.int64) % p + p) % p
    expected = cp.where(expected > (p - 1) // 2, expected - p, expected).astype(cp.int8)
    t_gemm = median_time(today, True, args.repeats)
    t_read32 = median_time(lambda: read32((grid,), (256,), (products, cp.int64(rows * k), cp.int32(blocks), sums)), True, args.repeats)
    t_read8 = median_time(lambda: read8((grid,), (256,), (residues, cp.int64(rows * k), cp.int32(blocks), sums)), True, args.repeats)
    table = []
    for sub in args.sub:
        for group in args.group:
            scratch = cp.empty(group * sub * k, cp.int32)

            def sub_chunked():
                for r0 in range(0, rows, sub):
                    for b0 in range(0, blocks, group):
                        strided_gemm(a, g, scratch, r0, sub, b0, group, k, width)
                        quads = group * sub * k // 4
                        reduce((grid,), (256,), (scratch, cp.int64(sub * k // 4), cp.int32(b0), cp.int32(parts), moduli,
                                                  cp.int64(r0), cp.int64(rows), cp.int32(k), residues, cp.int64(quads)))

            residues.fill(0)
            sub_chunked()
            exact = bool((residues == expected).all())
            t_l2 = median_time(sub_chunked, True, args.repeats)
            table.append({"rows": rows, "k": k, "sub": sub, "group": group, "gemm": t_gemm * 1e3, "read32": t_read32 * 1e3,
                          "l2": t_l2 * 1e3, "read8": t_read8 * 1e3, "ratio": (t_l2 + t_read8) / (t_gemm + t_read32),
                          "exact": exact})
    print_table(table, COLUMNS)


if __name__ == "__main__":
    main()
