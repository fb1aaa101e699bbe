"""Measurement, sampling and trajectories against the memory floor (issue 25's must-show), one run.

Floors, from bandwidths measured in the same run: read = state bytes / read bandwidth (a cupy sum
over the state's floats); read+write = 2 x state bytes / copy bandwidth (qsim.benchmarking). Rows:
  weights k   qsim.measurement.outcome_weights of k qubits spread over the register   vs read
  bins k      its device part alone (qsim.measurement_gpu.weight_sums: launch, kernel, copy back),
              for the largest k: weights - bins is the host's making of the 2^k Python ints
  collapse k  qsim.measurement.collapse (projection, and with reset)                   vs read+write
  measure k   qsim.measurement.measure: weights, draw and collapse                     vs read + read+write
  shots       qsim.sampling.sample_outcomes of every qubit                             vs read
              and its stages alone: the host's uniforms, the block weights (with the running
              sum and the checks), the draw with its copies of uniforms and outcomes
  trajectory  monitored brickwork through the engine, time per trajectory (gates and
              measurements)          vs gates x read+write + measurements x (read + read+write)
A state of random amplitudes (never zeros), unit norm; CUDA events, median of --repeats after a
warm-up. The extra device memory of each row (the memory pool's growth) is printed beside it.

    python scripts/bench/bench_measurement.py --qubits 28 30 --json out.json
"""
import argparse

import numpy as np

from circuits import Gate, monitored_brickwork
from gemm_backend.arrays import cupy_module
from qsim import Simulator, measurement, measurement_gpu, sampling_gpu
from qsim.output import check_output_path_or_exit, write_json
from qsim.sampling import MAX_TOTAL, sample_outcomes
from qsim.trajectory import run_trajectories
from qsim.benchmarking import copy_bandwidth, median_time, print_table

FILL_CHUNK = 1 << 26


def random_unit_state(cp, n_qubits: int, seed: int):
    """(2^N,) complex128 of normal random parts, filled chunk by chunk (no state-sized temporary)."""
    state = cp.empty(1 << n_qubits, dtype=cp.complex128)
    floats = state.view(cp.float64)
    generator = cp.random.default_rng(seed)
    for start in range(0, floats.size, FILL_CHUNK):
        floats[start:start + FILL_CHUNK] = generator.standard_normal(min(FILL_CHUNK, floats.size - start))
    floats /= float(cp.linalg.norm(floats))
    return state


def read_bandwidth(cp, state) -> float:
    floats = state.view(cp.float64)
    return state.nbytes / median_time(lambda: floats.sum(), True)


def timed(cp, fn, repeats: int) -> tuple:
    """(median seconds, extra device bytes the call took from the pool)."""
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    before = pool.total_bytes()
    seconds = median_time(fn, True, repeats=repeats)
    return seconds, pool.total_bytes() - before


def spread(n_qubits: int, k: int) -> tuple:
    return tuple(int(q) for q in np.linspace(0, n_qubits - 1, k).round())


def state_rows(cp, n_qubits: int, args) -> list:
    state = random_unit_state(cp, n_qubits, args.seed)
    read_s = state.nbytes / read_bandwidth(cp, state)
    rw_s = 2 * state.nbytes / copy_bandwidth(True)
    rng = np.random.default_rng(args.seed)
    rows = []

    def row(name, fn, floor_s, limit):
        seconds, extra = timed(cp, fn, args.repeats)
        rows.append({"qubits": n_qubits, "row": name, "ms": seconds * 1e3, "floor_ms": floor_s * 1e3,
                     "ratio": seconds / floor_s, "limit": limit, "extra_MiB": extra / 2**20})

    for k in args.measure_qubits:
        row(f"weights k={k}", lambda q=spread(n_qubits, k): measurement.outcome_weights(state, q), read_s, 1.5)
    largest = spread(n_qubits, max(args.measure_qubits))
    row(f"bins k={len(largest)}", lambda: measurement_gpu.weight_sums(state, largest), read_s, None)
    single = (n_qubits // 2,)
    weight = measurement.outcome_weights(state, single)[0]
    row("collapse k=1", lambda: measurement.collapse(state, single, 0, weight), rw_s, 1.2)
    row("collapse+reset k=1", lambda: measurement.collapse(state, single, 0, weight, reset=True), rw_s, 1.2)
    del state
    for k in args.measure_qubits:  # measure() leaves a collapsed state: a fresh one for each k
        state = random_unit_state(cp, n_qubits, args.seed + k)
        row(f"measure k={k}", lambda q=spread(n_qubits, k), s=state: measurement.measure(s, q, rng), read_s + rw_s,
            None)
        del state
    state = random_unit_state(cp, n_qubits, args.seed)
    row(f"{args.shots:.0e} shots", lambda: sample_outcomes(state, tuple(range(n_qubits)), args.shots, args.seed),
        read_s, 2.0)
    shot_stage_rows(state, args, row, read_s)
    del state
    cp.get_default_memory_pool().free_all_blocks()
    return rows, read_s, rw_s


def shot_stage_rows(state, args, row, read_s) -> None:
    """The stages of the shots row, each alone (none has a must-show limit)."""
    rng = np.random.default_rng(args.seed)
    row("shots: uniforms (host)", lambda: sampling_gpu.host_uniforms(rng, args.shots), read_s, None)
    row("shots: block weights", lambda: sampling_gpu.BlockWeights(state).finish(MAX_TOTAL), read_s, None)
    weights = sampling_gpu.BlockWeights(state)
    total, bad = weights.finish(MAX_TOTAL)
    if bad:
        raise SystemExit("the benchmark state's squared norm is not 1")
    uniforms = sampling_gpu.host_uniforms(rng, args.shots)
    qubits = tuple(range(int(state.size).bit_length() - 1))
    row("shots: draw + copies", lambda: sampling_gpu.draw_shots(state, weights, uniforms, total, 0, 0, qubits), read_s,
        None)


def trajectory_row(cp, args, read_s, rw_s) -> dict:
    circuit = monitored_brickwork(args.trajectory_qubits, args.gate_size, args.depth, args.rate, args.seed)
    simulator = Simulator(args.backend, "gpu", progress=False)
    run_trajectories(simulator, circuit, 1, args.seed + 1, progress=False)  # warm-up
    records, last = run_trajectories(simulator, circuit, args.trajectories, args.seed, progress=False)
    del last
    cp.get_default_memory_pool().free_all_blocks()
    gates = sum(1 for op in circuit.gates if isinstance(op, Gate))
    measurements = np.mean([r["measurements"] for r in records])
    floor_s = gates * rw_s + measurements * (read_s + rw_s)
    seconds = float(np.mean([r["time_s"] for r in records]))
    return {"qubits": args.trajectory_qubits, "row": f"trajectory d={args.gate_size} p={args.rate} T={len(records)}",
            "ms": seconds * 1e3, "floor_ms": floor_s * 1e3, "ratio": seconds / floor_s, "limit": 1.3,
            "measure_ms": float(np.mean([r["measure_time_s"] for r in records])) * 1e3,
            "wall_ms": float(np.mean([r["wall_s"] for r in records])) * 1e3, "gates": gates,
            "measurements": float(measurements)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[28, 30])
    parser.add_argument("--measure-qubits", type=int, nargs="+", default=[1, 4, 12])
    parser.add_argument("--shots", type=int, default=10**6)
    parser.add_argument("--trajectory-qubits", type=int, default=28)
    parser.add_argument("--gate-size", type=int, default=5)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--trajectories", type=int, default=8)
    parser.add_argument("--backend", default="cublas")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if args.json:
        check_output_path_or_exit(args.json, "--json", parser.prog)
    cp = cupy_module()
    rows, floors = [], {}
    for n_qubits in args.qubits:
        new_rows, read_s, rw_s = state_rows(cp, n_qubits, args)
        rows += new_rows
        floors[n_qubits] = (read_s, rw_s)
        print(f"N = {n_qubits}: read floor {read_s * 1e3:.3f} ms ({(16 << n_qubits) / read_s / 1e12:.2f} TB/s), "
              f"read+write floor {rw_s * 1e3:.3f} ms", flush=True)
    if args.trajectories:
        read_s, rw_s = floors.get(args.trajectory_qubits) or state_rows(cp, args.trajectory_qubits, args)[1:]
        rows.append(trajectory_row(cp, args, read_s, rw_s))
    for r in rows:
        r["within"] = None if r["limit"] is None else ("yes" if r["ratio"] <= r["limit"] else "NO")
    if args.json:
        write_json(args.json, {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows})
    print_table(rows, [("qubits", "N", "{}"), ("row", "what", "{}"), ("ms", "ms", "{:.3f}"),
                       ("floor_ms", "floor_ms", "{:.3f}"), ("ratio", "x_floor", "{:.2f}"), ("limit", "limit", "{}"),
                       ("within", "ok", "{}"), ("extra_MiB", "extra_MiB", "{:.1f}"), ("wall_ms", "wall_ms", "{:.1f}"),
                       ("measure_ms", "meas_ms", "{:.1f}")])


if __name__ == "__main__":
    main()
