"""The INT8 plans int8-auto gives the gates of a brickwork circuit, under several of its rules.

Rules that plan a gate from the gate alone (the default fp64 contract, bound=worst-case,
target_error=X) give every state the same plan, so the headline's plans (N = 30) come from its
gates without simulating it. With --simulate N' the circuit's gate sequence is also run on N'
qubits on the CPU (the same gates where they fit, brickwork(N', d, depth, seed)) under each rule
and under cublas, against the double-double reference: errors of the state beside the plans.

    python scripts/dev/gate_plans.py --qubits 30 --gate-size 5 --depth 20 --seed 1
    python scripts/dev/gate_plans.py --qubits 30 --gate-size 5 --depth 20 --seed 1 --simulate 20 --rules fp64 worst-case
"""
import argparse
import collections
import json
import sys
from pathlib import Path

import gemm_backend
from circuits import brickwork
from qsim import Simulator
from qsim.accuracy import accuracy_report
from qsim.reference import reference_state

RULES = {"fp64": {}, "worst-case": {"bound": "worst-case"}, "rho0": {"rho": 0.0}}


def plan_counts(circuit, options: dict) -> collections.Counter:
    """(state digits, gate digits, T, pairs) -> number of gates, from the gates alone."""
    backend = gemm_backend.get("int8-auto", **options)
    counts = collections.Counter()
    for gate in circuit.gates:
        plan, _ = backend.gate_plan(gate.matrix)
        counts[None if plan is None else (plan.a_slices, plan.b_slices, plan.top, plan.pairs)] += 1
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--gate-size", type=int, default=5)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rules", nargs="+", default=["fp64", "worst-case"], choices=sorted(RULES))
    parser.add_argument("--simulate", type=int, metavar="N", help="also simulate on N qubits (CPU) against dd")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    record = {"circuit": vars(args), "plans": {}, "errors": {}}
    circuit = brickwork(args.qubits, args.gate_size, args.depth, seed=args.seed)
    for rule in args.rules:
        if rule == "rho0":
            continue  # rho looks at the state: only in --simulate
        counts = plan_counts(circuit, RULES[rule])
        pairs = sum(key[3] * n for key, n in counts.items() if key) / max(1, sum(n for key, n in counts.items() if key))
        record["plans"][rule] = {str(key): n for key, n in sorted(counts.items(), key=str)}
        print(f"{rule:11s} mean pairs {pairs:5.1f}  (state, gate, T, pairs): "
              + ", ".join(f"{key}: {n}" for key, n in sorted(counts.items(), key=str)))
    if args.simulate:
        small = brickwork(args.simulate, args.gate_size, args.depth, seed=args.seed)
        hi, lo = reference_state(small, device="cpu", progress=False)
        runs = [("cublas", "cublas", {})] + [(rule, "int8-auto", RULES[rule]) for rule in args.rules]
        for label, name, options in runs:
            result = Simulator(backend=name, device="cpu", progress=False, **options).run(small)
            report = accuracy_report(result.state_vector(), hi, lo)
            plans = collections.Counter((i.get("splits_state"), i.get("splits_gate"), i.get("top")) for i in result.gate_info
                                        if "splits_state" in i)
            record["errors"][label] = {**report, "plans": {str(k): v for k, v in plans.items()}}
            print(f"N = {args.simulate} {label:11s} max rel {report['max_rel_amplitude_error']:.2e}  "
                  f"mean rel {report['mean_rel_amplitude_error']:.2e}  l2 {report['l2_error']:.2e}"
                  + (f"  plans {dict(plans)}" if plans else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
