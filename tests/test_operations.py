"""circuits.operations and dynamic Circuits: validation with clear errors, the meaning of
conditions, and classical strings formatted exactly as Qiskit's result postprocessing does."""
import numpy as np
import pytest
from qiskit.result.postprocess import format_counts_memory

from circuits import Circuit, CircuitError, ClbitTest, Condition, Gate, LoopLimit, Measure, Reset, format_clbits

X = np.array([[0, 1], [1, 0]])


def test_tests_and_conditions_read_register_values():
    # bits: clbit 0 = 1, clbit 1 = 0, clbit 2 = 1
    bits = 0b101
    assert ClbitTest((0, 2), 3).holds(bits)
    assert ClbitTest((2, 1), 1).holds(bits)          # clbit 2 is bit 0 of this register
    assert not ClbitTest((2, 1), 2).holds(bits)
    assert ClbitTest((1,), 1, equal=False).holds(bits)
    assert ClbitTest((1,), 1).negated() == ClbitTest((1,), 1, equal=False)
    both = Condition.equals((0,), 1).also(ClbitTest((1, 2), 2))
    assert both.holds(bits) and both.clbits == {0, 1, 2}
    assert not both.also(ClbitTest((0,), 0)).holds(bits)


@pytest.mark.parametrize("build, message", [
    (lambda: ClbitTest((0, 1), 4), "does not fit in 2 classical bit"),
    (lambda: ClbitTest((0, 0), 1), "repeated index"),
    (lambda: ClbitTest((), 0), "at least one index"),
    (lambda: Condition(()), "one or more ClbitTest"),
    (lambda: Measure((0, 1), (0,)), "needs as many classical bits"),
    (lambda: Measure((0, -1), (0, 1)), "negative index"),
    (lambda: Measure(("a",), (0,)), "must be an integer, got 'a'"),
    (lambda: Reset((2, 2)), "repeated index"),
    (lambda: Gate((0,), X, condition=(0, 1)), "condition must be a circuits.Condition"),
    (lambda: Circuit(2, [Measure((0,), (3,))], n_clbits=2), "uses classical bit 3, but the circuit has 2"),
    (lambda: Circuit(2, [Gate((1,), X, condition=Condition.equals((1,), 1))], n_clbits=1), "uses classical bit 1"),
    (lambda: Circuit(2, [Reset((2,))]), "targets qubit 2"),
    (lambda: Circuit(2, ["measure"]), "not a circuits.Gate, Measure, Reset, Save or LoopLimit"),
    (lambda: LoopLimit(None, 5, "here"), "needs the loop's circuits.Condition, got None"),
    (lambda: LoopLimit(Condition.equals((0,), 1), 2.5, "here"), "iteration limit must be an integer, got 2.5"),
    (lambda: Circuit(1, [LoopLimit(Condition.equals((1,), 1), 5, "here")], n_clbits=1), "uses classical bit 1"),
    (lambda: Circuit(2, [], n_clbits=3, clbit_registers=(("c", 2),)), "do not cover the 3 classical bits"),
    (lambda: Measure((0.0,), (0,)), r"measured qubits: every index must be an integer, got 0.0 \(float\)"),
    (lambda: Measure((0,), (np.float64(1),)), "classical bits of a measurement: every index must be an integer"),
    (lambda: Reset((True,)), r"reset qubits: every index must be an integer, got True \(bool\)"),
    (lambda: ClbitTest((0,), 1.0), "a condition's value must be an integer, got 1.0"),
    (lambda: ClbitTest((0,), 1, equal="no"), "'equal' must be True or False, got 'no'"),
    (lambda: Circuit(2, [], n_clbits=1.0), "n_clbits must be an integer, got 1.0"),
    (lambda: Circuit(2, [], n_clbits=-1), "n_clbits must be >= 0, got -1"),
    (lambda: Circuit(2, [], n_clbits=1, clbit_registers=(("c", 1.0),)), "size of classical register 'c' must be an"),
    (lambda: Circuit(2, [], n_clbits=1, clbit_registers=((1, 1),)), "with a string name"),
])
def test_bad_operations_are_refused_clearly(build, message):
    with pytest.raises(CircuitError, match=message):
        build()


def test_dynamic_circuits_are_recognised():
    plain = Circuit(2, [Gate((0,), X)], measured=(0,), n_clbits=1)
    assert not plain.is_dynamic
    conditioned = Circuit(2, [Gate((0,), X, condition=Condition.equals((0,), 1))], n_clbits=1)
    measured = Circuit(2, [Gate((0, 1), np.eye(4)), Measure((1,), (0,)), Reset((0,))], n_clbits=1)
    assert conditioned.is_dynamic and measured.is_dynamic
    assert Circuit(1, [LoopLimit(Condition.equals((0,), 1), 5, "here")], n_clbits=1).is_dynamic
    assert [g.name for g in measured.dense_gates()] == ["unitary"] and measured.max_gate_size() == 2
    assert len(measured) == 3


@pytest.mark.parametrize("sizes", [(), (3,), (1, 2), (2, 1, 3), (1, 1, 1, 1)])
def test_classical_strings_match_qiskit_formatting(sizes):
    rng = np.random.default_rng(len(sizes))
    n_clbits = sum(sizes) or 4
    registers = tuple((f"r{i}", size) for i, size in enumerate(sizes))
    header = {"memory_slots": n_clbits, "creg_sizes": [list(r) for r in registers]} if registers else \
        {"memory_slots": n_clbits}
    for bits in [0, (1 << n_clbits) - 1, *rng.integers(0, 1 << n_clbits, 10).tolist()]:
        assert format_clbits(bits, n_clbits, registers) == format_counts_memory(hex(bits), header)
    assert format_clbits(0, 0) == ""
