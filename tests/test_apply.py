"""Gate application through the engine against dense Kronecker/permutation operators."""
import numpy as np
import pytest

from circuits import Circuit, Gate, haar_unitary
from qsim import Simulator
from qsim.apply import plan_gate, sorted_target_matrix

from .dense import dense_operator, dense_state


def random_state(n, rng):
    v = rng.standard_normal(1 << n) + 1j * rng.standard_normal(1 << n)
    return v / np.linalg.norm(v)


TARGET_CASES = [
    (1, (0,)), (1, (5,)), (1, (8,)),
    (2, (0, 1)), (2, (3, 4)), (2, (1, 0)), (2, (0, 7)), (2, (7, 2)),
    (3, (4, 5, 6)), (3, (6, 4, 5)), (3, (0, 3, 8)), (3, (8, 1, 4)),
    (4, (2, 3, 4, 5)), (4, (5, 3, 2, 4)), (4, (0, 2, 5, 8)),
    (5, (4, 5, 6, 7, 8)), (5, (0, 1, 2, 3, 4)), (5, (8, 6, 4, 2, 0)), (5, (3, 1, 4, 0, 2)),
]


@pytest.mark.parametrize("d, targets", TARGET_CASES)
def test_single_gate_matches_dense_operator(d, targets, rng):
    n = 9
    u = haar_unitary(1 << d, rng)
    psi = random_state(n, rng)
    expected = dense_operator(n, targets, u) @ psi
    result = Simulator(device="cpu", progress=False).run(Circuit(n, [Gate(targets, u)]), initial_state=psi)
    assert np.abs(result.state - expected).max() < 1e-12


@pytest.mark.parametrize("out_of_place", [True, False])
def test_mixed_circuit_matches_dense(out_of_place, rng):
    n = 10
    gates = []
    for _ in range(12):
        d = int(rng.integers(1, 6))
        targets = tuple(int(t) for t in rng.choice(n, size=d, replace=False))
        gates.append(Gate(targets, haar_unitary(1 << d, rng)))
    circuit = Circuit(n, gates)
    result = Simulator(device="cpu", progress=False, out_of_place=out_of_place).run(circuit)
    assert np.abs(result.state - dense_state(circuit)).max() < 1e-12


def test_dense_reference_is_itself_sane():
    # X on qubit 2 of 3 qubits maps |000> to |100> = index 4 (little-endian).
    x = np.array([[0, 1], [1, 0]])
    op = dense_operator(3, (2,), x)
    assert op[4, 0] == 1 and op.sum() == 8
    # CNOT with control qubit 0 (matrix index bit 0), target qubit 1: |01> (index 1) -> |11> (index 3).
    cnot = np.eye(4)[[0, 3, 2, 1]]
    assert dense_operator(2, (0, 1), cnot)[3, 1] == 1
    assert dense_operator(2, (1, 0), cnot)[3, 2] == 1


def test_sorted_target_matrix_is_a_relabeling(rng):
    u = haar_unitary(8, rng)
    targets, matrix = sorted_target_matrix([5, 1, 3], u)
    assert targets == (1, 3, 5)
    assert np.allclose(dense_operator(6, (5, 1, 3), u), dense_operator(6, targets, matrix), atol=0)


def test_contiguous_targets_use_the_view_without_transpose():
    plan = plan_gate(10, (4, 3, 5), np.eye(8))
    assert plan.axes_order is None and plan.view_shape == (1 << 4, 8, 1 << 3)
    assert plan_gate(10, (0, 2), np.eye(4)).axes_order is not None
