"""while_loop (circuits.qiskit_control_flow): unrolled to max_while_iterations conditioned copies
of its body and a LoopLimit, run per shot branch (QsimBackend, qsim.branching) and per trajectory
(Simulator.run). References: exact outcome distributions of repeat-until-success loops (a
chi-square test at a false-alarm rate of 1e-6, fixed seeds) and, for a loop whose measurements
are certain, qiskit's Statevector of the circuit with the loop written out by hand."""
import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.quantum_info import Statevector
from scipy.stats import chisquare

from circuits import CircuitError, LoopLimit, fuse
from circuits.qiskit_import import from_qasm, from_qiskit
from qsim import SimulationError, Simulator
from qsim.branching import run_branches
from qsim.qiskit import QsimBackend
from qsim.trajectory import run_trajectories

P_VALUE = 1e-6
COUNTER_ITERATIONS = 4  # counting_loop's loop runs this often


def repeat_until_success(p_success: float) -> QuantumCircuit:
    """q0 reads 1 with probability p_success; while c0 == 0 it is reset and tried again, and every
    retry adds 1 (mod 4) to a counter on qubits 1 (low bit) and 2, measured at the end into c1, c2."""
    theta = 2 * np.arcsin(np.sqrt(p_success))
    qc = QuantumCircuit(3, 3)
    qc.ry(theta, 0)
    qc.measure(0, 0)
    with qc.while_loop((qc.clbits[0], 0)):
        qc.reset(0)
        qc.ry(theta, 0)
        qc.cx(1, 2)
        qc.x(1)
        qc.measure(0, 0)
    qc.measure(1, 1)
    qc.measure(2, 2)
    return qc


def retries_distribution(p_success: float) -> dict:
    """{classical bits: probability} of repeat_until_success: the retries K are geometric,
    P(K = k) = (1 - p)^k p, c0 ends 1 and (c2 c1) = K mod 4."""
    fail = 1.0 - p_success
    return {1 | (r << 1): p_success * fail**r / (1.0 - fail**4) for r in range(4)}


def assert_follows(counts: dict, distribution: dict) -> None:
    """counts {classical bits: count} pass a chi-square test against the exact distribution."""
    assert set(counts) <= set(distribution), f"outcomes {set(counts) - set(distribution)} cannot happen"
    total = sum(counts.values())
    keys = sorted(distribution)
    observed = [counts.get(k, 0) for k in keys]
    expected = [distribution[k] * total for k in keys]
    assert chisquare(observed, expected).pvalue > P_VALUE, (observed, expected)


def counting_loop() -> QuantumCircuit:
    """A 3-qubit counter (qubits 0..2, qubit 0 the low bit) incremented per iteration while its top
    bit reads 0, so the loop runs COUNTER_ITERATIONS times; each iteration first applies a
    layer of non-commuting gates on qubits 3 and 4. Every measurement reads a basis state."""
    qc = QuantumCircuit(5, 1)
    qc.measure(2, 0)
    with qc.while_loop((qc.clbits[0], 0)):
        _layer_and_increment(qc)
        qc.measure(2, 0)
    return qc


def _layer_and_increment(qc: QuantumCircuit) -> None:
    qc.ry(0.4, 3)
    qc.cx(3, 4)
    qc.rz(0.9, 4)
    qc.h(3)
    qc.p(0.3, 4)
    qc.ccx(0, 1, 2)
    qc.cx(0, 1)
    qc.x(0)


def counting_loop_written_out() -> Statevector:
    """The state of counting_loop: its measurements read certain outcomes, so they leave the state
    as it is, and the loop is its body COUNTER_ITERATIONS times."""
    qc = QuantumCircuit(5)
    for _ in range(COUNTER_ITERATIONS):
        _layer_and_increment(qc)
    return Statevector(qc)


def endless_loop() -> QuantumCircuit:
    """q0 stays |0>, so `while c0 == 0` never ends."""
    qc = QuantumCircuit(2, 1)
    qc.measure(0, 0)
    with qc.while_loop((qc.clbits[0], 0)):
        qc.x(1)
        qc.measure(0, 0)
    return qc


def test_repeat_until_success_branches_follow_the_geometric_retries():
    result = QsimBackend(device="cpu").run(repeat_until_success(0.4), shots=4000, seed_simulator=11).result()
    counts = {int(k, 2): v for k, v in result.get_counts().items()}
    assert_follows(counts, retries_distribution(0.4))
    assert result.results[0].metadata["branch_splits"] > 5  # the loop really branched per shot


def test_repeat_until_success_trajectories_follow_the_geometric_retries():
    circuit = fuse(from_qiskit(repeat_until_success(0.6)), max_qubits=3)
    records, _ = run_trajectories(Simulator(device="cpu", progress=False), circuit, count=600, seed=5,
                                  progress=False)
    counts = {}
    for record in records:
        counts[int(record["clbits"], 2)] = counts.get(int(record["clbits"], 2), 0) + 1
    assert_follows(counts, retries_distribution(0.6))


def test_qasm3_while_with_an_expression_condition_runs_per_shot():
    program = ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\nbit[2] c;\nh q[0];\nc[0] = measure q[0];\n'
               'while (c[0] == false) { reset q[0]; h q[0]; x q[1]; c[0] = measure q[0]; }\n'
               'c[1] = measure q[1];\n')
    circuit = from_qasm(program)
    assert any(isinstance(op, LoopLimit) for op in circuit.gates)
    run = run_branches(Simulator(device="cpu", progress=False), circuit, 3000, seed=2)
    counts = {}
    for bits in run.memory:
        counts[bits] = counts.get(bits, 0) + 1
    # c1 = retries mod 2 with P(K = k) = 2^-(k+1): even with probability 2/3
    assert_follows(counts, {0b01: 2 / 3, 0b11: 1 / 3})


def test_a_loop_of_certain_outcomes_ends_in_the_written_out_state():
    reference = counting_loop_written_out().data
    result = QsimBackend(device="cpu").run(counting_loop(), shots=20, seed_simulator=3, statevector=True).result()
    assert result.get_counts() == {"1": 20}
    np.testing.assert_allclose(result.get_statevector().data, reference, atol=1e-12)
    circuit = fuse(from_qiskit(counting_loop()), max_qubits=3)
    state = Simulator(device="cpu", progress=False).run(circuit, seed=4).state
    np.testing.assert_allclose(state, reference, atol=1e-12)


def test_the_limit_allows_exactly_max_while_iterations():
    at_limit = from_qiskit(counting_loop(), max_while_iterations=COUNTER_ITERATIONS)
    state = Simulator(device="cpu", progress=False).run(at_limit, seed=1).state
    np.testing.assert_allclose(state, counting_loop_written_out().data, atol=1e-12)
    below = from_qiskit(counting_loop(), max_while_iterations=COUNTER_ITERATIONS - 1)
    with pytest.raises(SimulationError, match=f"'while_loop' at position 1 still wants to run after "
                                              f"{COUNTER_ITERATIONS - 1} iterations"):
        Simulator(device="cpu", progress=False).run(below, seed=1)
    with pytest.raises(SimulationError, match="raise max_while_iterations"):
        QsimBackend(device="cpu", max_while_iterations=COUNTER_ITERATIONS - 1).run(counting_loop(), shots=5)


def test_an_endless_loop_stops_at_the_default_limit_with_one_line():
    with pytest.raises(SimulationError, match="still wants to run after 100 iterations") as caught:
        QsimBackend(device="cpu").run(endless_loop(), shots=10, seed_simulator=1)
    assert "\n" not in str(caught.value)


def test_a_loop_that_never_starts_runs_nothing():
    qc = QuantumCircuit(2, 1)
    qc.x(0)
    qc.measure(0, 0)
    with qc.while_loop((qc.clbits[0], 0)):
        qc.x(1)
        qc.measure(0, 0)
    result = QsimBackend(device="cpu").run(qc, shots=8, seed_simulator=1, statevector=True).result()
    assert result.get_counts() == {"1": 8}
    np.testing.assert_allclose(result.get_statevector().data, Statevector.from_label("01").data, atol=1e-14)


def _measure_then_gate():
    qc = QuantumCircuit(1, 1)
    with qc.while_loop((qc.clbits[0], 0)):
        qc.measure(0, 0)
        qc.h(0)
    return qc


def _break_in_while():
    qc = QuantumCircuit(1, 1)
    with qc.while_loop((qc.clbits[0], 0)):
        qc.h(0)
        qc.break_loop()
    return qc


@pytest.mark.parametrize("build, message", [
    (_measure_then_gate, "writes classical bit 0, which the condition of 'while_loop' at position 0 reads"),
    (_break_in_while, "'while_loop' at position 0 holds break_loop, which is not supported in a while loop"),
])
def test_loops_that_cannot_run_are_refused_by_instruction(build, message):
    with pytest.raises(CircuitError, match=message):
        from_qiskit(build())


def test_a_bad_iteration_limit_is_refused():
    with pytest.raises(CircuitError, match="max_while_iterations must be >= 1, got 0"):
        from_qiskit(endless_loop(), max_while_iterations=0)
    with pytest.raises(SimulationError, match="max_while_iterations must be an integer >= 1, got 0"):
        QsimBackend(max_while_iterations=0)
