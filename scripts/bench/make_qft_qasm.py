"""Write an OpenQASM 2 file: X on a seeded random subset of qubits (a non-trivial basis input),
then the n-qubit QFT decomposed into 1- and 2-qubit gates. Used by BENCHMARKS.md.

    python scripts/bench/make_qft_qasm.py 28 qft28.qasm --seed 7
"""
import argparse

import numpy as np
from qiskit import QuantumCircuit, qasm2, transpile
from qiskit.circuit.library import QFTGate

from qsim.output import atomic_output, check_output_path_or_exit


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qubits", type=int)
    parser.add_argument("path")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    check_output_path_or_exit(args.path, "path", parser.prog)
    rng = np.random.default_rng(args.seed)
    qc = QuantumCircuit(args.qubits)
    for q in np.flatnonzero(rng.integers(0, 2, args.qubits)):
        qc.x(int(q))
    qc.append(QFTGate(args.qubits), range(args.qubits))
    qc = transpile(qc, basis_gates=["x", "h", "cp", "swap"], optimization_level=0)
    with atomic_output(args.path) as handle:
        handle.write(qasm2.dumps(qc))
    print(f"{args.path}: {args.qubits} qubits, {qc.size()} gates")


if __name__ == "__main__":
    main()
