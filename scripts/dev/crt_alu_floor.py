"""The arithmetic floor of a fused Ozaki-II state-gate kernel on this GPU.

A fused kernel would not move residues or int32 products through memory, but it would still
do, per state element, the scaling and the residues modulo every modulus, and per output the
CRT reconstruction. kernels/crt_alu_floor.cu runs exactly that arithmetic (the device functions
of gemm_backend/ozaki/kernels/ozaki_crt.cu) on register values, 2^N elements and 2^N outputs, and
this script prints its time next to the memory floor of one gate (32 bytes per amplitude at the
measured copy bandwidth): a lower bound on any fused Ozaki-II gate built on this arithmetic.

    python scripts/dev/crt_alu_floor.py --qubits 30 --moduli 13 14 15
"""
import argparse
from pathlib import Path

import cupy as cp

from gemm_backend.kernel_launch import kernel_path, persistent_blocks
from gemm_backend.ozaki.crt_backend import _device_tables
from qsim.benchmarking import copy_bandwidth, median_time, print_table

COLUMNS = [("moduli", "moduli", "{}"), ("residues_ms", "residues ms", "{:.1f}"),
           ("reconstruct_ms", "reconstruct ms", "{:.1f}"), ("total_ms", "total ms", "{:.1f}"),
           ("x_floor", "x floor", "{:.2f}")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--moduli", type=int, nargs="+", default=[13, 14, 15])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    module = cp.RawModule(code=(Path(__file__).with_name("kernels") / "crt_alu_floor.cu").read_text(),
                          options=("--std=c++17", f"-I{kernel_path('ozaki_crt.cu').parent}"))
    residues, reconstruct = module.get_function("residues_floor"), module.get_function("reconstruct_floor")
    count = cp.int64(1 << args.qubits)
    grid, block = (persistent_blocks(1 << 30, 8),), (256,)
    floor = 32 * (1 << args.qubits) / copy_bandwidth(True)
    rows = []
    for moduli in args.moduli:
        t = _device_tables(moduli, cp.cuda.Device().id)
        int_sum, double_sum = cp.zeros(1, cp.int32), cp.zeros(1, cp.float64)
        seconds_residues = median_time(lambda: residues(grid, block, (
            count, cp.int32(50), cp.int32(moduli), t["p"], t["inv_p"], t["pow2_32"], t["pow2_64"], int_sum)),
            True, args.repeats)
        seconds_reconstruct = median_time(lambda: reconstruct(grid, block, (
            count, cp.int32(moduli), t["p"], t["inv_p"], t["inverse"], cp.int32(t["product_limbs"].size),
            t["partial_limbs"], t["product_limbs"], double_sum)), True, args.repeats)
        total = seconds_residues + seconds_reconstruct
        rows.append({"moduli": moduli, "residues_ms": 1e3 * seconds_residues,
                     "reconstruct_ms": 1e3 * seconds_reconstruct, "total_ms": 1e3 * total, "x_floor": total / floor})
    print(f"N = {args.qubits}: memory floor of one gate {floor * 1e3:.2f} ms")
    print_table(rows, COLUMNS)


if __name__ == "__main__":
    main()
