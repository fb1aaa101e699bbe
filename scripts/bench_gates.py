"""Per-gate time of dense d-qubit gates on an N-qubit state, beside the memory floor.

For d = 2..10 and targets starting at qubit 0, the middle and the top, applies a Haar-random
gate through the engine's own path (qsim.apply + a registry backend) on a random normalized
state and reports the median time, the memory floor (read + write the state once: 32 * 2^N bytes
over the measured copy bandwidth) and the ratio. With --compare-cublas-only the small-gate
kernel is switched off in a second column, to show what it buys.

    python scripts/bench_gates.py --qubits 28 30 --device gpu --json out.json
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import gemm_backend  # noqa: E402
from circuits import haar_unitary  # noqa: E402
from qsim.apply import apply_plan, plan_gate  # noqa: E402
from qsim.device import resolve_device  # noqa: E402
from timing import copy_bandwidth, median_time, print_table  # noqa: E402


def bench_size(n_qubits, gate_sizes, device, backends, bandwidth, repeats):
    xp = device.xp
    rng = np.random.default_rng(n_qubits)
    state = xp.asarray(rng.standard_normal(1 << n_qubits)) + 1j * xp.asarray(rng.standard_normal(1 << n_qubits))
    state /= xp.linalg.norm(state)
    scratch = xp.empty_like(state)
    floor = 32 * (1 << n_qubits) / bandwidth
    rows = []
    for d in gate_sizes:
        u = haar_unitary(1 << d, rng)
        u_dev = xp.asarray(u)
        for low in sorted({0, (n_qubits - d) // 2, n_qubits - d}):
            plan = plan_gate(n_qubits, tuple(range(low, low + d)), u)
            row = {"qubits": n_qubits, "d": d, "first_target": low, "floor_ms": floor * 1e3}
            for label, backend in backends.items():
                if label == "cublas_only" and plan.k > 32:
                    continue  # same path as the engine column above the small-gate kernel's range
                spare = None if backend.works_in_place(plan.k, device.on_gpu) else scratch
                product = lambda x, out, b=backend: b.apply_batched(u_dev, x, out)  # noqa: E731
                seconds = median_time(lambda: apply_plan(plan, state, product, spare), device.on_gpu, repeats)
                row[f"{label}_ms"] = seconds * 1e3
                row[f"{label}_over_floor"] = seconds / floor
                row[f"{label}_kernel"] = backend.last_call_info.get("kernel", "")
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[28])
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=list(range(2, 11)))
    parser.add_argument("--backend", default="cublas")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compare-cublas-only", action="store_true",
                        help="add a column with the small-gate kernel off (cublas backend only)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    device = resolve_device(args.device)
    backends = {"engine": gemm_backend.get(args.backend)}
    if args.compare_cublas_only:
        backends["cublas_only"] = gemm_backend.get("cublas", small_gate_max_qubits=0)
    bandwidth = copy_bandwidth(device.on_gpu)
    print(f"device {device.name()}, copy bandwidth {bandwidth / 1e12:.3f} TB/s, backend {args.backend}")
    rows = []
    for n_qubits in args.qubits:
        rows += bench_size(n_qubits, args.gate_sizes, device, backends, bandwidth, args.repeats)
        if device.on_gpu:
            device.xp.get_default_memory_pool().free_all_blocks()
    columns = [("qubits", "N", "{}"), ("d", "d", "{}"), ("first_target", "q", "{}"), ("floor_ms", "floor_ms", "{:.2f}")]
    for label in backends:
        columns += [(f"{label}_ms", f"{label}_ms", "{:.2f}"), (f"{label}_over_floor", "x_floor", "{:.2f}"),
                    (f"{label}_kernel", "kernel", "{}")]
    print_table(rows, columns)
    if args.json:
        Path(args.json).write_text(json.dumps({"bandwidth_Bps": bandwidth, "device": device.name(), "rows": rows},
                                              indent=2))


if __name__ == "__main__":
    main()
