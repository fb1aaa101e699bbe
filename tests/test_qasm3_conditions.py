"""OpenQASM 3 conditions with !=, !, && and || (circuits.qasm3_conditions), and OpenQASM 2's
conditioned measurement, against Python's own evaluation of the conditions and exact
distributions."""
import itertools

import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.quantum_info import Statevector
from scipy.stats import chisquare

from circuits import from_qasm
from qsim import Simulator
from qsim.qiskit import QsimBackend

P_VALUE = 1e-6
HEADER = 'OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[3] q;\nbit[2] c;\n'
BODY = """c[0] = measure q[0];
c[1] = measure q[1];
if (c[0] != 1) { x q[2]; }
if (c == 1 && c[1] == 0) { rx(0.3) q[2]; } else { ry(0.2) q[2]; }
if (c[0] == 1 || !c[1]) { rz(0.7) q[2]; } else { sx q[2]; }
if (!(c == 3)) { h q[2]; }
if (c != 2 && (c[1] == 1 || c[0] == 0)) { ry(1.1) q[2]; }
"""


def expected_qubit2(c0: int, c1: int) -> np.ndarray:
    """The state of qubit 2 with the conditions evaluated in Python."""
    c = c0 + 2 * c1
    qc = QuantumCircuit(1)
    if c0 != 1:
        qc.x(0)
    if c == 1 and c1 == 0:
        qc.rx(0.3, 0)
    else:
        qc.ry(0.2, 0)
    if c0 == 1 or not c1:
        qc.rz(0.7, 0)
    else:
        qc.sx(0)
    if c != 3:
        qc.h(0)
    if c != 2 and (c1 == 1 or c0 == 0):
        qc.ry(1.1, 0)
    return Statevector(qc).data


@pytest.mark.parametrize("c0, c1", list(itertools.product((0, 1), repeat=2)))
def test_conditions_take_the_branches_python_takes(c0, c1):
    prepare = "".join(f"x q[{q}];\n" for q, bit in ((0, c0), (1, c1)) if bit)
    circuit = from_qasm(HEADER + prepare + BODY)
    state = Simulator(device="cpu", progress=False).run(circuit, seed=1).state
    expected = np.kron(expected_qubit2(c0, c1), np.eye(4)[c0 + 2 * c1])  # qubit 2 is the top bit
    assert np.abs(state - expected).max() < 1e-12


def test_qasm2_conditioned_measurement_follows_the_exact_distribution():
    """if(c==1) measure q[1] -> c[1]: c[1] is measured (P(1) = sin^2(0.6)) only when c[0] read 1."""
    program = ('OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\ncreg c[2];\nh q[0];\nry(1.2) q[1];\n'
               'measure q[0] -> c[0];\nif(c==1) measure q[1] -> c[1];\n')
    circuit = from_qasm(program)
    qc = QuantumCircuit.from_qasm_str(program)
    counts = QsimBackend(device="cpu").run(qc, shots=20000, seed_simulator=4).result().get_counts()
    p1 = np.sin(0.6) ** 2
    exact = {"00": 0.5, "01": 0.5 * (1 - p1), "11": 0.5 * p1}
    assert set(counts) <= set(exact) and circuit.is_dynamic
    assert chisquare([counts.get(k, 0) for k in exact], [20000 * p for p in exact.values()]).pvalue > P_VALUE
