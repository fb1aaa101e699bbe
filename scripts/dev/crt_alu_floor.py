"""The arithmetic floor of a fused Ozaki-II state-gate kernel on this GPU, new against former.

A fused kernel would not move residues or int32 products through memory, but it would still
do, per state element, the scaling and the residues modulo every modulus, and per output the
CRT reconstruction. kernels/crt_alu_floor.cu runs exactly that arithmetic (the device functions
of gemm_backend/ozaki/kernels/crt_arith.cuh) on register values, 2^N elements and 2^N outputs, and
beside it, in the same run, the FP64-pipe arithmetic it replaced (kept only in that file). This
script prints both times, their ratio, and the new total next to the memory floor of one gate
(32 bytes per amplitude at the measured copy bandwidth): a lower bound on any fused Ozaki-II
gate built on this arithmetic.

    python scripts/dev/crt_alu_floor.py --qubits 30 --moduli 13 14 15 16
"""
import argparse
from pathlib import Path

import cupy as cp
import numpy as np

from gemm_backend.ozaki.crt import crt_plan
from gemm_backend.kernel_launch import kernel_path, persistent_blocks
from qsim.benchmarking import copy_bandwidth, median_time, print_table

COLUMNS = [("moduli", "moduli", "{}"), ("residues_ms", "residues ms", "{:.1f}"),
           ("former_residues_ms", "former", "{:.1f}"), ("residues_x", "x faster", "{:.2f}"),
           ("reconstruct_ms", "reconstruct ms", "{:.1f}"), ("former_reconstruct_ms", "former", "{:.1f}"),
           ("reconstruct_x", "x faster", "{:.2f}"), ("total_ms", "total ms", "{:.1f}"),
           ("x_floor", "x floor", "{:.2f}")]
SCALE = 50  # amplitudes in [-1, 1) scaled by 2^50: integers below 2^50, as the moduli counts here give


def tables(moduli: int) -> dict:
    plan = crt_plan(moduli)
    names = ("p", "inv_p", "inverse", "pow2_32", "pow2_64", "partial_limbs", "product_limbs")
    return {name: cp.asarray(np.ascontiguousarray(getattr(plan, name))) for name in names}


def time_moduli(functions: dict, moduli: int, count, repeats: int) -> dict:
    """Median seconds of the four floor kernels for one moduli count."""
    if crt_plan(moduli).limbs not in (4, 5):
        raise SystemExit(f"reconstruct_floor is built for 4 or 5 limbs (13..20 moduli), not {moduli} moduli")
    t = tables(moduli)
    limbs = cp.int32(t["product_limbs"].size)
    grid, block = (persistent_blocks(1 << 30, 8),), (256,)
    int_sum, double_sum = cp.zeros(1, cp.int32), cp.zeros(1, cp.float64)
    launches = {
        "residues": (count, cp.int32(SCALE), cp.int32(moduli), t["p"], int_sum),
        "former_residues": (count, cp.int32(SCALE), cp.int32(moduli), t["p"], t["inv_p"], t["pow2_32"],
                            t["pow2_64"], int_sum),
        "reconstruct": (count, cp.int32(moduli), t["p"], t["inverse"], limbs, t["partial_limbs"],
                        t["product_limbs"], double_sum),
        "former_reconstruct": (count, cp.int32(moduli), t["p"], t["inv_p"], t["inverse"], limbs,
                               t["partial_limbs"], t["product_limbs"], double_sum),
    }
    return {name: median_time(lambda: functions[name](grid, block, args), True, repeats)
            for name, args in launches.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--moduli", type=int, nargs="+", default=[13, 14, 15])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    module = cp.RawModule(code=(Path(__file__).with_name("kernels") / "crt_alu_floor.cu").read_text(),
                          options=("--std=c++17", f"-I{kernel_path('ozaki_crt.cu').parent}"))
    functions = {name: module.get_function(kernel) for name, kernel in (
        ("residues", "residues_floor"), ("former_residues", "legacy_residues_floor"),
        ("reconstruct", "reconstruct_floor"), ("former_reconstruct", "legacy_reconstruct_floor"))}
    count = cp.int64(1 << args.qubits)
    floor = 32 * (1 << args.qubits) / copy_bandwidth(True)
    rows = []
    for moduli in args.moduli:
        seconds = time_moduli(functions, moduli, count, args.repeats)
        total = seconds["residues"] + seconds["reconstruct"]
        rows.append({"moduli": moduli, **{f"{name}_ms": 1e3 * value for name, value in seconds.items()},
                     "residues_x": seconds["former_residues"] / seconds["residues"],
                     "reconstruct_x": seconds["former_reconstruct"] / seconds["reconstruct"],
                     "total_ms": 1e3 * total, "x_floor": total / floor})
    print(f"N = {args.qubits}: memory floor of one gate {floor * 1e3:.2f} ms")
    print_table(rows, COLUMNS)


if __name__ == "__main__":
    main()
