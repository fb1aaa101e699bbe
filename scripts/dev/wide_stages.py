"""Time the wide fused INT8 gate kernel as it is, without its products (the k-tile loop emptied:
what remains is the reading, the column maxima, the digits and the epilogue that the products
do not hide), and optionally another version of its source, side by side under int8-auto's
plans (and those of --target-error 1e-10), x the memory floor of the same run.

    git show 7f2b9a8:gemm_backend/ozaki/kernels/ozaki_gate_wide.cu > /tmp/before.cu
    python scripts/dev/wide_stages.py --qubits 30 --gate-sizes 7 8 --targets 0 12 --other /tmp/before.cu
"""
import argparse
import pathlib

import cupy as cp

import gemm_backend.ozaki.gate as gate
from gemm_backend.kernel_launch import include_options, kernel_path
from qsim.benchmarking import gpu_state_and_floor, variant_cells
from wide_variants import wide_gate_cases  # this folder is on the path when the script runs

SOURCE = kernel_path("ozaki_gate_wide.cu")
EMPTY_PRODUCTS = ("for (int kt = 0; kt < KT; ++kt) {", "for (int kt = 0; kt < 0; ++kt) {")


def compiled(code: str):
    """gate._kernel's stand-in: (source, name, definitions) -> the kernel function of `code` in
    place of the source, compiled once per name."""
    functions = {}

    def function(source, name, definitions):
        if name not in functions:
            module = cp.RawModule(code=code, options=include_options(SOURCE) + definitions, name_expressions=[name])
            functions[name] = module.get_function(name)
        return functions[name]
    return function


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[7, 8])
    parser.add_argument("--targets", nargs="+", default=["0", "12"])
    parser.add_argument("--other", type=pathlib.Path, help="another source of the kernel with the same template parameters (from 7f2b9a8 on)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    source = SOURCE.read_text()
    assert EMPTY_PRODUCTS[0] in source, "the k-tile loop is not where this script expects it"
    versions = {"as-is": compiled(source), "no-products": compiled(source.replace(*EMPTY_PRODUCTS))}
    if args.other:
        versions["other"] = compiled(args.other.read_text())
    state, floor = gpu_state_and_floor(args.qubits)
    flag = cp.zeros(1, cp.int32)
    print(f"N={args.qubits} floor {floor * 1e3:.2f} ms")
    for label, u, plan, view in wide_gate_cases(state, args.qubits, args.gate_sizes, args.targets):
        launch = gate.plan_launch(u.shape[0], plan)

        def call(version, u=u, plan=plan, view=view, launch=launch):
            gate._kernel = version  # apply_fused_gate looks the kernel up by name here
            gate.apply_fused_gate(u, view, view, plan, launch, flag)
        variants = [(tag, lambda version=version: call(version)) for tag, version in versions.items()]
        print(f"{label}  {variant_cells(variants, floor, args.repeats)}", flush=True)


if __name__ == "__main__":
    main()
