"""Gates and circuits: the data the engine consumes.

Conventions (design brief section 2, Qiskit's): amplitude index bit q is qubit q; a gate on
targets (t0, ..., t_{d-1}) is a 2^d x 2^d matrix whose row/column index bit j is qubit t_j.
"""
from dataclasses import dataclass, field

import numpy as np

from .errors import CircuitError

UNITARITY_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Gate:
    """A dense gate. targets: distinct qubit indices; matrix: (2^d, 2^d) complex128 unitary."""

    targets: tuple
    matrix: np.ndarray
    name: str = "unitary"

    def __post_init__(self):
        try:
            targets = tuple(int(t) for t in self.targets)
        except (TypeError, ValueError):
            raise CircuitError(f"gate {self.name!r}: targets must be integers, got {self.targets!r}") from None
        if not targets:
            raise CircuitError(f"gate {self.name!r}: needs at least one target qubit")
        if len(set(targets)) != len(targets):
            raise CircuitError(f"gate {self.name!r}: duplicate target qubits in {targets}")
        if min(targets) < 0:
            raise CircuitError(f"gate {self.name!r}: negative qubit index in {targets}")
        matrix = np.array(self.matrix, dtype=np.complex128)
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
        matrix.setflags(write=False)
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "matrix", matrix)

    @property
    def n_targets(self) -> int:
        return len(self.targets)


@dataclass(frozen=True)
class Circuit:
    """An ordered list of gates on n_qubits qubits. measured: qubits measured at the end
    (in the order of the classical bits), empty when none."""

    n_qubits: int
    gates: tuple
    measured: tuple = field(default=())

    def __post_init__(self):
        if int(self.n_qubits) < 1:
            raise CircuitError(f"a circuit needs at least 1 qubit, got {self.n_qubits}")
        object.__setattr__(self, "n_qubits", int(self.n_qubits))
        object.__setattr__(self, "gates", tuple(self.gates))
        object.__setattr__(self, "measured", tuple(int(q) for q in self.measured))
        for position, gate in enumerate(self.gates):
            if not isinstance(gate, Gate):
                raise CircuitError(f"gate {position} is a {type(gate).__name__}, not a circuits.Gate")
            if max(gate.targets) >= self.n_qubits:
                raise CircuitError(
                    f"gate {position} ({gate.name!r}) targets qubit {max(gate.targets)}, "
                    f"but the circuit has only {self.n_qubits} qubits (0..{self.n_qubits - 1})"
                )
        for q in self.measured:
            if not 0 <= q < self.n_qubits:
                raise CircuitError(f"measured qubit {q} is outside 0..{self.n_qubits - 1}")

    def __len__(self) -> int:
        return len(self.gates)

    def __iter__(self):
        return iter(self.gates)

    def max_gate_size(self) -> int:
        return max((g.n_targets for g in self.gates), default=0)
