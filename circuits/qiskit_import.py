"""Qiskit circuits and OpenQASM programs as circuits.Circuit.

Conventions: qubit i of the Circuit is qc.qubits[i] (several quantum registers are flattened in
that order) and classical bit i is qc.clbits[i]; a gate keeps Qiskit's qargs order, and Qiskit's
Operator convention (matrix index bit j = qargs[j], little endian) is ours (design brief
section 2), so matrices are taken as they are.

Measurements: a circuit whose only non-unitary operations are final measurements (nothing but
barriers, delays and identities act on a qubit after it is measured; each qubit and classical bit
measured once) keeps today's form: Circuit.measured lists the measured qubits ordered by the
index of their classical bit; classical bits never written are left out (they read 0), and
`from_qiskit_with_clbits` also returns the classical-bit indices.

Dynamic circuits (mid-circuit measurement, reset, if_test / QASM `if`, with else branches and
nesting, and box) become operations (circuits.operations): adjacent measurements (and adjacent
resets) merge into one joint operation, and every operation inside an if body carries the
condition of its enclosing ifs. Conditions may be (clbit or register, value) pairs or the
classical expressions Qiskit builds from them: equal, not_equal, logic_not, logic_and and a bare
clbit. for_loop is unrolled, switch becomes conditioned operations and while_loop becomes
max_while_iterations conditioned copies of its body ending in a circuits.LoopLimit
(circuits.qiskit_control_flow); a measurement inside an if (or while) body writing a bit that
the condition reads is refused unless it is the body's last operation. initialize becomes resets
(dropped on qubits nothing has touched yet) and its state preparation, as Qiskit defines it.
Aer's save instructions become circuits.Save operations.

qiskit is imported inside the functions, so this module loads where qiskit is not installed.
"""
import cmath
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from .errors import CircuitError
from .gate import Circuit, Gate
from .indices import integer, qubit_count
from .operations import Condition, LoopLimit, Measure, Reset
from .qiskit_control_flow import condition_tests, for_loop, switch, while_loop
from .save import Save, save_from_qiskit
from .qasm3_import import load_qasm3
from .qasm_source import load_qasm2, qasm_source, qasm_version

#: Composite instructions wider than this are expanded into their definitions rather than taken
#: as one dense 2^d x 2^d matrix (a QFT on 28 qubits must become its gates). A UnitaryGate is
#: always taken as given: its definition is an inexact synthesis.
DENSE_MATRIX_MAX_QUBITS = 5
#: A while loop is unrolled to this many iterations by default: a trajectory or shot branch that
#: would run more stops with an error (circuits.LoopLimit). Raise it with max_while_iterations.
MAX_WHILE_ITERATIONS = 100

_NO_OP_NAMES = frozenset({"barrier", "delay", "id"})


def from_qiskit(qc, *, max_while_iterations: int = MAX_WHILE_ITERATIONS) -> Circuit:
    """The qiskit.QuantumCircuit `qc` as a Circuit: its final state equals Statevector(qc)
    exactly, global phase included, when qc is unitary; mid-circuit measurements, resets and
    classical control become dynamic operations (see the module docstring). A while loop may run
    at most max_while_iterations (>= 1) times per trajectory. Raises CircuitError for what cannot
    run (unbound parameters, break_loop, ...), naming the instruction and its position in
    qc.data."""
    return from_qiskit_with_clbits(qc, max_while_iterations=max_while_iterations)[0]


def from_qiskit_with_clbits(qc, *, max_while_iterations: int = MAX_WHILE_ITERATIONS) -> tuple:
    """(Circuit, clbits): clbits[j] is the index in qc.clbits that Circuit.measured[j] is written
    to; empty for a dynamic circuit, whose Measure operations name their classical bits."""
    from qiskit.circuit import QuantumCircuit

    if not isinstance(qc, QuantumCircuit):
        raise CircuitError(f"from_qiskit takes a qiskit QuantumCircuit, got {type(qc).__name__}")
    if qc.num_qubits < 1:
        raise CircuitError("the Qiskit circuit has no qubits; add a QuantumRegister")
    qubit_count(qc.num_qubits, "the Qiskit circuit's number of qubits")  # before converting its gates
    if integer(max_while_iterations, "max_while_iterations") < 1:
        raise CircuitError(f"max_while_iterations must be >= 1, got {max_while_iterations}")
    walk = _Walk(global_phase=_bound_phase(qc.global_phase, "the circuit's global phase"),
                 max_while_iterations=int(max_while_iterations))
    walk.block(qc, list(range(qc.num_qubits)), list(range(qc.num_clbits)), None, "")
    classical = {"n_clbits": qc.num_clbits, "clbit_registers": _register_layout(qc)}
    final = _final_measurements(walk.operations)
    if final is None:
        return Circuit(qc.num_qubits, walk.dynamic_operations(), **classical), ()
    measured, clbits = final
    gates = [op for op in walk.operations if isinstance(op, Gate)]
    return Circuit(qc.num_qubits, walk.with_phase(gates), measured, **classical), clbits


def from_qasm(path_or_text) -> Circuit:
    """A Circuit from an OpenQASM 2 or 3 program, given as a file path or as the program text.

    The version comes from the `OPENQASM x.y;` header. OpenQASM 2 is read by qiskit.qasm2 with
    the legacy custom instructions (so gates Qiskit used to export map back to its own gates;
    includes resolve next to the file); OpenQASM 3 by the dependency qiskit-qasm3-import
    (circuits.qasm3_import: `qubit[n]` registers, gate definitions, parameters, modifiers,
    gphase; only the standard include "stdgates.inc"). Measurement, reset and `if` are read as
    from_qiskit reads them. Errors, syntax errors included, are one-line CircuitErrors.
    """
    text, include_dir = qasm_source(path_or_text)
    version = qasm_version(text)
    if version == 2:
        return from_qiskit(load_qasm2(text, include_dir))
    if version == 3:
        return from_qiskit(load_qasm3(text))
    raise CircuitError(f"OPENQASM version {version} is not supported; use OpenQASM 2 or 3")


def _register_layout(qc) -> tuple:
    """((name, size), ...) when qc's classical registers lay out its classical bits in order (as
    Qiskit's result formatting assumes), else ()."""
    bits = [bit for register in qc.cregs for bit in register]
    if bits != list(qc.clbits):
        return ()
    return tuple((register.name, register.size) for register in qc.cregs)


def _final_measurements(operations):
    """(measured qubits, their clbits) ordered by clbit when the only non-gates are measurements
    that nothing follows on their qubits, each qubit and classical bit measured once; else None."""
    measured_into = {}  # clbit -> qubit
    measured_qubits = set()
    for op in operations:
        if op.condition is not None or isinstance(op, (Reset, Save)):
            return None
        qubits = op.targets if isinstance(op, Gate) else op.qubits
        if measured_qubits.intersection(qubits):
            return None
        if isinstance(op, Measure):
            if measured_into.keys() & set(op.clbits):
                return None
            measured_into.update(zip(op.clbits, op.qubits))
            measured_qubits.update(op.qubits)
    final = sorted(measured_into.items())
    return tuple(qubit for _, qubit in final), tuple(clbit for clbit, _ in final)


# -- walking a QuantumCircuit ----------------------------------------------------------------
@dataclass
class _Walk:
    """Operations and global phase collected from a circuit, recursively through definitions
    and control-flow bodies. Qubit and classical-bit maps turn a block's own bit positions into
    the top-level circuit's indices."""

    global_phase: float
    max_while_iterations: int = MAX_WHILE_ITERATIONS
    operations: list = field(default_factory=list)
    # per open if/switch: (clbits its condition reads, where, [(index, clbit, where) of measurements writing them])
    read_by_enclosing_ifs: list = field(default_factory=list)

    def block(self, circuit, qubit_of, clbit_of, condition, context) -> None:
        """Walk circuit.data; qubit_of[i] / clbit_of[i]: top-level index of circuit's i-th bit."""
        for position, instruction in enumerate(circuit.data):
            operation = instruction.operation
            where = f"'{operation.name}' at position {position}{context}"
            qubits = [qubit_of[circuit.find_bit(q).index] for q in instruction.qubits]
            clbits = [clbit_of[circuit.find_bit(c).index] for c in instruction.clbits]
            self.instruction(operation, qubits, clbits, condition, where, (circuit, clbit_of))

    def instruction(self, operation, qubits, clbits, condition, where, scope) -> None:
        from qiskit.circuit import BoxOp, ControlFlowOp, ForLoopOp, IfElseOp, SwitchCaseOp, WhileLoopOp
        from qiskit.circuit import Measure as QiskitMeasure
        from qiskit.circuit import Reset as QiskitReset

        if operation.name in _NO_OP_NAMES:
            return
        if operation.name.startswith("save_"):
            self.operations.append(save_from_qiskit(operation, qubits, condition, where))
        elif isinstance(operation, QiskitMeasure):
            self._note_write(clbits[0], where)
            self.operations.append(Measure((qubits[0],), (clbits[0],), condition))
        elif isinstance(operation, QiskitReset):
            if condition is not None or self._touched(qubits[0]):  # a reset of an untouched qubit does nothing
                self.operations.append(Reset((qubits[0],), condition))
        elif operation.name == "initialize":  # resets, then a state preparation
            self.block(operation.definition, qubits, clbits, condition, f" inside {where}")
        elif isinstance(operation, IfElseOp):
            self._if_else(operation, qubits, clbits, condition, where, scope)
        elif isinstance(operation, BoxOp):
            self._body(operation.blocks[0], qubits, clbits, condition, where)
        elif isinstance(operation, ForLoopOp):
            for_loop(self, operation, qubits, clbits, condition, where)
        elif isinstance(operation, SwitchCaseOp):
            switch(self, operation, qubits, clbits, condition, where, scope)
        elif isinstance(operation, WhileLoopOp):
            while_loop(self, operation, qubits, clbits, condition, where, scope, self.max_while_iterations)
        elif isinstance(operation, ControlFlowOp):
            raise CircuitError(f"instruction {where} is classical control flow that is not supported; "
                               "if/else (if_test, QASM 'if'), for, while, switch and box are")
        elif clbits and getattr(operation, "definition", None) is None:
            raise CircuitError(f"instruction {where} acts on classical bits and is not a measurement, "
                               "if/else or a subcircuit; not supported")
        else:
            self.unitary(operation, qubits, clbits, condition, where)

    def unitary(self, operation, qubits, clbits, condition, where) -> None:
        """Append the gates of an operation acting on `qubits` (circuit indices); subcircuits with
        classical bits, measurements or resets are walked like the circuit itself."""
        _reject_non_unitary(operation, where)
        _reject_unbound(operation, where)
        _reject_non_finite(operation, where)
        if operation.num_qubits == 0:
            self._phase(_global_phase_gate_angle(operation, where), condition, qubits)
            return
        if clbits or _expand_definition(operation):
            definition = operation.definition
            self._phase(_bound_phase(definition.global_phase, f"the definition of {where}"), condition, qubits)
            self.block(definition, qubits, clbits, condition, f" inside {where}")
            return
        matrix = _matrix(operation, where)
        try:
            gate = Gate(tuple(qubits), matrix, name=operation.name, condition=condition)
        except CircuitError as exc:
            raise CircuitError(f"instruction {where}: {exc}") from None
        self.operations.append(gate)

    def _if_else(self, operation, qubits, clbits, condition, where, scope) -> None:
        tests = condition_tests(operation.condition, *scope, where)
        if len(operation.blocks) > 1 and len(tests) > 1:
            raise CircuitError(f"instruction {where} has an else branch under a condition joined by 'and'; "
                               "not supported (nest two ifs instead)")
        self.open_condition(frozenset(c for test in tests for c in test.clbits), where)
        for body, body_tests in zip(operation.blocks, (tests, (tests[0].negated(),))):
            inside = condition.also(*body_tests) if condition is not None else Condition(body_tests)
            self._body(body, qubits, clbits, inside, where)
        self.close_condition()

    def _body(self, body, qubits, clbits, condition, where) -> None:
        """A control-flow block: its global phase and operations, all under `condition`."""
        self._phase(_bound_phase(body.global_phase, f"a block of {where}"), condition, qubits)
        self.block(body, qubits, clbits, condition, f" inside {where}")

    def open_condition(self, clbits: frozenset, where: str) -> None:
        """Start an if/else or switch whose condition reads `clbits`."""
        self.read_by_enclosing_ifs.append((clbits, where, []))

    def close_condition(self) -> None:
        """End it: a measurement inside that wrote a bit the condition reads must be its last
        operation (later ones would see the condition change, as would an else branch)."""
        _, if_where, writes = self.read_by_enclosing_ifs.pop()
        for index, clbit, where in writes:
            if index != len(self.operations) - 1:
                raise CircuitError(f"instruction {where} writes classical bit {clbit}, which the condition of "
                                   f"{if_where} reads, and operations under that condition follow it; not supported "
                                   "(measure into another classical bit, or measure last in the block)")

    def _note_write(self, clbit, where) -> None:
        for read, _, writes in self.read_by_enclosing_ifs:
            if clbit in read:
                writes.append((len(self.operations), clbit, where))

    def _touched(self, qubit) -> bool:
        """Whether an operation so far acts on `qubit` (before that it is |0>)."""
        return any(qubit in (op.targets if isinstance(op, Gate) else op.qubits) for op in self.operations
                   if not isinstance(op, Save))

    def _phase(self, phase, condition, qubits) -> None:
        """A global phase: folded into the circuit's, or a phase gate when it is conditioned."""
        if phase == 0.0:
            return
        if condition is None:
            self.global_phase += phase
            return
        target = (qubits[0],) if qubits else (0,)
        self.operations.append(Gate(target, np.exp(1j * phase) * np.eye(2), name="global_phase",
                                    condition=condition))

    def with_phase(self, operations) -> list:
        """The operations, with exp(i * global phase) folded into the first unconditioned gate
        (or into a 1-qubit phase gate put first when there is none), so that states match
        Qiskit's exactly."""
        factor = np.exp(1j * self.global_phase)
        if factor == 1.0:
            return list(operations)
        for index, op in enumerate(operations):
            if isinstance(op, Gate) and op.condition is None:
                phased = Gate(op.targets, factor * op.matrix, name=op.name)
                return operations[:index] + [phased] + operations[index + 1:]
        return [Gate((0,), factor * np.eye(2), name="global_phase")] + list(operations)

    def dynamic_operations(self) -> list:
        """The operations with runs of adjacent measurements (and of adjacent resets) merged into
        joint ones, and the global phase folded in."""
        merged = []
        for op in self.operations:
            joint = _merged(merged[-1], op) if merged else None
            if joint is None:
                merged.append(op)
            else:
                merged[-1] = joint
        return self.with_phase(merged)


def _merged(first, second):
    """One joint Measure (or Reset) doing first then second, or None when they cannot merge
    (other kinds, other conditions, a shared qubit or classical bit, or a bit the condition reads)."""
    if type(first) is not type(second) or isinstance(first, (Gate, Save, LoopLimit)) \
            or first.condition != second.condition:
        return None
    if set(first.qubits) & set(second.qubits):
        return None
    if isinstance(first, Reset):
        return Reset(first.qubits + second.qubits, first.condition)
    clbits = first.clbits + second.clbits
    read = first.condition.clbits if first.condition is not None else frozenset()
    if len(set(clbits)) != len(clbits) or read & set(clbits):
        return None
    return Measure(first.qubits + second.qubits, clbits, first.condition)


def _reject_non_unitary(operation, where) -> None:
    if getattr(operation, "condition", None) is not None:
        raise CircuitError(f"instruction {where} is classically conditioned (c_if), which is not supported")
    if operation.name == "store":
        raise CircuitError(f"instruction {where} is not unitary ({operation.name}) and not a measurement, "
                           "reset or condition; not supported")


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


def _reject_non_finite(operation, where) -> None:
    """An infinite or NaN angle has no matrix; Qiskit's own error for it ('math domain error')
    names no instruction."""
    for value in getattr(operation, "params", ()):
        if isinstance(value, numbers.Number) and not cmath.isfinite(value):
            raise CircuitError(f"instruction {where} has a non-finite parameter {value!r}; give finite angles")


def _bound_phase(phase, what) -> float:
    from qiskit.circuit import ParameterExpression

    if isinstance(phase, ParameterExpression) and phase.parameters:
        names = ", ".join(sorted(p.name for p in phase.parameters))
        raise CircuitError(f"{what} has unbound parameters {names}; bind them with qc.assign_parameters(...)")
    phase = float(phase)
    if not math.isfinite(phase):
        raise CircuitError(f"{what} is {phase!r}; a phase must be a finite angle")
    return phase


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
        raise CircuitError(f"instruction {where} has no unitary matrix ({message}); only unitary gates, "
                           "measurements, resets and if/else are supported") from None
