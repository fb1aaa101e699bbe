"""Weak and strong scaling of the distributed engine: time per gate split into compute and exchange.

    NCCL_NVLS_ENABLE=0 python scripts/bench/bench_distributed.py --gpus 2 --json out/bench_distributed.json

Runs brickwork circuits (gate size 5, depth 10 by default) of N = 31..34 qubits on P = 1, 2, 4
GPUs, every (N, P) whose per-GPU slice fits (--max-local-qubits, 32 = 64 GiB for a 141 GB H200)
and whose P is at most --gpus: read along a row of equal local qubits for weak scaling, along
N = 31 for strong scaling. Every run, the 1-GPU ones included, goes through the multi-process
launcher (one process per GPU, NCCL), so compute and exchange are timed the same way (CUDA
events, slowest rank per step). Backends run in the order given, configurations smallest first;
once --max-minutes is spent the remaining runs are skipped and listed. The JSON is rewritten
after every run, and a short table is printed last. --device cpu runs simulated ranks in one
process instead (a smoke test of the script on small N; its times mean nothing).
"""
import argparse
import os
import sys
import time

from circuits import brickwork
from qsim.distributed import DistributedSimulator, run_simulated
from qsim.distributed.launcher import launch
from qsim.errors import SimulationError
from qsim.output import check_output_path_or_exit, write_json
from qsim.benchmarking import print_table

QUBITS = (31, 32, 33, 34)
GPU_COUNTS = (1, 2, 4)
COLUMNS = [
    ("backend", "backend", "{}"), ("qubits", "N", "{}"), ("gpus", "GPUs", "{}"), ("local_qubits", "local", "{}"),
    ("gates", "gates", "{}"), ("exchanges", "exch", "{}"), ("compute_ms_per_gate", "compute ms/gate", "{:.2f}"),
    ("exchange_ms_per_gate", "exchange ms/gate", "{:.2f}"), ("total_s", "total s", "{:.2f}"),
    ("exchange_gb_per_s", "exch GB/s/GPU", "{:.1f}"), ("amp0_vs_1gpu", "|d amp0| vs 1 GPU", "{:.1e}"),
    ("status", "status", "{}"),
]


def rank_run(comm, n_qubits, gate_size, depth, seed, backend, device="gpu"):
    """One rank's run; returns the figures of the table (every rank returns the same)."""
    circuit = brickwork(n_qubits, gate_size, depth, seed)
    result = DistributedSimulator(comm, backend, device=device, progress=False).run(circuit)
    report = result.to_dict()
    split = report["distributed"]
    exchange_bytes = sum(e["bytes_sent"] for e in split["exchange_log"])
    return {
        "device": report["device"], "local_qubits": split["local_qubits"], "gates": report["gates"],
        "exchanges": split["exchanges"], "qubit_swaps": split["qubit_swaps"],
        "compute_s": split["compute_time_s"], "exchange_s": split["exchange_time_s"], "total_s": report["total_time_s"],
        "compute_ms_per_gate": 1e3 * split["compute_time_per_gate_s"],
        "exchange_ms_per_gate": 1e3 * split["exchange_time_per_gate_s"],
        "exchange_bytes_per_gpu": exchange_bytes,
        "exchange_gb_per_s": exchange_bytes / split["exchange_time_s"] / 1e9 if split["exchange_time_s"] else None,
        "exchange_log": split["exchange_log"], "gate_time_s": report["gate_time_s"],
        "peak_memory_bytes": report["peak_memory_bytes"], "memory_plan": split["memory_plan"],
        "amplitude_0": report["amplitude_0"], "norm": report["norm"],
        "splits": [g.get("splits") for g in report["per_gate"]],
    }


def configurations(args) -> list:
    runs = [(n, p) for n in args.qubits for p in GPU_COUNTS
            if p <= args.gpus and n - (p.bit_length() - 1) <= args.max_local_qubits]
    runs.sort(key=lambda np_: (np_[0] - (np_[1].bit_length() - 1), np_[1]))  # smallest slices first
    return [(backend, n, p) for backend in args.backends for n, p in runs]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=2, help="GPUs available (runs with more are left out)")
    parser.add_argument("--qubits", type=int, nargs="+", default=list(QUBITS))
    parser.add_argument("--backends", type=lambda s: s.split(","), default=["cublas", "int8-auto"])
    parser.add_argument("--gate-size", type=int, default=5)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-local-qubits", type=int, default=32, help="largest slice per GPU (32: 64 GiB)")
    parser.add_argument("--max-minutes", type=float, default=7.0, help="skip the remaining runs after this")
    parser.add_argument("--json", default="bench_distributed.json")
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu", help="cpu: simulated ranks (smoke test)")
    args = parser.parse_args(argv)
    check_output_path_or_exit(args.json, "--json", parser.prog)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    start, rows = time.monotonic(), []
    for backend, n_qubits, gpus in configurations(args):
        row = {"backend": backend, "qubits": n_qubits, "gpus": gpus, "gate_size": args.gate_size,
               "depth": args.depth}
        left_s = args.max_minutes * 60 - (time.monotonic() - start)
        if left_s <= 0:
            row["status"] = "skipped (time)"
        else:
            print(f"-- {backend}, {n_qubits} qubits on {gpus} GPU(s)", flush=True)
            job = (n_qubits, args.gate_size, args.depth, args.seed, backend, args.device)
            try:
                if args.device == "cpu":
                    row.update(run_simulated(gpus, rank_run, *job)[0])
                else:
                    row.update(launch(gpus, rank_run, job, timeout_s=left_s))
                row["status"] = "ok"
            except SimulationError as exc:
                row["status"] = "failed"
                row["error"] = str(exc)
                print(f"   {exc}", flush=True)
        rows.append(row)
        compare_with_one_gpu(rows)
        write_json(args.json, {"runs": rows, "args": vars(args)})
    print_table(rows, COLUMNS)
    return 0


def compare_with_one_gpu(rows) -> None:
    """amp0_vs_1gpu: |<0|psi> - <0|psi> of the 1-GPU run| for the same backend and N (the split
    must not change the result beyond the backend's own rounding)."""
    amplitude = {(r["backend"], r["qubits"]): complex(r["amplitude_0"]["re"], r["amplitude_0"]["im"])
                 for r in rows if r.get("status") == "ok" and r["gpus"] == 1}
    for row in rows:
        one = amplitude.get((row["backend"], row["qubits"]))
        if one is not None and row.get("status") == "ok":
            row["amp0_vs_1gpu"] = abs(complex(row["amplitude_0"]["re"], row["amplitude_0"]["im"]) - one)


if __name__ == "__main__":
    sys.exit(main())
