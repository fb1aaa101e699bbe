"""Aer's save instructions on QsimBackend: the same user code gives the values of Qiskit's exact
references (Statevector, its probabilities and expectation values), under Aer's keys and types.
Run with qsim's own save_* circuit methods and, where qiskit-aer is installed, with Aer's."""
import importlib.util

import numpy as np
import pytest
from qiskit import QuantumCircuit, transpile
from qiskit.circuit.random import random_circuit
from qiskit.quantum_info import Pauli, SparsePauliOp, Statevector
from qiskit.result import ProbDistribution
from scipy.stats import chisquare

from circuits import CircuitError
from qsim import SimulationError
from qsim.qiskit import QsimBackend
from qsim.qiskit_save import SaveInstruction, save_expectation_value, save_probabilities, save_statevector

TOLERANCE = 1e-12
P_VALUE = 1e-6  # a correct sampler fails a chi-square test this rarely
OPERATOR = SparsePauliOp(["XYZ", "ZZI", "IXX", "YIY"], [0.5, -1.25, 0.75, 0.3])


@pytest.fixture
def backend():
    return QsimBackend(device="cpu", backend="cublas")


def unitary_circuit(seed=3):
    qc = random_circuit(4, 5, max_operands=3, seed=seed)
    qc.global_phase = 0.4
    return qc


def test_static_saves_match_statevector(backend):
    qc = unitary_circuit()
    reference = Statevector(qc)
    qc.save_statevector()
    qc.save_probabilities([2, 0], label="p")
    qc.save_probabilities_dict([1, 3], label="pd")
    qc.save_expectation_value(OPERATOR, [0, 1, 3], label="e")
    qc.save_expectation_value_variance(OPERATOR, [0, 1, 3], label="v")
    qc.save_amplitudes([0, 5, 15], label="a")
    qc.save_amplitudes_squared([1, 6], label="a2")
    qc.save_statevector_dict(label="sd")
    data = backend.run(qc, seed_simulator=1).result().data()
    assert isinstance(data["statevector"], Statevector)
    assert np.abs(data["statevector"].data - reference.data).max() < TOLERANCE
    assert np.abs(data["p"] - reference.probabilities([2, 0])).max() < TOLERANCE
    assert isinstance(data["pd"], ProbDistribution)
    expected = reference.probabilities([1, 3])
    assert set(data["pd"]) == set(np.flatnonzero(expected)) and all(
        abs(data["pd"][k] - expected[k]) < TOLERANCE for k in data["pd"])
    value = reference.expectation_value(OPERATOR, [0, 1, 3]).real
    assert isinstance(data["e"], float) and abs(data["e"] - value) < TOLERANCE
    square = reference.expectation_value(OPERATOR.dot(OPERATOR).simplify(), [0, 1, 3]).real
    assert np.abs(data["v"] - [value, square - value**2]).max() < 1e-11
    assert np.abs(data["a"] - reference.data[[0, 5, 15]]).max() < TOLERANCE
    assert np.abs(data["a2"] - np.abs(reference.data[[1, 6]]) ** 2).max() < TOLERANCE
    assert all(abs(data["sd"].get(hex(i), 0) - reference.data[i]) < TOLERANCE for i in range(16))


def test_a_save_in_the_middle_sees_the_state_there(backend):
    """Fusion must not move a gate across a save: the saved state is that of the first half."""
    first, second = unitary_circuit(4), unitary_circuit(5)
    second.global_phase = 0  # a global phase is applied at the start, so the middle state's would differ
    qc = first.copy()
    qc.save_statevector(label="middle")
    qc.compose(second, inplace=True)
    qc.save_expectation_value(Pauli("ZZ"), [1, 2], label="end")
    data = backend.run(qc).result().data()
    assert np.abs(data["middle"].data - Statevector(first).data).max() < TOLERANCE
    whole = Statevector(first).evolve(second)
    assert abs(data["end"] - whole.expectation_value(Pauli("ZZ"), [1, 2]).real) < TOLERANCE


def test_get_statevector_after_final_measurements(backend):
    qc = unitary_circuit()
    reference = Statevector(qc)
    qc.save_statevector()
    qc.measure_all()
    result = backend.run(qc, shots=500, seed_simulator=2).result()
    assert np.abs(result.get_statevector().data - reference.data).max() < TOLERANCE
    assert sum(result.get_counts().values()) == 500


def test_dynamic_saves_combine_over_shots_as_aer_does(backend):
    """After measuring qubit 0 of a |+>: the average of <Z0> is ~0, the per-shot list follows the
    memory, accum sums it, conditional ones key by the measured bit, single is the last shot's."""
    qc = QuantumCircuit(2, 1)
    qc.h(0)
    qc.ry(0.7, 1)
    qc.measure(0, 0)
    qc.save_expectation_value(Pauli("IZ"), [0, 1], label="avg")
    qc.save_expectation_value(Pauli("IZ"), [0, 1], label="each", pershot=True)
    qc.save_expectation_value(Pauli("IZ"), [0, 1], label="sum", unnormalized=True)
    qc.save_probabilities([0], label="cond", conditional=True)
    qc.save_statevector(label="last")
    shots = 2000
    result = backend.run(qc, shots=shots, memory=True, seed_simulator=7).result()
    memory, data = result.get_memory(), result.data()
    signs = np.array([1.0 if m == "0" else -1.0 for m in memory])
    assert np.array_equal(data["each"], signs)
    assert data["sum"] == pytest.approx(signs.sum(), abs=1e-9)
    assert data["avg"] == pytest.approx(signs.mean(), abs=1e-12)
    assert chisquare([(signs > 0).sum(), (signs < 0).sum()]).pvalue > P_VALUE
    assert np.allclose(data["cond"]["0x0"], [1, 0]) and np.allclose(data["cond"]["0x1"], [0, 1])
    last_bit = int(memory[-1])
    expected = Statevector.from_label("0" + str(last_bit)).data * 0
    expected[last_bit] = np.cos(0.35)
    expected[last_bit + 2] = np.sin(0.35)
    assert np.abs(data["last"].data - expected).max() < TOLERANCE


def test_saves_of_a_deterministic_circuit_are_taken_once(backend):
    """As Aer: without a random split, a per-shot list holds one value and accum is that value."""
    qc = QuantumCircuit(1, 1)
    qc.x(0)
    qc.save_expectation_value(Pauli("Z"), [0], label="each", pershot=True)
    qc.save_expectation_value(Pauli("Z"), [0], label="sum", unnormalized=True)
    qc.measure(0, 0)
    data = backend.run(qc, shots=10).result().data()
    assert np.array_equal(data["each"], [-1.0]) and data["sum"] == pytest.approx(-1.0)


def test_own_instructions_without_aer_read_like_aers():
    qc = QuantumCircuit(2)
    save_statevector(qc)
    save_probabilities(qc, [1], label="p", pershot=True, conditional=True)
    save_expectation_value(qc, OPERATOR.to_operator().data[:4, :4] * 0 + np.diag([1, -1, 1, -1]), [0, 1])
    names = [(i.operation.name, i.operation._label, i.operation._subtype) for i in qc.data]
    assert names == [("save_statevector", "statevector", "single"), ("save_probabilities", "p", "c_list"),
                     ("save_expval", "expectation_value", "average")]
    assert all(isinstance(i.operation, SaveInstruction) for i in qc.data)


def test_bad_saves_are_refused_in_one_line(backend):
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.save_expectation_value(Pauli("ZZ"), [0, 1], label="x")
    qc.save_probabilities([0], label="x")
    with pytest.raises(SimulationError, match="label 'x' for different data"):
        backend.run(qc)
    with pytest.raises(SimulationError, match="Hermitian"):
        QuantumCircuit(1).save_expectation_value(np.array([[0, 1], [0, 0]]), [0])
    unsupported = QuantumCircuit(1)
    unsupported.append(SaveInstruction("statevector", 1, "s", "single"), [0])
    unsupported.data[0].operation.name = "save_unitary"
    with pytest.raises(CircuitError, match="'save_unitary' at position 0 is an Aer save instruction"):
        backend.run(unsupported)


@pytest.mark.skipif(importlib.util.find_spec("qiskit_aer") is None, reason="needs qiskit-aer (optional)")
def test_aers_own_instructions_and_results_agree():
    from qiskit_aer import AerSimulator
    from qiskit_aer.library import SaveExpectationValue, SaveProbabilities, SaveStatevector

    qc = unitary_circuit()
    qc.append(SaveStatevector(4), qc.qubits)
    qc.append(SaveProbabilities(2, label="p"), [3, 1])
    qc.append(SaveExpectationValue(OPERATOR, label="e"), [2, 0, 1])
    ours = QsimBackend(device="cpu").run(qc).result()
    aer = AerSimulator(method="statevector")
    aers = aer.run(transpile(qc, aer)).result()
    assert np.abs(ours.get_statevector().data - aers.get_statevector().data).max() < 1e-10
    assert np.abs(ours.data()["p"] - aers.data()["p"]).max() < 1e-12
    assert abs(ours.data()["e"] - aers.data()["e"]) < 1e-12
