"""fuse: fused circuits equal the originals (checked with dense Kronecker-product operators, not
the engine), blocks respect max_qubits and gate order, and QFT circuits shrink."""
import time

import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.circuit.library import QFTGate

from circuits import Circuit, CircuitError, ClbitTest, Condition, Gate, Measure, Reset, haar_unitary
from circuits.fusion import AUTO_FUSION_SIZES, apply_to_rows, fuse, fuse_by_cost
from circuits.qiskit_import import from_qiskit
from qsim import Simulator

from .dense import DenseDynamic, dense_operator, dense_state


def haar_gate(targets, rng, name="u"):
    return Gate(tuple(targets), haar_unitary(1 << len(targets), rng), name=name)


def random_gate_circuit(n_qubits, n_gates, max_width, seed):
    """Haar-random gates on random, unsorted, often overlapping qubit sets."""
    rng = np.random.default_rng(seed)
    gates = []
    for _ in range(n_gates):
        width = int(rng.integers(1, max_width + 1))
        gates.append(haar_gate(rng.choice(n_qubits, size=width, replace=False), rng))
    return Circuit(n_qubits, gates, measured=(2, 0))


def qft_circuit(n):
    qc = QuantumCircuit(n)
    qc.append(QFTGate(n), range(n))
    return from_qiskit(qc)


@pytest.mark.parametrize("max_qubits", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fused_state_equals_unfused(max_qubits, seed):
    circuit = random_gate_circuit(7, 40, 3, seed)
    fused = fuse(circuit, max_qubits)
    assert fused.n_qubits == circuit.n_qubits and fused.measured == circuit.measured
    assert np.abs(dense_state(fused) - dense_state(circuit)).max() < 1e-12
    for gate in fused.gates:
        assert gate.n_targets <= max(max_qubits, 3)
        assert any(gate is g for g in circuit.gates) or list(gate.targets) == sorted(gate.targets)
    if max_qubits >= 3:
        assert len(fused) < len(circuit)


def test_block_matrix_is_the_exact_product_in_sorted_target_order(rng):
    first, second, third = haar_gate((2, 0), rng), haar_gate((1,), rng), haar_gate((1, 2), rng)
    fused = fuse(Circuit(3, [first, second, third]), 3)
    assert len(fused) == 1 and fused.gates[0].targets == (0, 1, 2)
    expected = dense_operator(3, (1, 2), third.matrix) @ dense_operator(3, (1,), second.matrix) @ dense_operator(
        3, (2, 0), first.matrix)
    assert np.abs(fused.gates[0].matrix - expected).max() < 1e-14


def test_gate_does_not_join_a_block_past_a_newer_gate_on_its_qubits(rng):
    a, b, c = haar_gate((0, 1), rng), haar_gate((1, 2), rng), haar_gate((0, 1), rng)
    fused = fuse(Circuit(3, [a, b, c]), 2)
    # c cannot go back into a's block: b acts on qubit 1 in between.
    assert [g.targets for g in fused.gates] == [(0, 1), (1, 2), (0, 1)]
    assert np.abs(dense_state(fused) - dense_state(Circuit(3, [a, b, c]))).max() < 1e-14


def test_disjoint_gates_share_a_block_and_order_is_kept(rng):
    gates = [haar_gate((q,), rng) for q in range(5)] + [haar_gate((4, 0), rng), haar_gate((2,), rng)]
    circuit = Circuit(6, gates)
    fused = fuse(circuit, 5)
    assert [g.targets for g in fused.gates] == [(0, 1, 2, 3, 4)]
    assert np.abs(dense_state(fused) - dense_state(circuit)).max() < 1e-13


def test_one_qubit_blocks_merge_runs_on_the_same_qubit(rng):
    gates = [haar_gate((0,), rng), haar_gate((0,), rng), haar_gate((0, 1), rng), haar_gate((0,), rng),
             haar_gate((1,), rng), haar_gate((1,), rng)]
    circuit = Circuit(2, gates)
    fused = fuse(circuit, 1)
    assert [g.targets for g in fused.gates] == [(0,), (0, 1), (0,), (1,)]
    assert fused.gates[1] is gates[2]
    assert np.abs(dense_state(fused) - dense_state(circuit)).max() < 1e-14


def test_gates_wider_than_the_limit_pass_through(rng):
    wide = haar_gate((0, 1, 2), rng)
    circuit = Circuit(3, [haar_gate((0,), rng), wide, haar_gate((2,), rng)])
    fused = fuse(circuit, 2)
    assert fused.gates[1] is wide and len(fused) == 3


def test_qft10_gate_count_at_least_halves():
    circuit = qft_circuit(10)
    fused = fuse(circuit)
    assert len(circuit) == 60
    assert len(fused) <= len(circuit) // 2
    assert fused.max_gate_size() <= 5
    rng = np.random.default_rng(4)
    psi = rng.standard_normal(1024) + 1j * rng.standard_normal(1024)
    psi /= np.linalg.norm(psi)
    simulator = Simulator(backend="cublas", device="cpu", progress=False)
    states = [simulator.run(c, initial_state=psi).state for c in (circuit, fused)]
    assert np.abs(states[0] - states[1]).max() < 1e-13


def test_qft28_fuses_quickly():
    start = time.perf_counter()
    circuit = qft_circuit(28)
    fused = fuse(circuit, 5)
    elapsed = time.perf_counter() - start
    assert len(circuit) == 28 + 28 * 27 // 2 + 14
    assert len(fused) <= len(circuit) // 3 and fused.max_gate_size() <= 5
    assert elapsed < 5.0


def test_apply_to_rows_matches_dense_embedding(rng):
    u = haar_unitary(4, rng)
    matrix = rng.standard_normal((16, 16)) + 1j * rng.standard_normal((16, 16))
    assert np.abs(apply_to_rows(matrix, [3, 1], u) - dense_operator(4, (3, 1), u) @ matrix).max() < 1e-13


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "5"])
def test_bad_max_qubits_is_rejected(bad):
    with pytest.raises(CircuitError, match="max_qubits must be an integer >= 1"):
        fuse(Circuit(2, []), bad)


def test_non_circuit_is_rejected():
    with pytest.raises(CircuitError, match="circuits.Circuit"):
        fuse([], 3)


# -- dynamic circuits -----------------------------------------------------------------------
def random_dynamic_circuit(n_qubits, n_operations, seed):
    """Haar gates of 1-3 qubits mixed with measurements, resets and conditioned gates."""
    rng = np.random.default_rng(seed)
    n_clbits = 4
    operations = []
    for _ in range(n_operations):
        kind = rng.choice(["gate", "gate", "gate", "measure", "reset", "conditioned"])
        qubits = tuple(int(q) for q in rng.choice(n_qubits, size=int(rng.integers(1, 4)), replace=False))
        if kind == "measure":
            operations.append(Measure(qubits, tuple(int(c) for c in rng.choice(n_clbits, len(qubits), replace=False))))
        elif kind == "reset":
            operations.append(Reset(qubits[:1]))
        else:
            condition = None
            if kind == "conditioned":
                clbits = tuple(int(c) for c in rng.choice(n_clbits, 2, replace=False))
                condition = Condition((ClbitTest(clbits, int(rng.integers(0, 4)), bool(rng.integers(0, 2))),))
            operations.append(Gate(qubits, haar_unitary(1 << len(qubits), rng), condition=condition))
    return Circuit(n_qubits, operations, n_clbits=n_clbits)


@pytest.mark.parametrize("max_qubits", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", [4, 5, 6])
def test_fused_dynamic_circuit_runs_the_same_trajectory(max_qubits, seed):
    circuit = random_dynamic_circuit(6, 40, seed)
    fused = fuse(circuit, max_qubits)
    assert fused.n_clbits == circuit.n_clbits
    assert [op for op in fused.gates if not isinstance(op, Gate)] == [op for op in circuit.gates
                                                                       if not isinstance(op, Gate)]
    dense = DenseDynamic(circuit)
    for trajectory_seed in range(4):
        result = Simulator(device="cpu", progress=False).run(fused, seed=trajectory_seed)
        state, bits, probabilities = dense.replay(result.trajectory["events"])
        assert np.abs(result.state_vector() - state).max() < 1e-12
        assert np.allclose([e["probability"] for e in result.trajectory["events"]], probabilities, rtol=1e-12)


def test_gates_do_not_cross_a_measurement_or_reset_on_their_qubits(rng):
    before, after, elsewhere = haar_gate((0, 1), rng), haar_gate((1, 2), rng), haar_gate((0,), rng)
    for barrier in (Measure((1,), (0,)), Reset((1,))):
        fused = fuse(Circuit(3, [before, barrier, after, elsewhere], n_clbits=1), 3)
        # `after` stays behind the barrier; `elsewhere` (qubit 0, untouched by it) joins `before`.
        assert [op.name for op in fused.gates] == ["fused2", barrier.name, "u"]
        assert fused.gates[0].targets == (0, 1) and fused.gates[2] is after


def test_conditioned_gates_fuse_only_with_the_same_condition(rng):
    first, second = (Condition.equals((0,), 1), Condition.equals((0,), 0))
    a, b = haar_gate((0,), rng), haar_gate((1,), rng)
    c1 = Gate((0,), haar_unitary(2, rng), condition=first)
    c2 = Gate((1,), haar_unitary(2, rng), condition=first)
    c3 = Gate((1,), haar_unitary(2, rng), condition=second)
    fused = fuse(Circuit(2, [a, c1, b, c2, c3], n_clbits=1), 2)
    assert [(op.name, op.condition) for op in fused.gates] == [("fused2", None), ("fused2", first), ("unitary", second)]
    expected = dense_operator(2, (1,), c2.matrix) @ dense_operator(2, (0,), c1.matrix)
    assert np.abs(fused.gates[1].matrix - expected).max() < 1e-15


def test_a_conditioned_gate_stays_after_the_measurement_it_reads(rng):
    early = Gate((0,), haar_unitary(2, rng), condition=Condition.equals((0,), 1))
    write = Measure((2,), (0,))
    late = Gate((1,), haar_unitary(2, rng), condition=Condition.equals((0,), 1))
    fused = fuse(Circuit(3, [early, write, late], n_clbits=1), 3)
    assert list(fused.gates) == [early, write, late]


# -- fusion by cost -----------------------------------------------------------------------------
def test_fuse_by_cost_takes_the_cheapest_size_and_its_fused_circuit():
    circuit = qft_circuit(8)
    per_gate = fuse_by_cost(circuit, lambda targets: 1.0)  # every gate one pass: the widest blocks win
    widest = max(AUTO_FUSION_SIZES)
    assert per_gate.max_qubits == widest
    assert [g.targets for g in per_gate.circuit.gates] == [g.targets for g in fuse(circuit, widest).gates]
    assert per_gate.estimated_cost[widest] == len(fuse(circuit, widest).gates) < per_gate.estimated_cost[1]
    # a cost growing as 4^d makes wide blocks dearer than the gates they replace
    assert fuse_by_cost(circuit, lambda targets: 4.0 ** len(targets)).max_qubits <= 2
    np.testing.assert_allclose(dense_state(per_gate.circuit), dense_state(circuit), atol=1e-12)


def test_fuse_by_cost_breaks_ties_towards_smaller_blocks_and_skips_measurements(rng):
    # nothing crosses the measurement on qubit 0, so every size gives the same two gates
    circuit = Circuit(3, [haar_gate([0], rng), Measure((0,), (0,)), haar_gate([0], rng)], n_clbits=1)
    choice = fuse_by_cost(circuit, lambda targets: 1.0, sizes=(3, 1, 2))
    assert choice.max_qubits == 1 and choice.estimated_cost == {1: 2.0, 2: 2.0, 3: 2.0}


def test_fuse_by_cost_needs_a_size():
    with pytest.raises(CircuitError, match="at least one block size"):
        fuse_by_cost(qft_circuit(3), lambda targets: 1.0, sizes=())
