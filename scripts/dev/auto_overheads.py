"""int8-auto's per-call costs beside its product, on the GPU, each a median of CUDA-event times
in one process:

  matmul  square complex n^3 at phi = 1 (the seed paper's inputs): cublas, int8-auto, the scan
          alone (span_scan.scan_gpu), the host's plan choice alone (matmul_choice, wall time),
          and the Ozaki-II product int8-auto chose, alone (int8-gcrt-<m> / int8-crt-<m>)
  rho     the rho rule's statistics of an N-qubit state for d-qubit gates at a few first
          targets (state_histogram, with its flag check) against one read of the state
          (cupy's sum, read-bound); the whole-run cost is the headline's (qsim run with
          --backend int8-auto@rho=1 beside int8-auto)

    python scripts/dev/auto_overheads.py matmul --sizes 8192
    python scripts/dev/auto_overheads.py rho --qubits 30 --gate-size 5
"""
import argparse
import time

import cupy as cp
import numpy as np

import gemm_backend
from gemm_backend.ozaki.span_scan import scan_gpu
from gemm_backend.ozaki.split import bits_per_slice
from gemm_backend.ozaki.state_histogram import state_histogram
from qsim.benchmarking import gpu_state_and_floor, median_time, print_table


def seed_paper(rng, n: int, phi: float):
    def part():
        return (rng.random((n, n)) - 0.5) * cp.exp(phi * rng.standard_normal((n, n)))
    return part() + 1j * part()


def matmul_rows(n: int, phi: float, repeats: int) -> list:
    rng = cp.random.default_rng(1)
    a, b = seed_paper(rng, n, phi), seed_paper(rng, n, phi)
    auto = gemm_backend.get("int8-auto")
    auto.matmul(a, b)
    info = auto.last_call_info
    chosen = f"int8-{'g' if info.get('gaussian') else ''}crt-{info['moduli']}" if info["scheme"] == "ozaki2" else None
    bits = bits_per_slice(2 * n)
    statistics = auto.split_rule.statistics_of_spans(*scan_gpu(a.view(cp.float64), b, 2, bits)[2:])
    choice_s = []
    for _ in range(repeats):
        start = time.perf_counter()
        auto.split_rule.matmul_choice(n, n, n, True, statistics)
        choice_s.append(time.perf_counter() - start)
    rows = [{"what": "cublas", "ms": 1e3 * median_time(lambda: cp.matmul(a, b), True, repeats)},
            {"what": f"int8-auto ({chosen or info['scheme']})",
             "ms": 1e3 * median_time(lambda: auto.matmul(a, b), True, repeats)},
            {"what": "scan alone", "ms": 1e3 * median_time(lambda: scan_gpu(a.view(cp.float64), b, 2, bits), True, repeats)},
            {"what": "host choice alone", "ms": 1e3 * float(np.median(choice_s))}]
    if chosen:
        product = gemm_backend.get(chosen)
        rows.append({"what": f"{chosen} alone", "ms": 1e3 * median_time(lambda: product.matmul(a, b), True, repeats)})
    for row in rows:
        row.update(n=n, phi=phi)
    return rows


def rho_rows(qubits: int, d: int, targets: list, repeats: int) -> list:
    state, floor = gpu_state_and_floor(qubits)
    read_ms = 1e3 * median_time(lambda: state.view(cp.float64).sum(), True, repeats)
    rows = []
    for first in targets:
        view = state.reshape(1 << (qubits - d - first), 1 << d, 1 << first)
        rows.append({"what": f"histogram q={first}", "ms": 1e3 * median_time(lambda: state_histogram(view), True, repeats),
                     "read_ms": read_ms, "floor_ms": 1e3 * floor})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("matmul", "rho"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[8192])
    parser.add_argument("--phi", type=float, default=1.0)
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--gate-size", type=int, default=5)
    parser.add_argument("--targets", type=int, nargs="+", default=[0, 12, 25])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if args.mode == "matmul":
        rows = [row for n in args.sizes for row in matmul_rows(n, args.phi, args.repeats)]
        print_table(rows, [("n", "n", "{}"), ("phi", "phi", "{}"), ("what", "what", "{}"), ("ms", "ms", "{:.2f}")])
    else:
        rows = rho_rows(args.qubits, args.gate_size, args.targets, args.repeats)
        print_table(rows, [("what", "what", "{}"), ("ms", "ms", "{:.2f}"), ("read_ms", "one read (ms)", "{:.2f}"),
                           ("floor_ms", "read + write floor (ms)", "{:.2f}")])


if __name__ == "__main__":
    main()
