"""Write an OpenQASM 2 file: a seeded random circuit of 1- and 2-qubit gates on N qubits, for
scripts/bench/bench_custatevec.py --qasm.

    python scripts/bench/make_random_qasm.py 30 random30.qasm --depth 10 --seed 1

qiskit.circuit.random.random_circuit (max_operands=2, half the gates of each kind, no measurement)
draws the gates; they are written in the basis u, cx, which circuits.from_qasm reads. The same
seed gives the same file under the same Qiskit version. At N = 30 the default depth gives about
200 random gates, about 180 cx once decomposed. QASM 2 has no global phase: the file's state
equals the random circuit's up to one.
"""
import argparse
import sys

from qiskit import qasm2, transpile
from qiskit.circuit.random import random_circuit

from qsim.output import atomic_output, check_output_path_or_exit

DEFAULT_DEPTH = 10
BASIS = ["u", "cx"]
OPERANDS = {1: 0.5, 2: 0.5}  # fixed: random_circuit otherwise draws the mix itself, per seed


def random_gates(n_qubits: int, depth: int, seed: int):
    """The seeded random QuantumCircuit (before decomposition) of 1- and 2-qubit gates."""
    return random_circuit(n_qubits, depth, max_operands=2, measure=False, seed=seed,
                          num_operand_distribution=OPERANDS)


def random_qasm_circuit(n_qubits: int, depth: int, seed: int):
    """random_gates decomposed into BASIS (optimization level 0: nothing is merged or dropped)."""
    return transpile(random_gates(n_qubits, depth, seed), basis_gates=BASIS, optimization_level=0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qubits", type=int, help="N >= 2")
    parser.add_argument("path")
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help=f"random layers (default {DEFAULT_DEPTH})")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for flag, value, least in (("qubits", args.qubits, 2), ("--depth", args.depth, 1), ("--seed", args.seed, 0)):
        if value < least:
            print(f"{parser.prog}: error: {flag} must be >= {least}, got {value}", file=sys.stderr)
            return 2
    check_output_path_or_exit(args.path, "path", parser.prog)
    qc = random_qasm_circuit(args.qubits, args.depth, args.seed)
    with atomic_output(args.path) as handle:
        handle.write(qasm2.dumps(qc))
    counts = dict(qc.count_ops())
    print(f"{args.path}: {args.qubits} qubits, depth {args.depth}, seed {args.seed}: {qc.size()} gates "
          f"({counts.get('cx', 0)} cx, {counts.get('u', 0)} u)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
