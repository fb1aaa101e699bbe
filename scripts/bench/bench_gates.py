"""Per-gate time of dense d-qubit gates on an N-qubit state, for several backends side by side.

For each N, d and target set (contiguous from a first target q, and with --scattered named sets of
non-contiguous targets), applies one Haar-random gate through the engine's own path
(qsim.run_loop.apply_gate_plan with a registry backend) to a random normalized state and reports, per backend, the
median time (CUDA events around --batch back-to-back gates, after a warm-up), the memory floor (read + write the state once:
32 * 2^N bytes over the copy bandwidth measured in the same run), time / floor, time / the first
backend's time (the baseline, measured in the same run), the kernel path, the INT8 plan, and with
--error the error of that one gate against a double-double application of it
(||out - ref||_2 / ||ref||_2, on a fresh copy of the state). Each finished row is reported on
standard error as it comes and, with --json, written to the file at once ("finished": false until
the last row), so that a run stopped on a time limit keeps the rows it measured.

    python scripts/bench/bench_gates.py --qubits 28 30 --gate-sizes 2 3 4 5 6 --backends cublas,int8-auto,int8-8 \\
        --targets 0 2 middle top --scattered spread gaps top0 --error --json out.json
"""
import argparse
import sys

import numpy as np

import gemm_backend
from circuits import haar_unitary
from qsim.apply import apply_plan_pair, plan_gate
from gemm_backend import parse_label
from qsim.device import resolve_device
from qsim.output import check_output_path_or_exit, write_json
from qsim.run_loop import apply_gate_plan
from qsim.benchmarking import copy_bandwidth, first_targets, median_time, print_table


SCATTERED_SETS = ("spread", "gaps", "top0", "unsorted")


def scattered_targets(n_qubits: int, d: int, name: str) -> tuple:
    """Non-contiguous targets of a named set: 'spread' (evenly over all qubits, 0 and the top
    included), 'gaps' (0, 2, 4, ...: gaps of one), 'top0' (qubit 0 and the d - 1 top qubits),
    'unsorted' (spread, listed in reverse order)."""
    spread = tuple(round(i * (n_qubits - 1) / (d - 1)) for i in range(d))
    sets = {"spread": spread, "gaps": tuple(range(0, 2 * d, 2)),
            "top0": (0,) + tuple(range(n_qubits - d + 1, n_qubits)), "unsorted": spread[::-1]}
    return sets[name]


def target_sets(n_qubits: int, d: int, first_names, scattered_names) -> list:
    """(label, targets) of every target set to time; d = 1 has no scattered sets."""
    sets = [(str(q), tuple(range(q, q + d))) for q in first_targets(n_qubits, d, first_names)]
    if d > 1:
        sets += [(name, scattered_targets(n_qubits, d, name)) for name in scattered_names]
    return sets


def gate_error(plan, state, u_dev, backend, device) -> float:
    """||U psi (backend) - U psi (double-double)||_2 / ||U psi (dd)||_2 for one gate."""
    from gemm_backend.doubledouble_gate import apply_batched_dd

    xp = device.xp
    out = state.copy()
    apply_gate_plan(backend, device, plan, u_dev, out, None, 0, 1)
    hi, lo = state.copy(), xp.zeros_like(state)
    apply_plan_pair(plan, hi, lo, lambda h, low: apply_batched_dd(u_dev, h, low), 1 << 24)
    difference = (out - hi) - lo
    return float(xp.linalg.norm(difference) / xp.linalg.norm(hi))


def bench_size(n_qubits, gate_sizes, target_names, scattered_names, device, backends, bandwidth, repeats, with_error,
               on_row, batch=3):
    """Measures the rows of one state size, passing each to on_row as soon as it is done."""
    xp = device.xp
    rng = np.random.default_rng(n_qubits)
    state = xp.asarray(rng.standard_normal(1 << n_qubits)) + 1j * xp.asarray(rng.standard_normal(1 << n_qubits))
    state /= xp.linalg.norm(state)
    needs_spare = any(not b.works_in_place(1 << d, device.on_gpu) for b in backends.values() for d in gate_sizes)
    scratch = xp.empty_like(state) if needs_spare else None
    floor = 32 * (1 << n_qubits) / bandwidth
    baseline = next(iter(backends))
    for d in gate_sizes:
        u = haar_unitary(1 << d, rng)
        u_dev = xp.asarray(u)
        for set_label, targets in target_sets(n_qubits, d, target_names, scattered_names):
            plan = plan_gate(n_qubits, targets, u)
            row = {"qubits": n_qubits, "d": d, "first_target": set_label, "targets": list(targets),
                   "floor_ms": floor * 1e3}
            for label, backend in backends.items():
                low = min(targets)
                backend.warm_up(u_dev, xp.asarray(rng.standard_normal((2, 1 << d, min(1 << low, 64))) + 0j))
                backend.prepare(u_dev)
                backend.start_run()  # no per-gate host synchronisation, as in a simulation
                spare = None if backend.works_in_place(plan.k, device.on_gpu) else scratch
                layouts = []
                seconds = median_time(lambda b=backend: layouts.append(apply_gate_plan(b, device, plan, u_dev, state, spare, 0, 1)[2]),
                                      device.on_gpu, repeats, batch=batch)
                info = backend.last_call_info
                row[f"{label}_layout"] = layouts[-1]
                row[f"{label}_ms"] = seconds * 1e3
                row[f"{label}_x_floor"] = seconds / floor
                row[f"{label}_x_base"] = seconds * 1e3 / row[f"{baseline}_ms"]
                packed = f"@K{info['kernel_size']}" if info.get("kernel_size", 1 << d) != 1 << d else ""
                row[f"{label}_kernel"] = (info.get("kernel", "") + packed
                                          + ("+T" if layouts[-1] == "transposed" else ""))
                if "pairs" in info:
                    row[f"{label}_plan"] = f"{info.get('splits_state')}/{info.get('splits_gate')}/{info['top']}"
                elif "moduli" in info:
                    row[f"{label}_plan"] = f"m={info['moduli']}{'g' if info.get('gaussian') else ''}"
                if with_error:
                    state /= xp.linalg.norm(state)
                    row[f"{label}_error"] = gate_error(plan, state, u_dev, backend, device)
                backend.finish_run()
            on_row(row)


def row_summary(row: dict, backends) -> str:
    """One line for a finished row: each backend's median and its ratio to the baseline."""
    times = ", ".join(f"{label} {row[f'{label}_ms']:.2f} ms ({row[f'{label}_x_base']:.2f}x)" for label in backends)
    return f"N={row['qubits']} d={row['d']} targets {row['first_target']}: {times}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[28])
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=list(range(2, 11)))
    parser.add_argument("--targets", nargs="+", default=["0", "middle", "top"],
                        help="first target qubits of contiguous sets: integers, 'middle', 'top'")
    parser.add_argument("--scattered", nargs="*", default=[], choices=SCATTERED_SETS,
                        help="named sets of non-contiguous targets (see scattered_targets)")
    parser.add_argument("--backends", default="cublas",
                        help="comma-separated labels name[@option=value...]; the first is the baseline")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=3, help="gates applied back to back per timed sample")
    parser.add_argument("--error", action="store_true", help="also the error of one gate against double-double")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if args.json:
        check_output_path_or_exit(args.json, "--json", parser.prog)
    device = resolve_device(args.device)
    backends = {}
    for label in args.backends.split(","):
        name, options = parse_label(label)  # e.g. cublas@dmma_min_qubits=7, as in qsim compare
        backends[label] = gemm_backend.get(name, **options)
    bandwidth = copy_bandwidth(device.on_gpu)
    print(f"device {device.name()}, copy bandwidth {bandwidth / 1e12:.3f} TB/s, backends {', '.join(backends)}")
    rows = []

    def report(finished: bool) -> None:
        if args.json:
            write_json(args.json, {"bandwidth_Bps": bandwidth, "device": device.name(), "backends": list(backends),
                                   "finished": finished, "rows": rows})

    def on_row(row: dict) -> None:
        rows.append(row)
        print(row_summary(row, backends), file=sys.stderr, flush=True)
        report(False)

    for n_qubits in args.qubits:
        bench_size(n_qubits, args.gate_sizes, args.targets, args.scattered, device, backends, bandwidth,
                   args.repeats, args.error, on_row, args.batch)
        if device.on_gpu:
            device.xp.get_default_memory_pool().free_all_blocks()
    columns = [("qubits", "N", "{}"), ("d", "d", "{}"), ("first_target", "targets", "{}"), ("floor_ms", "floor", "{:.2f}")]
    for label in backends:
        short = label.split("@")[0]
        columns += [(f"{label}_ms", f"{short}_ms", "{:.2f}"), (f"{label}_x_floor", "x_flr", "{:.2f}"),
                    (f"{label}_x_base", "x_base", "{:.2f}"), (f"{label}_kernel", "path (+T: transposed)", "{}"),
                    (f"{label}_plan", "plan", "{}")]
        if args.error:
            columns.append((f"{label}_error", "error", "{:.1e}"))
    print_table(rows, columns)
    report(True)


if __name__ == "__main__":
    main()
