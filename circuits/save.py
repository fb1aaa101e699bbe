"""Save operations: read a value off the state at a point of the circuit (Qiskit Aer's save
instructions) without changing it.

A Save names what it reads (`kind`), the qubits it reads (qubits[j] is bit j of an outcome or a
Pauli label's j-th character from the right), the result key (`label`) and how values of
several shots combine (`subtype`, Aer's: single, list, average, accum and their conditional c_
forms, which key the value by the classical bits at the save). `params` holds the kind's data:
Pauli terms ((label, (coefficient, squared-operator coefficient)), ...) for the expectation
values, basis-state indices for the amplitudes. The engine that honours saves is
qsim.branching; qsim.Simulator.run refuses them.
"""
from dataclasses import dataclass

from .errors import CircuitError
from .indices import distinct_indices, integer
from .operations import checked_condition

#: kind -> Aer's instruction name. Values of kinds marked averageable may be averaged over shots.
SAVE_KINDS = {
    "statevector": "save_statevector",
    "statevector_dict": "save_statevector_dict",
    "probabilities": "save_probabilities",
    "probabilities_dict": "save_probabilities_dict",
    "expectation_value": "save_expval",
    "expectation_value_variance": "save_expval_var",
    "amplitudes": "save_amplitudes",
    "amplitudes_squared": "save_amplitudes_sq",
}
AVERAGEABLE_KINDS = frozenset({"probabilities", "probabilities_dict", "expectation_value",
                               "expectation_value_variance", "amplitudes_squared"})
SUBTYPES = ("single", "c_single", "list", "c_list", "average", "c_average", "accum", "c_accum")
_PAULI_LETTERS = frozenset("IXYZ")
#: Aer's save instruction names -> Save kinds ("save_state" of a state vector is its state vector).
_SAVE_KIND_OF = {**{name: kind for kind, name in SAVE_KINDS.items()}, "save_state": "statevector"}


@dataclass(frozen=True)
class Save:
    """Save `kind` of the state on `qubits` under result key `label` (see the module docstring)."""

    kind: str
    qubits: tuple
    label: str
    subtype: str = "single"
    params: tuple = ()
    condition: object = None

    def __post_init__(self):
        if self.kind not in SAVE_KINDS:
            raise CircuitError(f"unknown save kind {self.kind!r}; one of {', '.join(SAVE_KINDS)}")
        object.__setattr__(self, "qubits", distinct_indices(self.qubits, f"qubits of save {self.label!r}"))
        if not isinstance(self.label, str) or not self.label:
            raise CircuitError(f"a save's label must be a non-empty string, got {self.label!r}")
        if self.subtype not in SUBTYPES:
            raise CircuitError(f"save {self.label!r}: subtype {self.subtype!r} is not one of {', '.join(SUBTYPES)}")
        if self.subtype.removeprefix("c_") in ("average", "accum") and self.kind not in AVERAGEABLE_KINDS:
            raise CircuitError(f"save {self.label!r}: a {self.kind} cannot be averaged ({self.subtype})")
        object.__setattr__(self, "params", self._checked_params())
        checked_condition(self.condition, f"save {self.label!r}")

    @property
    def name(self) -> str:
        return SAVE_KINDS[self.kind]

    def _checked_params(self) -> tuple:
        if self.kind.startswith("expectation_value"):
            return tuple(self._pauli_term(term) for term in self.params)
        if self.kind.startswith("amplitudes"):
            size = 1 << len(self.qubits)
            indices = tuple(integer(i, f"an amplitude index of save {self.label!r}") for i in self.params)
            if not indices or not all(0 <= i < size for i in indices):
                raise CircuitError(f"save {self.label!r} needs amplitude indices in 0..{size - 1}, got {indices}")
            return indices
        if self.params:
            raise CircuitError(f"save {self.label!r} ({self.kind}) takes no parameters, got {self.params!r}")
        return ()

    def _pauli_term(self, term) -> tuple:
        try:
            label, (coefficient, square_coefficient) = term
            coefficients = (float(coefficient), float(square_coefficient))
        except (TypeError, ValueError):
            raise CircuitError(f"save {self.label!r}: a Pauli term is (label, (coefficient, coefficient of the "
                               f"square)), got {term!r}") from None
        if (not isinstance(label, str) or len(label) != len(self.qubits) or not set(label) <= _PAULI_LETTERS):
            raise CircuitError(f"save {self.label!r}: Pauli label {label!r} must be {len(self.qubits)} letters "
                               "of I, X, Y, Z (one per saved qubit, the first qubit rightmost)")
        return label, coefficients


def save_from_qiskit(operation, qubits, condition, where) -> Save:
    """A Save from one of Aer's save instructions (or qsim.qiskit_save's, which mirror them):
    the key in `_label`, the shot combination in `_subtype`, Pauli terms or indices in params."""
    kind = _SAVE_KIND_OF.get(operation.name)
    if kind is None:
        raise CircuitError(f"instruction {where} is an Aer save instruction a state-vector simulator does not "
                           f"honour; supported: {', '.join(sorted(_SAVE_KIND_OF))}")
    label = getattr(operation, "_label", None)
    label = kind if label in (None, "_method_") else label  # save_state: named after the method
    try:
        return Save(kind, tuple(qubits), label, getattr(operation, "_subtype", "single"), tuple(operation.params),
                    condition)
    except CircuitError as exc:
        raise CircuitError(f"instruction {where}: {exc}") from None
