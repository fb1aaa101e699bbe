"""Aer's save instructions for code that runs on QsimBackend without qiskit-aer installed, and
the Qiskit types of saved values.

install_circuit_methods() adds QuantumCircuit.save_statevector, save_statevector_dict,
save_state, save_probabilities, save_probabilities_dict, save_expectation_value,
save_expectation_value_variance, save_amplitudes and save_amplitudes_squared where they are
missing (qiskit-aer, when imported, installs its own; circuits.qiskit_import reads both by
instruction name, label and subtype). The signatures and defaults are Aer's: the label is the
result key; pershot, unnormalized and conditional pick the subtype (list, accum, c_...).
"""
import numpy as np
from qiskit.circuit import Instruction, QuantumCircuit, QuantumRegister
from qiskit.quantum_info import Operator, Pauli, SparsePauliOp, Statevector
from qiskit.result import ProbDistribution

from circuits.save import SAVE_KINDS

#: The instruction names a state-vector simulator honours (Aer's; save_state is the state vector).
SAVE_INSTRUCTION_NAMES = (*SAVE_KINDS.values(), "save_state")

from .errors import SimulationError


class SaveInstruction(Instruction):
    """A save of `kind` (circuits.save.SAVE_KINDS) on its qubits; a directive, not a gate."""

    _directive = True

    def __init__(self, kind: str, num_qubits: int, label: str, subtype: str, params=()):
        if not isinstance(label, str) or not label:
            raise SimulationError(f"a save's label must be a non-empty string, got {label!r}")
        super().__init__(SAVE_KINDS[kind], num_qubits, 0, list(params))
        self._label = label
        self._subtype = subtype

    def inverse(self, annotated=False):
        return self


def _single(pershot: bool, conditional: bool) -> str:
    """Aer's subtype of a value that is not averaged: one value, or one per shot."""
    return ("c_" if conditional else "") + ("list" if pershot else "single")


def _averaged(pershot: bool, conditional: bool, unnormalized: bool) -> str:
    """Aer's subtype of an averageable value: per shot, summed over shots, or averaged."""
    return ("c_" if conditional else "") + ("list" if pershot else "accum" if unnormalized else "average")


def _qubits(circuit, qubits):
    if qubits is None:
        return list(circuit.qubits)
    return qubits[:] if isinstance(qubits, QuantumRegister) else list(qubits)


def _append(circuit, kind, qubits, label, subtype, params=()):
    return circuit.append(SaveInstruction(kind, len(qubits), label, subtype, params), qubits)


def save_statevector(self, label="statevector", pershot=False, conditional=False):
    """Save the state vector (all qubits) under `label`."""
    return _append(self, "statevector", list(self.qubits), label, _single(pershot, conditional))


def save_state(self, label=None, pershot=False, conditional=False):
    """The state of a state-vector simulator: its state vector (label 'statevector' by default)."""
    return save_statevector(self, label or "statevector", pershot, conditional)


def save_statevector_dict(self, label="statevector", pershot=False, conditional=False):
    """Save the nonzero amplitudes as {hex index: amplitude}."""
    return _append(self, "statevector_dict", list(self.qubits), label, _single(pershot, conditional))


def save_probabilities(self, qubits=None, label="probabilities", unnormalized=False, pershot=False,
                       conditional=False):
    """Save the outcome probabilities of `qubits` (None: all) as an array (bit j = qubits[j])."""
    qubits = _qubits(self, qubits)
    return _append(self, "probabilities", qubits, label, _averaged(pershot, conditional, unnormalized))


def save_probabilities_dict(self, qubits=None, label="probabilities", unnormalized=False, pershot=False,
                            conditional=False):
    """Save the nonzero outcome probabilities of `qubits` as a ProbDistribution."""
    qubits = _qubits(self, qubits)
    return _append(self, "probabilities_dict", qubits, label, _averaged(pershot, conditional, unnormalized))


def save_expectation_value(self, operator, qubits, label="expectation_value", unnormalized=False,
                           pershot=False, conditional=False):
    """Save <psi|operator|psi> (a Hermitian Pauli, SparsePauliOp or Operator on `qubits`)."""
    return _append(self, "expectation_value", list(qubits), label, _averaged(pershot, conditional, unnormalized),
                   pauli_terms(operator, variance=False))


def save_expectation_value_variance(self, operator, qubits, label="expectation_value_variance",
                                    unnormalized=False, pershot=False, conditional=False):
    """Save [<operator>, <operator^2> - <operator>^2]."""
    return _append(self, "expectation_value_variance", list(qubits), label,
                   _averaged(pershot, conditional, unnormalized), pauli_terms(operator, variance=True))


def save_amplitudes(self, params, label="amplitudes", pershot=False, conditional=False):
    """Save the amplitudes at basis-state indices `params` (over all qubits)."""
    return _append(self, "amplitudes", list(self.qubits), label, _single(pershot, conditional),
                   [int(i) for i in params])


def save_amplitudes_squared(self, params, label="amplitudes_squared", unnormalized=False, pershot=False,
                            conditional=False):
    """Save the probabilities of the basis states at indices `params`."""
    return _append(self, "amplitudes_squared", list(self.qubits), label,
                   _averaged(pershot, conditional, unnormalized), [int(i) for i in params])


def pauli_terms(operator, variance: bool) -> list:
    """[(label, (coefficient in O, coefficient in O^2)), ...] of a Hermitian operator."""
    if isinstance(operator, Pauli):
        operator = SparsePauliOp(operator)
    elif not isinstance(operator, SparsePauliOp):
        operator = SparsePauliOp.from_operator(Operator(operator))
    if not np.allclose(operator.coeffs.imag, 0):
        raise SimulationError("save_expectation_value needs a Hermitian operator (real Pauli coefficients)")
    terms = {}
    for label, coefficient in operator.label_iter():
        first, second = terms.get(label, (0.0, 0.0))
        terms[label] = (first + coefficient.real, second)
    if variance:
        for label, coefficient in operator.dot(operator).label_iter():
            first, second = terms.get(label, (0.0, 0.0))
            terms[label] = (first, second + coefficient.real)
    return list(terms.items())


_METHODS = {name: globals()[name] for name in (
    "save_statevector", "save_state", "save_statevector_dict", "save_probabilities", "save_probabilities_dict",
    "save_expectation_value", "save_expectation_value_variance", "save_amplitudes", "save_amplitudes_squared")}


def install_circuit_methods() -> None:
    """Add the save_* methods to QuantumCircuit where none is there (Aer's stay if installed)."""
    for name, method in _METHODS.items():
        if not hasattr(QuantumCircuit, name):
            setattr(QuantumCircuit, name, method)


def qiskit_value(kind: str, value, n_qubits: int):
    """A combined save value (qsim.save_values) in the Qiskit type Aer returns: Statevector for
    state vectors, ProbDistribution for probability dicts, hex keys for amplitude dicts; lists
    and conditional dicts convert entry by entry."""
    if isinstance(value, list):
        return [qiskit_value(kind, entry, n_qubits) for entry in value]
    if isinstance(value, dict) and value and isinstance(next(iter(value)), str):  # conditional: {memory hex: value}
        return {key: qiskit_value(kind, entry, n_qubits) for key, entry in value.items()}
    if kind == "statevector":
        return Statevector(value, dims=(2,) * n_qubits)
    if kind == "statevector_dict":
        return {hex(index): amplitude for index, amplitude in value.items()}
    if kind == "probabilities_dict":
        return ProbDistribution(value)
    return value
