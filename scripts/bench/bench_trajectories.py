"""Monitored brickwork trajectories on a device: time per trajectory, and what a measurement costs
against the memory floor (read the state once and write it once: 32 * 2^N bytes over the
measured copy bandwidth).

Part 1 runs T seeded trajectories of monitored_brickwork(N, d, depth, p) per gate size d through
the engine (qsim.trajectory.run_trajectories) and reports the time per trajectory (gates and
measurements, CUDA events / host-synchronised), its measuring share, and the mean time of one
measurement operation (all the qubits chosen after a layer are measured jointly). Part 2 times
one measurement of k qubits on a unit state of N qubits in isolation, split into the exact
reduction (qsim.measurement.outcome_weights) and the projection, each against the floor.

    python scripts/bench/bench_trajectories.py --qubits 28 --gate-sizes 2 5 --rate 0.1 --trajectories 100 \\
        --device gpu --json out.json
"""
import argparse

import numpy as np

from circuits import monitored_brickwork
from qsim import Simulator, measurement
from qsim.device import resolve_device
from qsim.output import check_output_path_or_exit, write_json
from qsim.trajectory import run_trajectories
from qsim.benchmarking import copy_bandwidth, median_time, print_table


def bench_trajectories(args, device, floor_s):
    rows, records = [], {}
    simulator = Simulator(args.backend, device.kind, progress=False)
    for gate_size in args.gate_sizes:
        circuit = monitored_brickwork(args.qubits, gate_size, args.depth, args.rate, args.seed)
        runs, last = run_trajectories(simulator, circuit, args.trajectories, args.seed, progress=None)
        del last
        free_device_memory(device)
        times = np.array([r["time_s"] for r in runs])
        measuring = np.array([r["measure_time_s"] for r in runs])
        operations = sum(len(r["events"]) for r in runs)
        per_measurement = measuring.sum() / operations if operations else None
        rows.append({
            "part": "trajectory", "qubits": args.qubits, "gate_size": gate_size, "depth": args.depth,
            "rate": args.rate, "trajectories": len(runs), "gates": len(circuit.dense_gates()),
            "measured_qubits_mean": float(np.mean([sum(len(e["qubits"]) for e in r["events"]) for r in runs])),
            "trajectory_ms_mean": times.mean() * 1e3, "trajectory_ms_median": float(np.median(times)) * 1e3,
            "measuring_share": float(measuring.sum() / times.sum()),
            "measurement_ms": None if per_measurement is None else per_measurement * 1e3,
            "measurement_over_floor": None if per_measurement is None else per_measurement / floor_s,
            "wall_ms_mean": float(np.mean([r["wall_s"] for r in runs])) * 1e3,
            "max_norm_error": float(max(abs(r["norm"] - 1) for r in runs)),
        })
        records[f"d{gate_size}"] = [{k: r[k] for k in ("seed", "clbits", "time_s", "measure_time_s", "wall_s", "norm",
                                                         "measurements")} for r in runs]
    return rows, records


def bench_isolated(args, device, floor_s):
    """One measurement of k qubits (spread over the register) on a unit state, its parts timed."""
    xp = device.xp
    state = xp.full(1 << args.qubits, 2.0 ** (-args.qubits / 2), dtype=xp.complex128)
    rng = np.random.default_rng(args.seed)
    rows, parts = [], {}
    for k in args.measure_qubits:
        qubits = tuple(int(q) for q in np.linspace(0, args.qubits - 1, k).round())
        parts = {
            "reduction": lambda state=state, qubits=qubits: measurement.outcome_weights(state, qubits),
            "projection": lambda state=state, qubits=qubits: measurement.project(
                state, qubits, 0, 1 << measurement.WEIGHT_UNIT_BITS),
            "measure": lambda state=state, qubits=qubits: measurement.measure(state, qubits, rng),
        }
        row = {"part": "isolated", "qubits": args.qubits, "measured": k}
        for name, fn in parts.items():
            seconds = median_time(fn, device.on_gpu, repeats=args.repeats)
            row[f"{name}_ms"], row[f"{name}_over_floor"] = seconds * 1e3, seconds / floor_s
        rows.append(row)
    del state, parts
    free_device_memory(device)
    return rows


def free_device_memory(device):
    if device.on_gpu:
        device.xp.get_default_memory_pool().free_all_blocks()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=28)
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[2, 5])
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--trajectories", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="cublas")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--measure-qubits", type=int, nargs="+", default=[1, 3, 12],
                        help="k values for the isolated measurement timing")
    parser.add_argument("--chunk-qubits", type=int, default=measurement.REDUCTION_CHUNK_QUBITS,
                        help="amplitudes per reduction chunk, as a power of two (sets the engine's)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if args.json:
        check_output_path_or_exit(args.json, "--json", parser.prog)
    if not 1 <= args.chunk_qubits <= measurement.MAX_EXACT_CHUNK_QUBITS:
        parser.error(f"--chunk-qubits must be 1..{measurement.MAX_EXACT_CHUNK_QUBITS} (larger chunks would not sum "
                     f"exactly), got {args.chunk_qubits}")
    measurement.REDUCTION_CHUNK_QUBITS = args.chunk_qubits
    device = resolve_device(args.device)
    bandwidth = copy_bandwidth(device.on_gpu)
    floor_s = 32 * (1 << args.qubits) / bandwidth
    print(f"device {device.name()}, copy bandwidth {bandwidth / 1e12:.3f} TB/s, backend {args.backend}, "
          f"floor {floor_s * 1e3:.2f} ms at N = {args.qubits}, reduction chunk 2^{args.chunk_qubits}")
    trajectory_rows, records = bench_trajectories(args, device, floor_s)
    isolated_rows = bench_isolated(args, device, floor_s)
    if args.json:
        payload = {"device": device.name(), "backend": args.backend, "bandwidth_Bps": bandwidth, "floor_s": floor_s,
                   "chunk_qubits": args.chunk_qubits, "trajectories": trajectory_rows, "isolated": isolated_rows,
                   "records": records}
        write_json(args.json, payload)
    print_table(trajectory_rows, [
        ("gate_size", "d", "{}"), ("depth", "depth", "{}"), ("rate", "p", "{}"), ("trajectories", "T", "{}"),
        ("gates", "gates", "{}"), ("measured_qubits_mean", "meas_q", "{:.1f}"),
        ("trajectory_ms_mean", "traj_ms", "{:.1f}"), ("trajectory_ms_median", "median_ms", "{:.1f}"),
        ("measuring_share", "meas_share", "{:.2f}"), ("measurement_ms", "meas_ms", "{:.2f}"),
        ("measurement_over_floor", "x_floor", "{:.2f}")])
    print_table(isolated_rows, [
        ("measured", "k", "{}"), ("reduction_ms", "reduce_ms", "{:.2f}"), ("reduction_over_floor", "x_floor", "{:.2f}"),
        ("projection_ms", "project_ms", "{:.2f}"), ("projection_over_floor", "x_floor", "{:.2f}"),
        ("measure_ms", "measure_ms", "{:.2f}"), ("measure_over_floor", "x_floor", "{:.2f}")])


if __name__ == "__main__":
    main()
