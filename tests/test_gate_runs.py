"""qsim.gate_runs: a branch's run of gates, its conditions resolved and fused again, against the
dense product of the gates that apply (tests.dense), for every pattern of the classical bits."""
import numpy as np
import pytest
from scipy.stats import unitary_group

from circuits import Circuit, Condition, Gate, Measure, fuse
from qsim import Simulator
from qsim.gate_runs import GateRuns

from .dense import condition_holds, dense_operator
from .helpers import crandn

N_QUBITS = 5


def random_gate(targets, seed, condition=None):
    return Gate(targets, unitary_group.rvs(1 << len(targets), random_state=seed), condition=condition)


def run_circuit() -> Circuit:
    """A measurement, then one run of five gates, two of them conditioned on its bits, then
    another measurement and a run of one gate."""
    gates = [
        Measure((0, 1), (0, 1)),
        random_gate((0, 1), 1),
        random_gate((1, 2), 2, Condition.equals((0,), 1)),
        random_gate((0, 2), 3),
        random_gate((3,), 4, Condition.equals((0, 1), 2)),
        random_gate((2, 3), 5),
        Measure((4,), (2,)),
        random_gate((4, 0), 6),
    ]
    return Circuit(N_QUBITS, gates, n_clbits=3)


def dense_run(circuit, start, end, bits, state):
    bit_list = [(bits >> c) & 1 for c in range(circuit.n_clbits)]
    for gate in circuit.gates[start:end]:
        if condition_holds(gate.condition, bit_list):
            state = dense_operator(circuit.n_qubits, gate.targets, gate.matrix) @ state
    return state


@pytest.mark.parametrize("refuse", [None, 3])
@pytest.mark.parametrize("bits", range(4))
def test_a_run_equals_the_dense_product_of_the_gates_that_apply(rng, refuse, bits):
    circuit = run_circuit()
    simulator = Simulator(device="cpu", progress=False)
    with simulator.prepared(circuit) as prepared:
        runs = GateRuns(simulator, prepared, None if refuse is None else (lambda c: fuse(c, refuse)))
        assert runs.end(1) == 6 and runs.end(7) == 8 and runs.end(0) == 0
        initial = crandn(rng, 1 << N_QUBITS)
        state, _ = runs.apply(1, bits, initial.copy(), None)
    expected = dense_run(circuit, 1, 6, bits, initial)
    assert np.abs(state - expected).max() < 1e-13


def test_refused_runs_merge_across_resolved_conditions_and_are_built_once():
    """Fused to 3 qubits, the run with both conditions false is two gates ((0,1,2), then (2,3)),
    with the first true one block (0,1,2) and (2,3) too: the circuit-wide fusion keeps the
    conditioned gates apart from the others."""
    circuit = run_circuit()
    whole = fuse(circuit, 3)
    assert sum(isinstance(op, Gate) for op in whole.gates) > 4
    simulator = Simulator(device="cpu", progress=False)
    with simulator.prepared(circuit) as prepared:
        runs = GateRuns(simulator, prepared, lambda c: fuse(c, 3))
        for bits in (0b00, 0b01):
            gates = runs.gates(1, bits)
            assert [plan.targets for _, plan, _ in gates] == [(0, 1, 2), (2, 3)]
            assert runs.gates(1, bits) is gates  # cached per pattern of conditions
        own = GateRuns(simulator, prepared, None).gates(1, 0b01)
        assert [position for position, _, _ in own] == [1, 2, 3, 5]
