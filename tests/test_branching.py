"""Shot branching (qsim.branching) against exact enumeration of a dynamic circuit's branches.

The reference walks the Qiskit circuit with exact projections (numpy on qiskit's Statevector
data), every outcome with its probability, and gives the exact distribution of the classical
bits; the sampled counts must pass a chi-square test at a false-alarm rate of 1e-6."""
import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.circuit.random import random_circuit
from qiskit.quantum_info import Operator, Statevector
from scipy.stats import chisquare

from circuits import fuse
from circuits.qiskit_import import from_qiskit
from qsim import Simulator
from qsim.branching import run_branches
from qsim.qiskit import QsimBackend

P_VALUE = 1e-6


def exact_distribution(qc: QuantumCircuit) -> dict:
    """{classical bits as int: probability} by enumerating every measurement and reset outcome."""
    branches = [(Statevector.from_int(0, 2**qc.num_qubits).data, 0, 1.0)]
    for instruction in qc.data:
        operation = instruction.operation
        qubits = [qc.find_bit(q).index for q in instruction.qubits]
        clbits = [qc.find_bit(c).index for c in instruction.clbits]
        branches = [new for branch in branches for new in _step(operation, qubits, clbits, branch, qc)]
    distribution = {}
    for _, bits, probability in branches:
        distribution[bits] = distribution.get(bits, 0.0) + probability
    return distribution


def _step(operation, qubits, clbits, branch, qc):
    state, bits, probability = branch
    n = qc.num_qubits
    if operation.name in ("measure", "reset"):
        q = qubits[0]
        for outcome in (0, 1):
            mask = ((np.arange(2**n) >> q) & 1) == outcome
            weight = float(np.sum(np.abs(state[mask]) ** 2))
            if weight < 1e-15:
                continue
            projected = np.where(mask, state, 0) / np.sqrt(weight)
            if operation.name == "reset" and outcome:
                projected = projected[np.arange(2**n) ^ (1 << q)]
            new_bits = bits if operation.name == "reset" else (bits & ~(1 << clbits[0])) | (outcome << clbits[0])
            yield projected, new_bits, probability * weight
        return
    if operation.name == "if_else":
        clbit, value = operation.condition
        taken = ((bits >> qc.find_bit(clbit).index) & 1) == value
        body = operation.blocks[0] if taken else (operation.blocks[1] if len(operation.blocks) > 1 else None)
        if body is not None:
            state = Statevector(state).evolve(Operator(body), qubits).data
        yield state, bits, probability
        return
    yield Statevector(state).evolve(Operator(operation), qubits).data, bits, probability


def dynamic_circuit(seed: int) -> QuantumCircuit:
    """Random layers on 4 qubits, each followed by a measurement, a conditioned gate and a reset."""
    qc = QuantumCircuit(4, 5)
    rng = np.random.default_rng(seed)
    for layer in range(4):
        qc.compose(random_circuit(4, 2, max_operands=2, seed=seed * 10 + layer), inplace=True)
        q = int(rng.integers(4))
        qc.measure(q, layer)
        with qc.if_test((qc.clbits[layer], 1)):
            qc.rx(float(rng.uniform(0.3, 2.5)), (q + 1) % 4)
        if layer == 1:
            qc.reset(int(rng.integers(4)))
    qc.measure(2, 4)
    return qc


def sampled(qc, shots, seed, **options):
    circuit = fuse(from_qiskit(qc), max_qubits=3)
    return run_branches(Simulator(device="cpu", progress=False), circuit, shots, seed, **options)


def refused_to(max_qubits):
    """The fuse option of run_branches: a branch's runs of gates fused to max_qubits."""
    return lambda circuit: fuse(circuit, max_qubits=max_qubits)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("refuse", [None, 4])
def test_branch_counts_follow_the_exact_distribution(seed, refuse):
    qc = dynamic_circuit(seed)
    exact = exact_distribution(qc)
    run = sampled(qc, 20000, seed, fuse=None if refuse is None else refused_to(refuse))
    observed = {bits: run.memory.count(bits) for bits in set(run.memory)}
    assert set(observed) <= set(exact)
    keys = sorted(exact)
    expected = np.array([exact[k] for k in keys]) * 20000
    assert chisquare([observed.get(k, 0) for k in keys], expected).pvalue > P_VALUE
    assert run.branches <= 2**5 and run.splits >= 1


@pytest.mark.parametrize("refuse", [None, 4])
def test_rebuilding_branches_by_replay_gives_the_same_shots(refuse):
    """With room for one state, waiting siblings are rebuilt from their outcome history: the
    draws, hence the shots, are those of the walk that keeps copies."""
    qc = dynamic_circuit(4)
    fusion = None if refuse is None else refused_to(refuse)
    with_copies = sampled(qc, 3000, 9, fuse=fusion)
    one_state = sampled(qc, 3000, 9, max_states=1, fuse=fusion)
    assert one_state.replays > 0 and with_copies.replays == 0
    assert one_state.memory == with_copies.memory


def test_same_seed_same_shots_and_the_backend_uses_branching():
    qc = dynamic_circuit(5)
    assert sampled(qc, 500, 3).memory == sampled(qc, 500, 3).memory
    result = QsimBackend(device="cpu").run(qc, shots=1000, seed_simulator=3).result()
    assert result.results[0].metadata["branches"] < 1000


def test_many_mid_circuit_measurements_branch_once_per_outcome():
    """A 10-qubit circuit measuring 6 qubits mid-circuit: at most 2^6 branches for 4000 shots,
    and the joint distribution of the 6 bits is the product of the exact marginals (H then
    measure: every bit is a fair coin)."""
    qc = QuantumCircuit(10, 6)
    qc.h(range(10))
    for q in range(6):
        qc.measure(q, q)
        qc.cx(q, q + 4)
    run = sampled(qc, 4000, 11)
    assert run.branches <= 64
    counts = np.bincount(np.array(run.memory), minlength=64)
    assert chisquare(counts).pvalue > P_VALUE


def layered_dynamic_circuit(n_qubits: int, layers: int) -> QuantumCircuit:
    """scripts/bench/bench_aer.py's dynamic case, smaller: RY layers and CX ladders, each followed
    by a mid-circuit measurement and an X conditioned on it, then every qubit measured."""
    rng = np.random.default_rng(20)
    qc = QuantumCircuit(n_qubits, layers + n_qubits)
    for layer in range(layers):
        for q in range(n_qubits):
            qc.ry(float(rng.uniform(0, np.pi)), q)
        for q in range(layer % 2, n_qubits - 1, 2):
            qc.cx(q, q + 1)
        measured = 2 * layer % n_qubits
        qc.measure(measured, layer)
        with qc.if_test((qc.clbits[layer], 1)):
            qc.x((measured + 1) % n_qubits)
    qc.measure(range(n_qubits), range(layers, layers + n_qubits))
    return qc


def pooled_chisquare(observed: dict, exact: dict, shots: int, min_expected: float = 5.0) -> float:
    """The chi-square p-value of `observed` counts against `exact` probabilities, the outcomes
    expected fewer than min_expected times pooled into one cell (so the test's approximation holds)."""
    keys = sorted(exact, key=lambda k: -exact[k])
    large = [k for k in keys if exact[k] * shots >= min_expected]
    small = [k for k in keys if exact[k] * shots < min_expected]
    counts = [observed.get(k, 0) for k in large] + [sum(observed.get(k, 0) for k in small)]
    expected = [exact[k] * shots for k in large] + [sum(exact[k] for k in small) * shots]
    return chisquare(counts, np.array(expected) * sum(counts) / sum(expected)).pvalue


def test_the_backend_samples_the_benchmark_circuit_exactly_with_refused_runs():
    """The benchmark's dynamic circuit on 6 qubits, 5 mid-circuit measurements: all 11 bits of
    20000 shots against the exact enumeration; the backend fuses a branch's runs again."""
    qc = layered_dynamic_circuit(6, 5)
    exact = exact_distribution(qc)
    shots = 20000
    result = QsimBackend(device="cpu").run(qc, shots=shots, seed_simulator=5).result()
    observed = {int(key, 2): count for key, count in result.get_counts().items()}  # one register: plain bits
    assert set(observed) <= {k for k, p in exact.items() if p > 0}
    assert pooled_chisquare(observed, exact, shots) > P_VALUE
    again = QsimBackend(device="cpu").run(qc, shots=shots, seed_simulator=5, memory=True).result()
    assert again.get_counts() == result.get_counts()
