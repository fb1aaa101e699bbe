"""Non-unitary circuit operations beside dense gates: measurement, reset, classical conditions
and the iteration limit of an unrolled while loop.

Classical bits are numbered 0..n_clbits-1 in Qiskit's order (qc.clbits). A register value is
the integer whose bit j is the j-th classical bit listed; classical strings are written as Qiskit
writes them: classical bit 0 rightmost, registers separated by spaces, the last register leftmost.
"""
from dataclasses import dataclass

import numpy as np

from .errors import CircuitError
from .indices import distinct_indices, integer


def register_value(bits: int, clbits) -> int:
    """The integer whose bit j is classical bit clbits[j] of `bits` (bit c of `bits` = clbit c)."""
    return sum(((bits >> c) & 1) << j for j, c in enumerate(clbits))


@dataclass(frozen=True)
class ClbitTest:
    """One comparison: register_value(bits, clbits) == value (equal=True) or != value."""

    clbits: tuple
    value: int
    equal: bool = True

    def __post_init__(self):
        clbits = distinct_indices(self.clbits, "a condition's classical bits")
        value = integer(self.value, "a condition's value")
        if not 0 <= value < (1 << len(clbits)):
            raise CircuitError(f"condition value {value} does not fit in {len(clbits)} classical bit(s)")
        object.__setattr__(self, "clbits", clbits)
        object.__setattr__(self, "value", value)
        if not isinstance(self.equal, (bool, np.bool_)):
            raise CircuitError(f"a condition's 'equal' must be True or False, got {self.equal!r}")
        object.__setattr__(self, "equal", bool(self.equal))

    def holds(self, bits: int) -> bool:
        return (register_value(bits, self.clbits) == self.value) == self.equal

    def negated(self) -> "ClbitTest":
        return ClbitTest(self.clbits, self.value, not self.equal)


@dataclass(frozen=True)
class Condition:
    """A classical condition: true when every test holds (Qiskit's if_test and the QASM 2 `if`
    each give one test; nested ifs give one test per level)."""

    tests: tuple

    def __post_init__(self):
        tests = tuple(self.tests)
        if not tests or not all(isinstance(t, ClbitTest) for t in tests):
            raise CircuitError(f"a Condition needs one or more ClbitTest, got {self.tests!r}")
        object.__setattr__(self, "tests", tests)

    @classmethod
    def equals(cls, clbits, value: int) -> "Condition":
        """Register (clbits, bit j = clbits[j]) == value."""
        return cls((ClbitTest(tuple(clbits), value),))

    def holds(self, bits: int) -> bool:
        return all(test.holds(bits) for test in self.tests)

    def also(self, *tests) -> "Condition":
        """This condition and every ClbitTest in `tests`."""
        return Condition(self.tests + tests)

    @property
    def clbits(self) -> frozenset:
        """Every classical bit the condition reads."""
        return frozenset(c for test in self.tests for c in test.clbits)


def checked_condition(condition, what: str):
    if condition is not None and not isinstance(condition, Condition):
        raise CircuitError(f"{what}: condition must be a circuits.Condition or None, got {type(condition).__name__}")
    return condition


@dataclass(frozen=True)
class Measure:
    """Measure `qubits` jointly in the computational basis; qubit qubits[j] is written to
    classical bit clbits[j]. condition: run only when it holds (None: always)."""

    qubits: tuple
    clbits: tuple
    condition: Condition = None
    name: str = "measure"

    def __post_init__(self):
        qubits = distinct_indices(self.qubits, "measured qubits")
        clbits = distinct_indices(self.clbits, "classical bits of a measurement")
        if len(qubits) != len(clbits):
            raise CircuitError(f"a measurement of {len(qubits)} qubit(s) needs as many classical bits, got {clbits}")
        object.__setattr__(self, "qubits", qubits)
        object.__setattr__(self, "clbits", clbits)
        checked_condition(self.condition, "measure")


@dataclass(frozen=True)
class Reset:
    """Return `qubits` to |0>: measure them, then flip those that read 1. condition as for Measure."""

    qubits: tuple
    condition: Condition = None
    name: str = "reset"

    def __post_init__(self):
        object.__setattr__(self, "qubits", distinct_indices(self.qubits, "reset qubits"))
        checked_condition(self.condition, "reset")


@dataclass(frozen=True)
class LoopLimit:
    """The end of a while loop unrolled to `limit` iterations: when `condition` (the loop's own,
    with its enclosing conditions) still holds here, the loop would run again, and the run stops
    with an error rather than give a wrong answer. It acts on no qubits and writes no bit.
    where: the loop's place in its source circuit, for the message."""

    condition: Condition
    limit: int
    where: str
    name: str = "while_loop_limit"
    qubits: tuple = ()

    def __post_init__(self):
        if not isinstance(self.condition, Condition):
            raise CircuitError(f"a LoopLimit needs the loop's circuits.Condition, got {self.condition!r}")
        object.__setattr__(self, "limit", integer(self.limit, "a while loop's iteration limit"))
        if self.qubits != ():
            raise CircuitError(f"a LoopLimit acts on no qubits, got {self.qubits!r}")

    def message(self) -> str:
        """The one-line error for a run that reaches this point with the condition true."""
        return (f"the while loop {self.where} still wants to run after {self.limit} iterations (the limit); "
                "raise max_while_iterations if it needs more, or check that its body can make its condition false")


def format_clbits(bits: int, n_clbits: int, registers=()) -> str:
    """Classical bits as Qiskit prints them: bit 0 rightmost; registers ((name, size), ... in
    classical-bit order, covering all bits) separated by spaces, the last register leftmost.
    Empty when there are no classical bits."""
    text = format(bits, f"0{n_clbits}b") if n_clbits else ""
    if not registers:
        return text
    parts, start = [], 0
    for _name, size in reversed(registers):
        parts.append(text[start : start + size])
        start += size
    return " ".join(parts)
