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
        ((0, 0), np.eye(4), "repeated index"),
        ((-1,), np.eye(2), "negative"),
        ((), np.eye(1), "at least one"),
        ((0, 1), np.eye(2), "4x4"),
        ((0,), np.array([[1, 1], [0, 1]]), "not unitary"),
        ((0,), np.array([[np.nan, 0], [0, 1]]), "NaN"),
        (("a",), np.eye(2), "must be an integer, got 'a'"),
    ],
)
def test_bad_gates_raise_clear_errors(targets, matrix, message):
    with pytest.raises(CircuitError, match=message):
        Gate(targets, matrix)


@pytest.mark.parametrize("target, shown", [
    (0.5, r"0.5 \(float\)"), (1.0, r"1.0 \(float\)"), (np.float64(0.0), r"\(float64\)"),
    (np.float32(1), r"\(float32\)"),
    ("0", r"'0' \(str\)"), (True, r"True \(bool\)"), (False, r"False \(bool\)"), (np.bool_(True), r"\(bool"),
    (None, r"None \(NoneType\)"),
])
def test_non_integer_and_boolean_qubit_indices_are_refused(target, shown):
    # int() would truncate them (0.5 -> qubit 0, True -> qubit 1): a wrong gate instead of an error
    message = f"gate 'unitary' target qubits: every index must be an integer, got .*{shown}"
    with pytest.raises(CircuitError, match=message):
        Gate((1, target), np.eye(4))


@pytest.mark.parametrize("targets", [(np.int64(2), 0), (np.int32(1),), np.array([3, 1]), [np.uint8(0)], range(2)])
def test_numpy_integer_targets_are_plain_ints(targets):
    dim = 1 << len(targets)
    gate = Gate(targets, np.eye(dim))
    assert gate.targets == tuple(int(t) for t in targets)
    assert all(type(t) is int for t in gate.targets)


@pytest.mark.parametrize("build, message", [
    (lambda: Gate(0, np.eye(2)), "must be a sequence of integer indices, got 0"),
    (lambda: Gate((0,), np.eye(2), name=7), "name must be a string, got 7"),
    (lambda: Circuit(2.0, []), r"n_qubits must be an integer, got 2.0 \(float\)"),
    (lambda: Circuit(np.float64(3), []), "n_qubits must be an integer"),
    (lambda: Circuit(True, []), r"n_qubits must be an integer, got True \(bool\)"),
    (lambda: Circuit("3", []), "n_qubits must be an integer, got '3'"),
    (lambda: Circuit(2, None), "gates must be a sequence, got None"),
    (lambda: Circuit(2, [], measured=(0.0,)), "a measured qubit must be an integer, got 0.0"),
    (lambda: Circuit(2, [], measured=(False,)), "a measured qubit must be an integer, got False"),
])
def test_circuit_and_gate_refuse_values_that_int_would_coerce(build, message):
    with pytest.raises(CircuitError, match=message):
        build()


def test_circuit_keeps_numpy_integer_sizes_as_ints():
    circuit = Circuit(np.int64(3), [Gate((2,), np.eye(2))], measured=(np.int64(1),), n_clbits=np.int32(1))
    assert (circuit.n_qubits, circuit.measured, circuit.n_clbits) == (3, (1,), 1)
    assert type(circuit.n_qubits) is int and type(circuit.n_clbits) is int


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


@pytest.mark.parametrize("matrix, dtype", [
    (np.array([[False, True], [True, False]]), "bool"),
    (np.array([[0, 1], [1, 0]], dtype=object), "object"),
    ([["0", "1"], ["1", "0"]], "<U1"),
])
def test_non_numeric_matrices_are_refused(matrix, dtype):
    """A boolean, object or string matrix is refused, not coerced to complex (or failing in numpy)."""
    with pytest.raises(CircuitError, match=f"matrix must hold numbers .*got dtype {dtype}"):
        Gate((0,), matrix)


def test_measured_qubits_are_distinct():
    """Sampling one qubit twice is not a measurement Qiskit's final measurements can describe."""
    with pytest.raises(CircuitError, match=r"measured qubits \(1, 1\) repeat a qubit"):
        Circuit(2, [], measured=(1, 1))
