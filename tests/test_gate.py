import numpy as np
import pytest

from circuits import Circuit, CircuitError, Gate, haar_unitary


def test_gate_accepts_unitary_and_freezes_matrix(rng):
    u = haar_unitary(4, rng)
    gate = Gate((3, 1), u)
    assert gate.targets == (3, 1)
    assert gate.matrix.dtype == np.complex128
    with pytest.raises(ValueError):
        gate.matrix[0, 0] = 0


@pytest.mark.parametrize(
    "targets, matrix, message",
    [
        ((0, 0), np.eye(4), "duplicate"),
        ((-1,), np.eye(2), "negative"),
        ((), np.eye(1), "at least one"),
        ((0, 1), np.eye(2), "4x4"),
        ((0,), np.array([[1, 1], [0, 1]]), "not unitary"),
        ((0,), np.array([[np.nan, 0], [0, 1]]), "NaN"),
        (("a",), np.eye(2), "integers"),
    ],
)
def test_bad_gates_raise_clear_errors(targets, matrix, message):
    with pytest.raises(CircuitError, match=message):
        Gate(targets, matrix)


def test_unitarity_tolerance_is_tight():
    almost = np.eye(2) * (1 + 1e-9)
    with pytest.raises(CircuitError, match="not unitary"):
        Gate((0,), almost)
    Gate((0,), np.eye(2) * (1 + 1e-12))


def test_circuit_rejects_out_of_range_targets():
    with pytest.raises(CircuitError, match="targets qubit 3"):
        Circuit(3, [Gate((3,), np.eye(2))])
    with pytest.raises(CircuitError, match="at least 1 qubit"):
        Circuit(0, [])
    with pytest.raises(CircuitError, match="not a circuits.Gate"):
        Circuit(2, [np.eye(2)])
    with pytest.raises(CircuitError, match="measured qubit 5"):
        Circuit(2, [], measured=(5,))
