"""Ozaki-II gate stages on the GPU, timed apart: the kernels that read and write a chunk of a
gate's columns where they sit in the state (crt_gate_residues, crt_gate_reconstruct) against the
row kernels on the same columns gathered as rows (crt_row_scales + crt_residues,
crt_reconstruct), and the INT8 products between them, for several target sets. Development
script; prints one table.

    python scripts/dev/crt_gate_stages.py --qubits 28 --gate-size 10 --moduli 16 --chunk 8192
"""
import argparse

import gemm_backend
from gemm_backend.arrays import cupy_module
from gemm_backend.ozaki import crt_backend
from qsim.benchmarking import median_time, print_table

COLUMNS = [("targets", "targets", "{}"), ("rows", "rows: scales+residues ms", "{:.2f}"),
           ("layout", "at targets: residues ms", "{:.2f}"), ("gemm", "products ms", "{:.2f}"),
           ("rebuild_rows", "rows: reconstruct ms", "{:.2f}"), ("rebuild_layout", "at targets: reconstruct ms", "{:.2f}")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=28)
    parser.add_argument("--gate-size", type=int, default=10)
    parser.add_argument("--moduli", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=8192, help="state columns per chunk")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    cp = cupy_module()
    n, d = args.qubits, args.gate_size
    k = 1 << d
    rng = cp.random.default_rng(1)
    state = (rng.standard_normal(1 << n) + 1j * rng.standard_normal(1 << n)) * 2.0 ** -(n / 2)
    u = cp.linalg.qr(rng.standard_normal((k, k)) + 1j * rng.standard_normal((k, k)))[0]
    backend = gemm_backend.get(f"int8-gcrt-{args.moduli}")
    layout = crt_backend.CrtLayout(backend.plan, k, True)
    tiles = crt_backend._GpuTiles(layout, args.chunk, k)
    gate = backend._b_tile(tiles, u.T, slice(0, k), k)
    flag = cp.zeros(1, cp.int32)
    rows_in = state[:args.chunk * k].reshape(args.chunk, k).view(cp.float64)
    rows_out = cp.empty_like(rows_in)
    sets = {"0..d-1": tuple(range(d)), "top": tuple(range(n - d, n)), "middle": tuple(range(n // 2 - d // 2, n // 2 - d // 2 + d)),
            "spread": tuple(round(i * (n - 1) / (d - 1)) for i in range(d))}
    table = []
    for name, targets in sets.items():
        columns = crt_backend._StateColumns(state.copy(), targets)
        a_residues, a_scales = tiles.column_residues(columns, 0, args.chunk, backend.plan.a_bits, flag)
        products = tiles._products(a_residues, gate.residues)
        row = {"targets": name}
        row["rows"] = median_time(lambda: tiles.a_residues(rows_in, crt_backend._gpu_row_scales(rows_in, backend.plan.a_bits, flag)[0]),
                                  True, args.repeats) * 1e3
        row["layout"] = median_time(lambda: tiles.column_residues(columns, 0, args.chunk, backend.plan.a_bits, flag),
                                    True, args.repeats) * 1e3
        row["gemm"] = median_time(lambda: tiles._products(a_residues, gate.residues), True, args.repeats) * 1e3
        row["rebuild_rows"] = median_time(lambda: crt_backend._gpu_reconstruct(layout, products, a_scales, gate.scales, rows_out,
                                                                               tiles.tables), True, args.repeats) * 1e3
        row["rebuild_layout"] = median_time(lambda: tiles.multiply_into_columns(a_residues, a_scales, gate, columns, 0),
                                            True, args.repeats) * 1e3 - row["gemm"]
        table.append(row)
    print(f"N={n} d={d} m={args.moduli} (Gaussian) chunk={args.chunk} columns")
    print_table(table, COLUMNS)
    assert int(flag[0]) == 0


if __name__ == "__main__":
    main()
