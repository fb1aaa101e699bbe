"""AerSimulator and QsimBackend side by side on the CPU, running the same user code.

Cases (each a Qiskit user's program, transpiled for each backend outside the timed region):
  batch      `--batch` random 5-qubit circuits (depth 10, measured) in one run call, 1000 shots
  estimator  a loop of `--loop` run calls, one per parameter value, of a 10-qubit ansatz with
             save_expectation_value of a 4-term Pauli sum
  qft-N      the QFT on N qubits (`--qft`, default 22 23 24) applied to a random product state,
             measured, 100 shots
  dynamic    20 qubits, 10 mid-circuit measurements each followed by a conditioned gate, then
             measure_all, 1000 shots (qsim: shot branching; Aer: with its shot branching and final
             sampling turned on, shot_branching_enable and shot_branching_sampling_enable, its
             fastest here: by default Aer runs each of the 1000 shots on its own)
The time is the wall time of backend.run(...).result(), the median of `--repeats` runs after one
untimed run; both simulators use the threads they start with (Aer: OpenMP; qsim: numpy's BLAS).
qiskit-aer is needed for this script only (pip install qiskit-aer); it is not a dependency.

    python scripts/bench/bench_aer.py --qft 22 23 24 --json aer.json
"""
import argparse
import importlib.util
import sys
import time

import numpy as np

from qsim.benchmarking import print_table
from qsim.output import check_output_path_or_exit, write_json


# Aer's own shot branching for dynamic circuits, and sampling of the final measurements of each branch
AER_SHOT_BRANCHING = {"shot_branching_enable": True, "shot_branching_sampling_enable": True}


def batch_case(count: int):
    from qiskit.circuit.random import random_circuit

    circuits = [random_circuit(5, 10, max_operands=2, measure=True, seed=seed) for seed in range(count)]
    return circuits, {"shots": 1000}


def estimator_case(loop: int):
    from qiskit import QuantumCircuit
    from qiskit.circuit import Parameter
    from qiskit.quantum_info import SparsePauliOp

    theta = Parameter("theta")
    qc = QuantumCircuit(10)
    for layer in range(3):
        for q in range(10):
            qc.ry(theta * (q + 1) / (layer + 1), q)
        for q in range(9):
            qc.cx(q, q + 1)
    observable = SparsePauliOp(["ZZ" + "I" * 8, "I" * 8 + "XX", "Z" * 10, "IXYZIXYZIZ"], [1.0, 0.5, -0.3, 0.2])
    qc.save_expectation_value(observable, list(range(10)))
    bound = [qc.assign_parameters({theta: value}) for value in np.linspace(0.1, 2.0, loop)]
    return bound, {"one_call_each": True}


def qft_case(n: int):
    from qiskit import QuantumCircuit
    from qiskit.circuit.library import QFTGate

    rng = np.random.default_rng(n)
    qc = QuantumCircuit(n)
    for q in range(n):
        qc.ry(float(rng.uniform(0, np.pi)), q)
    qc.append(QFTGate(n), range(n))
    qc.measure_all()
    return [qc], {"shots": 100}


def dynamic_case():
    from qiskit import QuantumCircuit

    rng = np.random.default_rng(20)
    qc = QuantumCircuit(20, 30)
    for layer in range(10):
        for q in range(20):
            qc.ry(float(rng.uniform(0, np.pi)), q)
        for q in range(layer % 2, 19, 2):
            qc.cx(q, q + 1)
        measured = 2 * layer % 20
        qc.measure(measured, layer)
        with qc.if_test((qc.clbits[layer], 1)):
            qc.x((measured + 1) % 20)
    qc.measure(range(20), range(10, 30))
    return [qc], {"shots": 1000, "aer_options": AER_SHOT_BRANCHING}


def timed(backend, circuits, options, repeats: int) -> float:
    """Median wall seconds of running `circuits` (one call, or one call each) on `backend`."""
    options = {key: value for key, value in options.items() if key != "aer_options"}
    one_call_each = options.pop("one_call_each", False)

    def once():
        if one_call_each:
            for qc in circuits:
                backend.run(qc, seed_simulator=1, **options).result()
        else:
            backend.run(circuits, seed_simulator=1, **options).result()

    once()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        once()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=100, help="random circuits in the batch case")
    parser.add_argument("--loop", type=int, default=20, help="run calls in the estimator loop")
    parser.add_argument("--qft", type=int, nargs="*", default=[22, 23, 24], help="QFT sizes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-dynamic", action="store_true")
    parser.add_argument("--json", help="write the rows as JSON")
    args = parser.parse_args(argv)
    if args.json:
        check_output_path_or_exit(args.json, "--json", "bench_aer.py")
    if importlib.util.find_spec("qiskit_aer") is None:
        print("bench_aer.py: error: needs qiskit-aer (pip install qiskit-aer); it is optional, for this script only",
              file=sys.stderr)
        return 2
    from qiskit import transpile
    from qiskit_aer import AerSimulator

    from qsim.qiskit import QsimBackend

    qsim = QsimBackend(device="cpu", backend="cublas")
    cases = [("batch", *batch_case(args.batch)), ("estimator", *estimator_case(args.loop))]
    cases += [(f"qft-{n}", *qft_case(n)) for n in args.qft]
    if not args.skip_dynamic:
        cases.append(("dynamic", *dynamic_case()))
    rows = []
    for name, circuits, options in cases:
        row = {"case": name}
        aer = AerSimulator(method="statevector", **options.get("aer_options", {}))
        for label, backend in (("aer", aer), ("qsim", qsim)):
            compiled = transpile(circuits, backend, optimization_level=0)
            row[f"{label}_s"] = timed(backend, compiled, options, args.repeats)
        row["ratio"] = row["qsim_s"] / row["aer_s"]
        rows.append(row)
        print(f"{name}: aer {row['aer_s']:.3f} s, qsim {row['qsim_s']:.3f} s", file=sys.stderr)
    print_table(rows, [("case", "case", "{}"), ("aer_s", "Aer (s)", "{:.3f}"), ("qsim_s", "qsim (s)", "{:.3f}"),
                       ("ratio", "qsim / Aer", "{:.2f}")])
    if args.json:
        write_json(args.json, {"rows": rows, "repeats": args.repeats})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
