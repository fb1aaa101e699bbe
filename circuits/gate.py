"""Gates and circuits: the data the engine consumes.

Conventions (design brief section 2, Qiskit's): amplitude index bit q is qubit q; a gate on
targets (t0, ..., t_{d-1}) is a 2^d x 2^d matrix whose row/column index bit j is qubit t_j.
A circuit may also hold measurements, resets and classically conditioned gates
(circuits.operations): a dynamic circuit, run as a quantum trajectory.
"""
from dataclasses import dataclass, field

import numpy as np

from .errors import CircuitError
from .indices import distinct_indices, integer, qubit_count
from .operations import Condition, LoopLimit, Measure, Reset, checked_condition
from .save import Save

UNITARITY_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Gate:
    """A dense gate. targets: distinct qubit indices; matrix: (2^d, 2^d) complex128 unitary;
    condition: applied only when this classical condition holds (None: always)."""

    targets: tuple
    matrix: np.ndarray
    name: str = "unitary"
    condition: Condition = None

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise CircuitError(f"a gate's name must be a string, got {self.name!r}")
        targets = distinct_indices(self.targets, f"gate {self.name!r} target qubits")
        matrix = _numeric_matrix(self.matrix, self.name)
        dim = 1 << len(targets)
        if matrix.shape != (dim, dim):
            raise CircuitError(
                f"gate {self.name!r} on {len(targets)} qubits needs a {dim}x{dim} matrix, got shape {matrix.shape}"
            )
        if not np.isfinite(matrix).all():
            raise CircuitError(f"gate {self.name!r}: matrix contains NaN or Inf")
        deviation = float(np.abs(matrix.conj().T @ matrix - np.eye(dim)).max())
        if deviation > UNITARITY_TOLERANCE:
            raise CircuitError(
                f"gate {self.name!r} on {targets} is not unitary: max |U^dagger U - I| = {deviation:.2e} "
                f"> {UNITARITY_TOLERANCE:g}"
            )
        checked_condition(self.condition, f"gate {self.name!r}")
        matrix.setflags(write=False)
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "matrix", matrix)

    @property
    def n_targets(self) -> int:
        return len(self.targets)


def _numeric_matrix(values, name: str) -> np.ndarray:
    """values as a new complex128 array; a CircuitError when they are not numbers (booleans,
    strings or Python objects would otherwise be coerced, or fail deep inside numpy)."""
    raw = np.asarray(values)
    if raw.dtype.kind not in "iufc":
        raise CircuitError(f"gate {name!r}: matrix must hold numbers (integer, float or complex dtype), "
                           f"got dtype {raw.dtype}")
    return np.array(raw, dtype=np.complex128)


@dataclass(frozen=True)
class Circuit:
    """An ordered list of operations on n_qubits qubits: Gates, and in a dynamic circuit also
    Measure and Reset operations, conditioned gates and the LoopLimits of unrolled while loops
    (circuits.operations).

    measured: qubits measured at the end of a circuit without mid-circuit operations (in the
        order of their classical bits), empty when none.
    n_clbits: classical bits, numbered in Qiskit's order.
    clbit_registers: ((name, size), ...) covering the classical bits in order, for printing
        outcomes as Qiskit does; empty when the bits are not laid out as whole registers.
    """

    n_qubits: int
    gates: tuple
    measured: tuple = field(default=())
    n_clbits: int = 0
    clbit_registers: tuple = field(default=())

    def __post_init__(self):
        n_qubits = qubit_count(self.n_qubits, "a circuit's n_qubits")
        n_clbits = integer(self.n_clbits, "a circuit's n_clbits")
        if n_clbits < 0:
            raise CircuitError(f"a circuit's n_clbits must be >= 0, got {n_clbits}")
        object.__setattr__(self, "n_qubits", n_qubits)
        object.__setattr__(self, "gates", _sequence(self.gates, "a circuit's gates"))
        measured = _sequence(self.measured, "a circuit's measured qubits")
        object.__setattr__(self, "measured", tuple(integer(q, "a measured qubit") for q in measured))
        object.__setattr__(self, "n_clbits", n_clbits)
        object.__setattr__(self, "clbit_registers", _registers(self.clbit_registers))
        for position, operation in enumerate(self.gates):
            self._check_operation(position, operation)
        for q in self.measured:
            if not 0 <= q < self.n_qubits:
                raise CircuitError(f"measured qubit {q} is outside 0..{self.n_qubits - 1}")
        if len(set(self.measured)) != len(self.measured):
            raise CircuitError(f"measured qubits {self.measured} repeat a qubit; list each qubit once")
        if self.clbit_registers and sum(size for _, size in self.clbit_registers) != self.n_clbits:
            raise CircuitError(f"clbit_registers {self.clbit_registers} do not cover the {self.n_clbits} classical bits")

    def _check_operation(self, position, operation) -> None:
        if not isinstance(operation, (Gate, Measure, Reset, Save, LoopLimit)):
            raise CircuitError(f"gate {position} is a {type(operation).__name__}, not a circuits.Gate, Measure, Reset, "
                               "Save or LoopLimit")
        qubits = operation.targets if isinstance(operation, Gate) else operation.qubits
        if qubits and max(qubits) >= self.n_qubits:
            raise CircuitError(
                f"gate {position} ({operation.name!r}) targets qubit {max(qubits)}, "
                f"but the circuit has only {self.n_qubits} qubits (0..{self.n_qubits - 1})"
            )
        clbits = set(operation.clbits) if isinstance(operation, Measure) else set()
        if operation.condition is not None:
            clbits |= operation.condition.clbits
        if clbits and max(clbits) >= self.n_clbits:
            raise CircuitError(f"operation {position} ({operation.name!r}) uses classical bit {max(clbits)}, "
                               f"but the circuit has {self.n_clbits} classical bits; raise n_clbits")

    def __len__(self) -> int:
        return len(self.gates)

    def __iter__(self):
        return iter(self.gates)

    @property
    def is_dynamic(self) -> bool:
        """True when the circuit measures or resets mid-circuit, conditions a gate or saves a value
        (circuits.save)."""
        return any(not isinstance(op, Gate) or op.condition is not None for op in self.gates)

    def dense_gates(self) -> list:
        """The Gates among the operations, in order (conditioned ones included)."""
        return [op for op in self.gates if isinstance(op, Gate)]

    def max_gate_size(self) -> int:
        return max((g.n_targets for g in self.dense_gates()), default=0)


def _sequence(values, what: str) -> tuple:
    try:
        return tuple(values)
    except TypeError:
        raise CircuitError(f"{what} must be a sequence, got {values!r}") from None


def _registers(registers) -> tuple:
    """((name, size), ...) with string names and integer sizes >= 0 (Qiskit allows empty registers)."""
    checked = []
    for register in _sequence(registers, "clbit_registers"):
        if not (isinstance(register, (tuple, list)) and len(register) == 2 and isinstance(register[0], str)):
            raise CircuitError(f"clbit_registers holds (name, size) pairs with a string name, got {register!r}")
        size = integer(register[1], f"the size of classical register {register[0]!r}")
        if size < 0:
            raise CircuitError(f"classical register {register[0]!r} has a negative size {size}")
        checked.append((register[0], size))
    return tuple(checked)
