"""Where int8-crt-<m> spends its time on the GPU: the stages of one tile, timed apart.

For each case (r, k, c) and number of moduli m, takes the backend's own tile plan, times its
first tile stage by stage (row scales of A and of B^T, residues of A and of B^T, the
strided-batched INT8 GEMM of all 3m products, the reconstruction), the same products as separate
GEMM calls (cublas_ex.gemm_tn_blocks's two ways), one plain INT8 GEMM of the tile's shape for the
tensor-core rate, and the whole backend call; prints ms per stage and the
whole call's share that the stages of all tiles explain. Development script: the figures that
matter go to BENCHMARKS.md through bench_gemm.py.

    python scripts/dev/crt_stages.py --square 8192 16384 --moduli 14 16 --alignments 1 256
    python scripts/dev/crt_stages.py --state 30:8 --moduli 14
"""
import argparse
import sys

from gemm_backend import cublas_ex
from gemm_backend import workspace as workspace_module
from gemm_backend.ozaki import crt_backend as ozaki_crt
from gemm_backend.arrays import cupy_module
from gemm_backend.cublas_ex import gemm_tn, gemm_tn_blocks
from qsim.benchmarking import median_time, print_table

COLUMNS = [("case", "case", "{}"), ("m", "m", "{}"), ("align", "align", "{}"), ("tile", "tile r x c", "{}"), ("tiles", "tiles", "{}"),
           ("scales", "scales ms", "{:.2f}"), ("residues", "residues ms", "{:.2f}"), ("gemm", "batched ms", "{:.2f}"),
           ("gemm_tops", "batched TOP/s", "{:.0f}"), ("loop_tops", "loop TOP/s", "{:.0f}"),
           ("one_gemm_tops", "1 gemm TOP/s", "{:.0f}"),
           ("reconstruct", "reconstruct ms", "{:.2f}"), ("stages", "stages x tiles ms", "{:.1f}"),
           ("whole", "whole ms", "{:.1f}")]

def random_complex(cp, shape, seed):
    rng = cp.random.default_rng(seed)
    parts = [rng.uniform(-0.5, 0.5, shape) * cp.exp(rng.standard_normal(shape)) for _ in range(2)]
    return parts[0] + 1j * parts[1]

def batched_and_loop(gemm):
    """(batched, loop): gemm() with gemm_tn_blocks forced to one strided-batched call, and to one call per block."""
    saved = cublas_ex.INT8_LOOP_MIN_INNER

    def forced(threshold):
        def run():
            cublas_ex.INT8_LOOP_MIN_INNER = threshold
            try:
                gemm()
            finally:
                cublas_ex.INT8_LOOP_MIN_INNER = saved
        return run

    return forced(2**62), forced(0)


def profile(name, r, k, c, moduli, workspace, repeats):
    cp = cupy_module()
    backend = ozaki_crt.OzakiCrtBackend(moduli, workspace_bytes=workspace)
    layout = ozaki_crt.CrtLayout(backend.plan, k, True)
    row_step, col_step = backend._tile_sizes(r, c, layout, True)
    tiles = -(-r // row_step) * -(-c // col_step)
    a = random_complex(cp, (r, k), 1)
    b = random_complex(cp, (k, c), 2)
    a_rows = a[:row_step].view(cp.float64)
    b_rows = ozaki_crt._transposed_rows(b, slice(0, col_step))
    tables = ozaki_crt._device_tables(moduli, False, cp.cuda.Device().id)
    plan = backend.plan

    def scales():
        return ozaki_crt._gpu_row_scales(a_rows, plan.a_bits)[0], ozaki_crt._gpu_row_scales(b_rows, plan.b_bits)[0]

    a_scales, b_scales = scales()

    def residues():
        return (ozaki_crt._gpu_residues(layout, a_rows, a_scales, tables),
                ozaki_crt._gpu_residues(layout, b_rows, b_scales, tables))

    a_res, b_res = residues()
    products = gemm_tn_blocks(a_res, b_res, layout.padded, layout.blocks)
    out = cp.empty((row_step, col_step), cp.complex128).view(cp.float64)

    def reconstruct():
        ozaki_crt._gpu_reconstruct(layout, products, a_scales, b_scales, out, tables)

    one_a, one_b = a_res[:, :layout.padded].copy(), b_res[:, :layout.padded].copy()
    batched, loop = batched_and_loop(lambda: gemm_tn_blocks(a_res, b_res, layout.padded, layout.blocks, out=products))
    times = {
        "scales": median_time(scales, True, repeats),
        "residues": median_time(residues, True, repeats),
        "gemm": median_time(batched, True, repeats),
        "one_gemm": median_time(lambda: gemm_tn(one_a, one_b), True, repeats),
        "loop": median_time(loop, True, repeats),
        "reconstruct": median_time(reconstruct, True, repeats),
    }
    whole = median_time(lambda: backend.matmul(a, b), True, max(1, repeats // 2), warmup=1)
    int8_ops = 2.0 * row_step * col_step * layout.padded
    taken = "loop" if layout.padded >= cublas_ex.INT8_LOOP_MIN_INNER else "gemm"
    stage_sum = sum(times[key] for key in ("scales", "residues", taken, "reconstruct"))
    return {"case": name, "m": moduli, "align": workspace_module.TILE_ALIGNMENT, "tile": f"{row_step} x {col_step}", "tiles": tiles,
            "scales": 1e3 * times["scales"], "residues": 1e3 * times["residues"], "gemm": 1e3 * times["gemm"],
            "gemm_tops": layout.blocks * int8_ops / times["gemm"] / 1e12,
            "one_gemm_tops": int8_ops / times["one_gemm"] / 1e12,
            "loop_tops": layout.blocks * int8_ops / times["loop"] / 1e12, "reconstruct": 1e3 * times["reconstruct"],
            "stages": 1e3 * stage_sum * tiles, "whole": 1e3 * whole}

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--square", nargs="*", type=int, default=[])
    parser.add_argument("--state", nargs="*", default=[], metavar="N:d", help="gate shapes (2^(N-d), 2^d, 2^d)")
    parser.add_argument("--moduli", nargs="+", type=int, default=[14, 16])
    parser.add_argument("--workspace-gib", type=float, default=16.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--alignments", nargs="+", type=int, default=[workspace_module.TILE_ALIGNMENT],
                        help="tile alignments to compare (1: the even split of before)")
    args = parser.parse_args(argv)
    cases = [(f"square {n}", n, n, n) for n in args.square]
    for spec in args.state:
        n_qubits, d = (int(v) for v in spec.split(":"))
        cases.append((f"state N={n_qubits} d={d}", 2 ** (n_qubits - d), 2 ** d, 2 ** d))
    rows = []
    for name, r, k, c in cases:
        for moduli in args.moduli:
            for alignment in args.alignments:
                workspace_module.TILE_ALIGNMENT = alignment
                rows.append(profile(name, r, k, c, moduli, int(args.workspace_gib * 2**30), args.repeats))
                print_table(rows[-1:], COLUMNS)
                cupy_module().get_default_memory_pool().free_all_blocks()
    print()
    print_table(rows, COLUMNS)
    return 0

if __name__ == "__main__":
    sys.exit(main())
