"""Qiskit circuits and OpenQASM programs as circuits.Circuit.

Conventions: qubit i of the Circuit is qc.qubits[i] (several quantum registers are flattened in
that order); a gate keeps Qiskit's qargs order, and Qiskit's Operator convention (matrix index
bit j = qargs[j], little endian) is ours (design brief section 2), so matrices are taken as they are.

Measurements: only final ones are accepted (nothing but barriers, delays and identities may act
on a qubit after it is measured). Circuit.measured lists the measured qubits ordered by the
index of their classical bit in qc.clbits; classical bits that are never written are left out
(they would always read 0). `from_qiskit_with_clbits` also returns those classical-bit indices.

qiskit is imported inside the functions, so this module loads where qiskit is not installed.
"""
import importlib.util
import os
import re
from dataclasses import dataclass, field

import numpy as np

from .errors import CircuitError
from .gate import Circuit, Gate

#: Composite instructions wider than this are expanded into their definitions rather than taken
#: as one dense 2^d x 2^d matrix (a QFT on 28 qubits must become its gates). A UnitaryGate is
#: always taken as given: its definition is an inexact synthesis.
DENSE_MATRIX_MAX_QUBITS = 5

_NO_OP_NAMES = frozenset({"barrier", "delay", "id"})
_QASM_HEADER = re.compile(r"OPENQASM\s+(\d+)(?:\.\d+)?\s*;")
_QASM_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def from_qiskit(qc) -> Circuit:
    """The qiskit.QuantumCircuit `qc` as a Circuit whose final state equals Statevector(qc)
    exactly, global phase included. Raises CircuitError for anything non-unitary (mid-circuit
    measurement, reset, classical control, unbound parameters), naming the instruction and its
    position in qc.data."""
    return from_qiskit_with_clbits(qc)[0]


def from_qiskit_with_clbits(qc) -> tuple:
    """(Circuit, clbits): clbits[j] is the index in qc.clbits that Circuit.measured[j] is written to."""
    from qiskit.circuit import QuantumCircuit

    if not isinstance(qc, QuantumCircuit):
        raise CircuitError(f"from_qiskit takes a qiskit QuantumCircuit, got {type(qc).__name__}")
    if qc.num_qubits < 1:
        raise CircuitError("the Qiskit circuit has no qubits; add a QuantumRegister")
    walk = _Walk(global_phase=_bound_phase(qc.global_phase, "the circuit's global phase"))
    walk.top_level(qc)
    final = sorted(walk.measured_into.items())
    measured = [qubit for _clbit, (qubit, _position) in final]
    return Circuit(qc.num_qubits, walk.gates_with_phase(), measured), tuple(clbit for clbit, _ in final)


def from_qasm(path_or_text) -> Circuit:
    """A Circuit from an OpenQASM 2 or 3 program, given as a file path or as the program text.

    The version comes from the `OPENQASM x.y;` header. OpenQASM 2 is read by qiskit.qasm2 with
    the legacy custom instructions (so gates Qiskit used to export map back to its own gates;
    includes resolve next to the file); OpenQASM 3 by qiskit.qasm3, which needs the optional
    package qiskit_qasm3_import.
    """
    text, include_dir = _qasm_source(path_or_text)
    version = _qasm_version(text)
    if version == 2:
        return from_qiskit(_load_qasm2(text, include_dir))
    if version == 3:
        return from_qiskit(_load_qasm3(text))
    raise CircuitError(f"OPENQASM version {version} is not supported; use OpenQASM 2 or 3")


# -- walking a QuantumCircuit ----------------------------------------------------------------
@dataclass
class _Walk:
    """Gates, global phase and final measurements collected from a circuit, recursively."""

    global_phase: float
    gates: list = field(default_factory=list)
    measured_into: dict = field(default_factory=dict)  # clbit -> (qubit, position of the measure)
    measure_of_qubit: dict = field(default_factory=dict)  # qubit -> position of its measure

    def top_level(self, qc) -> None:
        from qiskit.circuit import Measure

        for position, instruction in enumerate(qc.data):
            operation = instruction.operation
            qubits = [qc.find_bit(q).index for q in instruction.qubits]
            where = f"'{operation.name}' at position {position}"
            if operation.name in _NO_OP_NAMES:
                continue
            self._check_not_after_measure(qubits, where)
            if isinstance(operation, Measure):
                clbit = qc.find_bit(instruction.clbits[0]).index
                self._record_measure(qubits[0], clbit, position, where)
                continue
            _reject_non_unitary(operation, where)
            if instruction.clbits:
                raise CircuitError(
                    f"instruction {where} acts on classical bits; only final 'measure' instructions "
                    "are supported (no classical control or other non-unitary operations)"
                )
            self.unitary(operation, qubits, where)

    def unitary(self, operation, qubits, where) -> None:
        """Append the gates of a unitary operation acting on `qubits` (circuit indices)."""
        _reject_non_unitary(operation, where)
        if operation.name in _NO_OP_NAMES:
            return
        _reject_unbound(operation, where)
        if operation.num_qubits == 0:
            self.global_phase += _global_phase_gate_angle(operation, where)
            return
        if _expand_definition(operation):
            self._definition(operation, qubits, where)
            return
        matrix = _matrix(operation, where)
        try:
            gate = Gate(tuple(qubits), matrix, name=operation.name)
        except CircuitError as exc:
            raise CircuitError(f"instruction {where}: {exc}") from None
        self.gates.append(gate)

    def _definition(self, operation, qubits, where) -> None:
        definition = operation.definition
        self.global_phase += _bound_phase(definition.global_phase, f"the definition of {where}")
        for position, instruction in enumerate(definition.data):
            inner = [qubits[definition.find_bit(q).index] for q in instruction.qubits]
            inner_where = f"'{instruction.operation.name}' at position {position} inside {where}"
            if instruction.clbits:
                raise CircuitError(f"instruction {inner_where} acts on classical bits; only final "
                                   "top-level 'measure' instructions are supported")
            self.unitary(instruction.operation, inner, inner_where)

    def _record_measure(self, qubit, clbit, position, where) -> None:
        if clbit in self.measured_into:
            earlier = self.measured_into[clbit][1]
            raise CircuitError(
                f"instruction {where} writes classical bit {clbit}, already written by the measure at "
                f"position {earlier}; measure each classical bit once"
            )
        self.measured_into[clbit] = (qubit, position)
        self.measure_of_qubit[qubit] = position

    def _check_not_after_measure(self, qubits, where) -> None:
        for qubit in qubits:
            if qubit in self.measure_of_qubit:
                raise CircuitError(
                    f"instruction {where} acts on qubit {qubit} after its measurement at position "
                    f"{self.measure_of_qubit[qubit]}: mid-circuit measurement is not supported, "
                    "only final measurements (move the measure to the end)"
                )

    def gates_with_phase(self) -> list:
        """The gates, with exp(i * global phase) folded into the first one (or into a 1-qubit
        phase gate when there is none) so that the state matches Qiskit's exactly."""
        factor = np.exp(1j * self.global_phase)
        if factor == 1.0:
            return list(self.gates)
        if not self.gates:
            return [Gate((0,), factor * np.eye(2), name="global_phase")]
        first = self.gates[0]
        return [Gate(first.targets, factor * first.matrix, name=first.name)] + self.gates[1:]


def _reject_non_unitary(operation, where) -> None:
    from qiskit.circuit import ControlFlowOp

    if isinstance(operation, ControlFlowOp):
        raise CircuitError(f"instruction {where} is classical control flow, which is not supported; "
                           "only unitary gates and final measurements are")
    if getattr(operation, "condition", None) is not None:
        raise CircuitError(f"instruction {where} is classically conditioned (c_if), which is not supported")
    if operation.name in ("reset", "measure", "initialize", "store"):
        raise CircuitError(f"instruction {where} is not unitary ({operation.name}); only unitary gates "
                           "and final top-level measurements are supported")


def _reject_unbound(operation, where) -> None:
    from qiskit.circuit import ParameterExpression

    names = sorted({
        parameter.name
        for value in getattr(operation, "params", ())
        if isinstance(value, ParameterExpression)
        for parameter in value.parameters
    })
    if names:
        raise CircuitError(f"instruction {where} has unbound parameters {', '.join(names)}; "
                           "bind them first with qc.assign_parameters(...)")


def _bound_phase(phase, what) -> float:
    from qiskit.circuit import ParameterExpression

    if isinstance(phase, ParameterExpression) and phase.parameters:
        names = ", ".join(sorted(p.name for p in phase.parameters))
        raise CircuitError(f"{what} has unbound parameters {names}; bind them with qc.assign_parameters(...)")
    return float(phase)


def _global_phase_gate_angle(operation, where) -> float:
    if operation.name != "global_phase":
        raise CircuitError(f"instruction {where} acts on no qubits and is not a global phase; not supported")
    return _bound_phase(operation.params[0], f"instruction {where}")


def _expand_definition(operation) -> bool:
    """Wide composite instructions become their gates; so do composites of any width without a
    matrix of their own (subcircuits from qc.to_gate() or qc.to_instruction())."""
    from qiskit.circuit import Gate as QiskitGate
    from qiskit.circuit.library import UnitaryGate

    if isinstance(operation, UnitaryGate) or getattr(operation, "definition", None) is None:
        return False
    has_matrix = isinstance(operation, QiskitGate) and hasattr(operation, "__array__")
    return operation.num_qubits > DENSE_MATRIX_MAX_QUBITS or not has_matrix


def _matrix(operation, where) -> np.ndarray:
    from qiskit.exceptions import QiskitError
    from qiskit.quantum_info import Operator

    try:
        if hasattr(operation, "to_matrix") and hasattr(operation, "__array__"):
            return np.asarray(operation.to_matrix(), dtype=np.complex128)
        return np.asarray(Operator(operation).data, dtype=np.complex128)
    except QiskitError as exc:
        message = str(exc).strip("'\" ")
        raise CircuitError(f"instruction {where} has no unitary matrix ({message}); only unitary gates "
                           "and final measurements are supported") from None


# -- OpenQASM ----------------------------------------------------------------------------------
def _qasm_source(path_or_text) -> tuple:
    """(program text, directory for includes or None)."""
    if isinstance(path_or_text, os.PathLike):
        path_or_text = os.fspath(path_or_text)
    if not isinstance(path_or_text, str):
        raise CircuitError(f"from_qasm takes a file path or OpenQASM text, got {type(path_or_text).__name__}")
    if "OPENQASM" not in path_or_text and os.path.isfile(path_or_text):
        try:
            with open(path_or_text, encoding="utf-8") as source:
                return source.read(), os.path.dirname(os.path.abspath(path_or_text))
        except (OSError, UnicodeDecodeError) as exc:
            raise CircuitError(f"cannot read QASM file {path_or_text!r}: {exc}") from None
    if "OPENQASM" in path_or_text or "\n" in path_or_text or ";" in path_or_text:
        return path_or_text, None
    raise CircuitError(f"{path_or_text!r} is neither an existing file nor OpenQASM text "
                       "(which starts with an 'OPENQASM 2.0;' or 'OPENQASM 3.0;' header)")


def _qasm_version(text: str) -> int:
    match = _QASM_HEADER.match(_QASM_COMMENTS.sub("", text).lstrip())
    if match is None:
        raise CircuitError("the QASM program does not start with an OPENQASM version header; "
                           "add 'OPENQASM 2.0;' or 'OPENQASM 3.0;' as its first statement")
    return int(match.group(1))


def _load_qasm2(text: str, include_dir):
    from qiskit import qasm2

    include_path = (include_dir,) if include_dir else (".",)
    try:
        return qasm2.loads(text, include_path=include_path, custom_instructions=qasm2.LEGACY_CUSTOM_INSTRUCTIONS)
    except qasm2.QASM2ParseError as exc:
        raise CircuitError(f"OpenQASM 2 parse error: {_one_line(exc)}") from None


def _load_qasm3(text: str):
    if importlib.util.find_spec("qiskit_qasm3_import") is None:
        raise CircuitError("reading OpenQASM 3 needs the package qiskit_qasm3_import "
                           "(pip install qiskit-qasm3-import), or convert the program to OpenQASM 2")
    from qiskit import qasm3

    try:
        return qasm3.loads(text)
    except qasm3.QASM3ImporterError as exc:
        raise CircuitError(f"OpenQASM 3 import error: {_one_line(exc)}") from None


def _one_line(exc) -> str:
    return " ".join(str(exc).split())
