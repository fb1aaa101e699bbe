"""from_qiskit / from_qasm: states equal qiskit's Statevector (an independent reference) on every
backend, with and without fusion; each rejected construct names its instruction and position."""
import importlib.util

import numpy as np
import pytest
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
from qiskit.circuit import Clbit, IfElseOp, Parameter, Qubit
from qiskit.circuit.classical import expr
from qiskit.circuit.library import GlobalPhaseGate, Initialize, MCXGate, QFTGate, UnitaryGate, quantum_volume
from qiskit.circuit.random import random_circuit
from qiskit.quantum_info import Statevector, random_unitary

from circuits import CircuitError, Gate
from circuits.fusion import fuse
from circuits.qiskit_import import from_qasm, from_qiskit, from_qiskit_with_clbits
from gemm_backend.arrays import gpu_available
from qsim import Simulator

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

#: backend -> (module implementing it, max |amplitude - reference| allowed on the CPU, on the GPU).
#: fp16x2 measured <= 1.6e-7 on these circuits on the CPU; tensor cores truncate, hence more room there.
BACKENDS = {
    "cublas": ("gemm_backend.native.zgemm", 1e-12, 1e-12),
    "int8-auto": ("gemm_backend.ozaki.backend", 1e-12, 1e-12),
    "fp16x2": ("gemm_backend.multiword", 1e-6, 1e-5),
}


def ghz(n):
    qc = QuantumCircuit(n)
    qc.h(0)
    for q in range(n - 1):
        qc.cx(q, q + 1)
    return qc


def qft(n):
    qc = QuantumCircuit(n)
    qc.h(range(n))  # a non-trivial input: QFT of |0> alone is a product state
    qc.t(1)
    qc.append(QFTGate(n), range(n))
    return qc


def distant_gates():
    qc = QuantumCircuit(10, global_phase=0.4)
    qc.h([0, 3, 9])
    qc.ry(0.3, 5)
    qc.cx(0, 9)
    qc.ccx(9, 3, 0)
    qc.cswap(5, 9, 1)
    qc.crz(1.1, 9, 2)
    qc.append(UnitaryGate(random_unitary(4, seed=3)), [8, 1])
    return qc


REFERENCE_CIRCUITS = {
    "ghz12": lambda: ghz(12),
    "qft10": lambda: qft(10),
    "quantum_volume8": lambda: quantum_volume(8, seed=21),
    "random10x12": lambda: random_circuit(10, 12, max_operands=3, seed=17),
    "distant": distant_gates,
}


def backend_or_skip(name, device="cpu"):
    """The backend's tolerance on `device`; skips when its module does not exist yet."""
    module, cpu_tolerance, gpu_tolerance = BACKENDS[name]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"backend {name!r}: module {module} is not written yet")
    return cpu_tolerance if device == "cpu" else gpu_tolerance


def simulate(circuit, backend="cublas", device="cpu"):
    return Simulator(backend=backend, device=device, progress=False).run(circuit).state_vector()


@pytest.mark.parametrize("fusion", [None, 5], ids=["unfused", "fused5"])
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("name", list(REFERENCE_CIRCUITS))
def test_state_equals_qiskit_statevector(name, backend, fusion):
    tolerance = backend_or_skip(backend)
    qc = REFERENCE_CIRCUITS[name]()
    circuit = from_qiskit(qc)
    if fusion:
        circuit = fuse(circuit, fusion)
    error = np.abs(simulate(circuit, backend) - Statevector(qc).data).max()
    assert error < tolerance


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("fusion", [None, 5], ids=["unfused", "fused5"])
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("name", ["qft10", "distant", "random10x12"])
def test_state_equals_qiskit_statevector_on_gpu(name, backend, fusion):
    tolerance = backend_or_skip(backend, device="gpu")
    qc = REFERENCE_CIRCUITS[name]()
    circuit = from_qiskit(qc)
    if fusion:
        circuit = fuse(circuit, fusion)
    assert np.abs(simulate(circuit, backend, device="gpu") - Statevector(qc).data).max() < tolerance


def test_gates_keep_qargs_order_and_matrices():
    u = random_unitary(8, seed=5)
    qc = QuantumCircuit(5)
    qc.append(UnitaryGate(u), [4, 0, 2])
    qc.cx(3, 1)
    circuit = from_qiskit(qc)
    assert [g.targets for g in circuit.gates] == [(4, 0, 2), (3, 1)]
    assert np.array_equal(circuit.gates[0].matrix, u.data)
    # cx(control 3, target 1): Qiskit's matrix flips index bit 1 when bit 0 (the control) is set.
    assert np.array_equal(circuit.gates[1].matrix, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]])


def test_registers_flatten_in_circuit_qubit_order():
    a, b = QuantumRegister(2, "a"), QuantumRegister(3, "b")
    qc = QuantumCircuit(a, b)
    qc.x(b[0])
    qc.h(a[1])
    qc.cx(a[1], b[2])
    circuit = from_qiskit(qc)
    assert circuit.n_qubits == 5
    assert [g.targets for g in circuit.gates] == [(2,), (1,), (1, 4)]
    assert np.abs(simulate(circuit) - Statevector(qc).data).max() < 1e-15


def test_global_phase_is_kept_exactly():
    qc = QuantumCircuit(3, global_phase=1.25)
    qc.h(1)
    qc.append(GlobalPhaseGate(-0.5), [])
    circuit = from_qiskit(qc)
    assert len(circuit) == 1
    assert np.abs(simulate(circuit) - Statevector(qc).data).max() < 1e-15

    only_phase = QuantumCircuit(2, global_phase=0.3)
    only_phase.barrier()
    circuit = from_qiskit(only_phase)
    assert [g.name for g in circuit.gates] == ["global_phase"]
    assert simulate(circuit)[0] == pytest.approx(np.exp(0.3j), abs=1e-15)


def test_no_ops_are_skipped():
    qc = QuantumCircuit(3)
    qc.h(0)
    qc.barrier()
    qc.id(1)
    qc.delay(100, 2)
    qc.x(2)
    assert [g.name for g in from_qiskit(qc).gates] == ["h", "x"]


def test_wide_composites_are_expanded_and_exact():
    sub = QuantumCircuit(7, name="sub")
    sub.h(range(7))
    sub.rzz(0.7, 0, 6)
    qc = QuantumCircuit(8)
    qc.append(sub.to_instruction(), [7, 0, 1, 2, 3, 4, 5])
    qc.append(MCXGate(5), [0, 1, 2, 3, 4, 6])  # 6 qubits: taken from its definition
    qc.append(sub.to_gate(), range(1, 8))
    circuit = from_qiskit(qc)
    assert circuit.max_gate_size() <= 5
    assert np.abs(simulate(circuit) - Statevector(qc).data).max() < 1e-12


def test_blueprint_qft_class_imports():
    from qiskit.circuit.library import QFT

    with pytest.warns(DeprecationWarning):
        qc = QFT(6)
    prepared = QuantumCircuit(6)
    prepared.x([0, 4])
    prepared.compose(qc, inplace=True)
    assert np.abs(simulate(from_qiskit(prepared)) - Statevector(prepared).data).max() < 1e-12


def test_final_measurements_map_to_classical_bit_order():
    q = QuantumRegister(4, "q")
    c, d = ClassicalRegister(2, "c"), ClassicalRegister(2, "d")
    qc = QuantumCircuit(q, c, d)
    qc.h(0)
    qc.cx(0, 3)
    qc.measure(q[3], d[1])   # clbit 3
    qc.measure(q[0], c[0])   # clbit 0
    qc.x(1)                  # gates on unmeasured qubits after a measurement are fine
    qc.barrier()
    qc.measure(q[1], d[0])   # clbit 2; clbit 1 is never written
    circuit, clbits = from_qiskit_with_clbits(qc)
    assert circuit.measured == (0, 1, 3)
    assert clbits == (0, 2, 3)
    unmeasured = qc.remove_final_measurements(inplace=False)
    assert np.abs(simulate(circuit) - Statevector(unmeasured).data).max() < 1e-15


def test_measure_all_measures_every_qubit():
    qc = ghz(5)
    qc.measure_all()
    assert from_qiskit(qc).measured == (0, 1, 2, 3, 4)


def _unbound():
    qc = QuantumCircuit(1)
    qc.rx(Parameter("theta"), 0)
    return qc


def _unbound_phase():
    qc = QuantumCircuit(1, global_phase=Parameter("phi"))
    qc.h(0)
    return qc


def _initialize():
    qc = QuantumCircuit(2)
    qc.x(1)
    qc.append(Initialize([0, 1]), [0])
    return qc


def _for_loop_with_break():
    qc = QuantumCircuit(1, 1)
    with qc.for_loop(range(3)):
        qc.x(0)
        qc.break_loop()
    return qc


def _measure_into_condition_bit():
    qc = QuantumCircuit(2, 1)
    qc.h(0)
    qc.measure(0, 0)
    with qc.if_test((qc.clbits[0], 1)):
        qc.h(1)
        qc.measure(1, 0)
        qc.x(1)  # would see the condition changed by the measurement
    return qc


def _ordering_condition():
    qc = QuantumCircuit(1, 2)
    qc.measure(0, 0)
    with qc.if_test(expr.less(qc.cregs[0], 2)):
        qc.x(0)
    return qc


def _disjunction():
    qc = QuantumCircuit(1, 2)
    with qc.if_test(expr.logic_or(qc.clbits[0], qc.clbits[1])):
        qc.x(0)
    return qc


def _else_under_conjunction():
    qc = QuantumCircuit(1, 2)
    with qc.if_test(expr.logic_and(qc.clbits[0], qc.clbits[1])) as else_:
        qc.x(0)
    with else_:
        qc.h(0)
    return qc


@pytest.mark.parametrize("build, message", [
    (_unbound, r"'rx' at position 0 has unbound parameters theta"),
    (_unbound_phase, r"global phase has unbound parameters phi"),
    (_for_loop_with_break, r"'for_loop' at position 0 holds break_loop"),
    (_measure_into_condition_bit, r"'measure' at position 1 inside 'if_else' at position 2 writes classical bit 0, "
                                  r"which the condition of 'if_else' at position 2 reads, and operations under that condition follow"),
    (_ordering_condition, r"'if_else' at position 1 has the condition .* not supported"),
    (_disjunction, r"'if_else' at position 0 has the condition .* not supported"),
    (_else_under_conjunction, r"'if_else' at position 0 has an else branch under a condition joined by 'and'"),
], ids=lambda value: value.__name__.strip("_") if callable(value) else "")
def test_rejected_constructs_name_instruction_and_position(build, message):
    with pytest.raises(CircuitError, match=message):
        from_qiskit(build())


def summary(circuit):
    """(name, qubits, clbits or None, condition tests as (clbits, value, equal) tuples) per operation."""
    rows = []
    for op in circuit.gates:
        tests = None if op.condition is None else [(t.clbits, t.value, t.equal) for t in op.condition.tests]
        qubits = op.targets if isinstance(op, Gate) else op.qubits
        rows.append((op.name, qubits, getattr(op, "clbits", None), tests))
    return rows


def test_mid_circuit_measurement_and_reset_make_a_dynamic_circuit():
    qc = QuantumCircuit(3, 3)
    qc.h(0)
    qc.measure([0, 1], [2, 0])  # adjacent measurements merge into one joint measurement
    qc.x(0)
    qc.reset(1)
    qc.reset(2)
    qc.measure(0, 0)  # classical bit 0 written again
    circuit, clbits = from_qiskit_with_clbits(qc)
    assert circuit.is_dynamic and circuit.measured == () and clbits == ()
    assert circuit.n_clbits == 3 and circuit.clbit_registers == (("c", 3),)
    assert summary(circuit) == [("h", (0,), None, None), ("measure", (0, 1), (2, 0), None),
                                ("x", (0,), None, None), ("reset", (1,), None, None),  # qubit 2: untouched, |0>
                                ("measure", (0,), (0,), None)]


def test_final_measurements_stay_static():
    qc = QuantumCircuit(3, 3)
    qc.h(0)
    qc.cx(0, 1)
    qc.measure([1, 0], [0, 2])
    qc.x(2)  # a gate on an unmeasured qubit after the measurements
    circuit, clbits = from_qiskit_with_clbits(qc)
    assert not circuit.is_dynamic and circuit.measured == (1, 0) and clbits == (0, 2)
    assert all(isinstance(op, Gate) for op in circuit.gates)


def test_if_else_nesting_and_expressions_become_conditions():
    q, c = QuantumRegister(3, "q"), ClassicalRegister(2, "c")
    qc = QuantumCircuit(q, c)
    qc.measure([0, 1], [0, 1])
    with qc.if_test((c[1], 1)) as else_:
        qc.x(2)
        with qc.if_test(expr.equal(c, 2)):
            qc.h(0)
    with else_:
        qc.z(2)
    with qc.if_test(expr.logic_and(expr.logic_not(c[0]), expr.not_equal(3, c))):
        qc.y(1)
    with qc.if_test(expr.equal(c[0], False)):
        qc.s(1)
    assert summary(from_qiskit(qc))[1:] == [
        ("x", (2,), None, [((1,), 1, True)]),
        ("h", (0,), None, [((1,), 1, True), ((0, 1), 2, True)]),
        ("z", (2,), None, [((1,), 1, False)]),
        ("y", (1,), None, [((0,), 1, False), ((0, 1), 3, False)]),
        ("s", (1,), None, [((0,), 0, True)]),
    ]


def test_subcircuits_and_boxes_map_their_qubits_and_classical_bits():
    sub = QuantumCircuit(2, 1, name="prep")
    sub.h(0)
    sub.measure(0, 0)
    sub.reset(1)
    qc = QuantumCircuit(3, 2)
    qc.x(2)
    qc.h(0)  # a reset of a qubit nothing has touched yet is dropped: touch it
    qc.append(sub.to_instruction(), [2, 0], [1])
    with qc.box():
        qc.measure(1, 0)
    assert summary(from_qiskit(qc)) == [("x", (2,), None, None), ("h", (0,), None, None), ("h", (2,), None, None),
                                        ("measure", (2,), (1,), None), ("reset", (0,), None, None),
                                        ("measure", (1,), (0,), None)]


def test_registers_out_of_order_or_loose_bits_give_no_layout():
    loose = QuantumCircuit([Qubit(), Clbit(), Clbit()])
    loose.measure(0, 1)
    assert from_qiskit(loose).clbit_registers == ()
    a, b = ClassicalRegister(1, "a"), ClassicalRegister(2, "b")
    qc = QuantumCircuit(QuantumRegister(2, "q"), a, b)
    qc.measure(0, b[1])
    circuit = from_qiskit(qc)
    assert circuit.clbit_registers == (("a", 1), ("b", 2)) and circuit.measured == (0,)


def test_global_phase_is_kept_in_dynamic_circuits():
    """Measuring |0> always reads 0, so the dynamic circuit's trajectory equals the unitary circuit
    with the taken branch written out; phases of conditioned definitions stay conditioned."""
    body = QuantumCircuit(1, global_phase=0.7, name="phased")
    body.rx(0.4, 0)
    dynamic = QuantumCircuit(2, 1, global_phase=0.3)
    dynamic.measure(1, 0)
    with dynamic.if_test((dynamic.clbits[0], 0)):
        dynamic.append(body.to_gate(), [0])
    with dynamic.if_test((dynamic.clbits[0], 1)):
        dynamic.append(body.to_gate(), [1])
    dynamic.h(1)
    phased_block = QuantumCircuit(1, 1, global_phase=0.9)
    phased_block.sx(0)
    dynamic.append(IfElseOp((dynamic.clbits[0], 0), phased_block), [0], [0])
    unitary = QuantumCircuit(2, global_phase=0.3 + 0.9)
    unitary.append(body.to_gate(), [0])
    unitary.h(1)
    unitary.sx(0)
    circuit = from_qiskit(dynamic)
    assert circuit.is_dynamic
    state = Simulator(device="cpu", progress=False).run(circuit, seed=1).state_vector()
    assert np.abs(state - Statevector(unitary).data).max() < 1e-15


def test_non_circuit_input_is_rejected():
    with pytest.raises(CircuitError, match="QuantumCircuit"):
        from_qiskit("h q[0];")


GHZ_QASM2 = """// a comment before the header is fine
OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
creg c[3];
h q[0];
cx q[0], q[1];
cu1(pi/4) q[1], q[2];
rzz(0.3) q[0], q[2];
measure q -> c;
"""


def test_qasm2_text_loads_with_measurements():
    circuit = from_qasm(GHZ_QASM2)
    assert circuit.n_qubits == 3 and circuit.measured == (0, 1, 2)
    reference = QuantumCircuit(3)
    reference.h(0)
    reference.cx(0, 1)
    reference.cp(np.pi / 4, 1, 2)
    reference.rzz(0.3, 0, 2)
    assert np.abs(simulate(circuit) - Statevector(reference).data).max() < 1e-15


def test_qasm2_file_path_resolves_includes_beside_it(tmp_path):
    (tmp_path / "mine.inc").write_text("gate bell a, b { h a; cx a, b; }\n")
    program = 'OPENQASM 2.0;\ninclude "qelib1.inc";\ninclude "mine.inc";\nqreg q[2];\nbell q[1], q[0];\n'
    path = tmp_path / "bell.qasm"
    path.write_text(program)
    for source in (path, str(path)):
        state = simulate(from_qasm(source))
        expected = np.zeros(4)
        expected[[0, 3]] = 2**-0.5
        assert np.abs(state - expected).max() < 1e-15


def test_missing_path_and_bad_text_give_clear_errors(tmp_path):
    with pytest.raises(CircuitError, match="neither an existing file nor OpenQASM text"):
        from_qasm(str(tmp_path / "missing.qasm"))
    with pytest.raises(CircuitError, match="OPENQASM version header"):
        from_qasm("qreg q[1];\nh q[0];\n")
    with pytest.raises(CircuitError, match="OpenQASM 2 parse error"):
        from_qasm("OPENQASM 2.0;\nqreg q[1];\nnotagate q[0];\n")
    with pytest.raises(CircuitError, match="version 4 is not supported"):
        from_qasm("OPENQASM 4.0;\nqubit q;\n")
    with pytest.raises(CircuitError, match="file path or OpenQASM text"):
        from_qasm(12)


QASM3 = 'OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\nbit[2] c;\nh q[0];\ncx q[0], q[1];\nc = measure q;\n'

# Gates with parameters (literals, pi, expressions), two qubit[n] registers, gate definitions (one
# with parameters, one calling it), U, gphase, modifiers and measurements at the end.
QASM3_PROGRAM = """OPENQASM 3.0;
include "stdgates.inc";
// a parameterised definition and one built on it
gate ent(theta, phi) a, b {
  ry(theta) a;
  cx a, b;
  rz(phi / 2) b;
  U(theta, phi, pi / 8) a;
}
gate trio a, b, c { h a; ccx a, b, c; ent(0.25, -pi) c, a; }
qubit[3] q;
qubit[2] r;
bit[3] c;
bit[2] d;
h q;
rx(0.7) q[0];
crz(-1.25) q[1], r[0];
u3(0.1, 0.2, 0.3) r[1];
ent(pi / 3, 0.5) q[2], r[1];
trio r[0], q[0], q[2];
p(2 * pi / 5) r[0];
cswap q[0], r[0], r[1];
inv @ s q[1];
ctrl @ rx(0.9) r[1], q[2];
gphase(0.4);
c = measure q;
d[0] = measure r[0];
d[1] = measure r[1];
"""


def by_hand_like_qasm3_program():
    """QASM3_PROGRAM built with Qiskit's own methods, not through any importer."""
    q, r = QuantumRegister(3, "q"), QuantumRegister(2, "r")
    qc = QuantumCircuit(q, r, global_phase=0.4)

    def ent(theta, phi, a, b):
        qc.ry(theta, a)
        qc.cx(a, b)
        qc.rz(phi / 2, b)
        qc.u(theta, phi, np.pi / 8, a)

    qc.h(q)
    qc.rx(0.7, q[0])
    qc.crz(-1.25, q[1], r[0])
    qc.u(0.1, 0.2, 0.3, r[1])
    ent(np.pi / 3, 0.5, q[2], r[1])
    qc.h(r[0])
    qc.ccx(r[0], q[0], q[2])
    ent(0.25, -np.pi, q[2], r[0])
    qc.p(2 * np.pi / 5, r[0])
    qc.cswap(q[0], r[0], r[1])
    qc.sdg(q[1])
    qc.crx(0.9, r[1], q[2])
    return qc


def test_qasm3_without_the_importer_is_a_clear_error(monkeypatch):
    import circuits.qasm3_import as module

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(module.importlib.util, "find_spec",
                        lambda name, *a: None if name == "qiskit_qasm3_import" else real_find_spec(name, *a))
    with pytest.raises(CircuitError, match="needs qiskit-qasm3-import, a dependency of this project"):
        from_qasm(QASM3)


def test_qasm3_loads_with_importer():
    circuit = from_qasm(QASM3)
    assert circuit.measured == (0, 1)
    assert np.abs(simulate(circuit)[[0, 3]] - 2**-0.5).max() < 1e-15


def test_qasm3_program_equals_qiskit_statevector():
    circuit = from_qasm(QASM3_PROGRAM)
    assert circuit.n_qubits == 5 and circuit.n_clbits == 5 and not circuit.is_dynamic
    assert circuit.measured == (0, 1, 2, 3, 4)  # c[0..2] = q[0..2], d[0..1] = r[0..1]
    assert circuit.clbit_registers == (("c", 3), ("d", 2))
    state = simulate(circuit)
    expected = Statevector(by_hand_like_qasm3_program()).data
    assert np.abs(state - expected).max() < 1e-12  # global phase (gphase) included
    assert np.abs(state).max() < 0.9  # not a trivial state


@pytest.mark.parametrize("backend", ["int8-auto", "int8-crt-14"])
def test_qasm3_program_on_emulated_backends(backend):
    circuit = fuse(from_qasm(QASM3_PROGRAM), 3)
    assert np.abs(simulate(circuit, backend) - Statevector(by_hand_like_qasm3_program()).data).max() < 1e-12


def test_qasm3_gate_parameters_bind_in_declared_order():
    # qiskit-qasm3-import 0.6 binds in name order (phi before theta); circuits.qasm3_import renames
    program = ('OPENQASM 3.0;\ninclude "stdgates.inc";\n'
               'gate g(zeta, alpha, mid) a, b { rx(zeta) a; ry(alpha) b; cp(mid - alpha) a, b; rz(2 * zeta) b; }\n'
               'gate outer(y, x) a, b { g(x, y, x + y) b, a; }\nqubit[2] q;\nh q;\ng(0.1, 0.2, 0.3) q[0], q[1];\n'
               'outer(0.5, -0.7) q[0], q[1];\ngate skip(unused, turn) a { rz(turn) a; }\nskip(9, 0.4) q[1];\n')
    qc = QuantumCircuit(2)
    qc.h([0, 1])

    def g(zeta, alpha, mid, a, b):
        qc.rx(zeta, a)
        qc.ry(alpha, b)
        qc.cp(mid - alpha, a, b)
        qc.rz(2 * zeta, b)

    g(0.1, 0.2, 0.3, 0, 1)
    g(-0.7, 0.5, -0.2, 1, 0)
    qc.rz(0.4, 1)
    assert np.abs(simulate(from_qasm(program)) - Statevector(qc).data).max() < 1e-12


def test_qasm3_matches_qiskits_own_loader_where_it_is_right():
    # single-parameter and alphabetically ordered definitions: qiskit's loader reads them right
    from qiskit import qasm3

    program = QASM3_PROGRAM.replace("ent(theta, phi)", "ent(phi, theta)")
    program = program.replace("ent(pi / 3, 0.5)", "ent(0.5, pi / 3)").replace("ent(0.25, -pi)", "ent(-pi, 0.25)")
    expected = Statevector(qasm3.loads(program).remove_final_measurements(inplace=False)).data
    assert np.abs(expected - Statevector(by_hand_like_qasm3_program()).data).max() < 1e-12
    assert np.abs(simulate(from_qasm(program)) - expected).max() < 1e-12


def test_qasm3_file_path_and_version_without_minor(tmp_path):
    path = tmp_path / "program.qasm"
    path.write_text(QASM3_PROGRAM.replace("OPENQASM 3.0;", "// generated\nOPENQASM 3;"))
    for source in (path, str(path)):
        assert np.abs(simulate(from_qasm(source)) - Statevector(by_hand_like_qasm3_program()).data).max() < 1e-12


@pytest.mark.parametrize("program, message", [
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q\nh q[0];\n',
     r"OpenQASM 3 syntax error at line 4, column 1 \(near 'h'\)"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\nh q[0]', "OpenQASM 3 syntax error at line 4"),
    ('OPENQASM 3.0;\nqubit[1] q;\nh q[0];\n', "OpenQASM 3 import error: .*gate 'h' is not defined"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\nh q[5];\n', r"index out of range \(IndexError\)"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\ncx q[0], q[0];\n', "duplicate bit arguments"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[1] q;\nrx(1/0) q[0];\n', "ZeroDivisionError"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\ninput float theta;\nqubit[1] q;\nrx(theta) q[0];\n',
     "unbound parameters theta"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[1] q;\nbit[1] c;\nc[0] = measure q[0];\n'
     'while (c[0] == true) { c[0] = measure q[0]; x q[0]; }\n', "the condition of 'while_loop' at position 1 reads"),
    ('OPENQASM 3.0;\ninclude "mine.inc";\nqubit[1] q;\n', "non-stdgates imports"),
])
def test_qasm3_errors_are_one_line_circuit_errors(program, message, capfd):
    with pytest.raises(CircuitError, match=message) as caught:
        from_qasm(program)
    assert "\n" not in str(caught.value)
    assert capfd.readouterr().err == ""  # the parser's own stderr messages are swallowed


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_angles_and_phases_are_refused(value):
    """Qiskit's own error for an infinite angle ('math domain error') names no instruction."""
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.u(value, 0.1, 0.2, 1)
    with pytest.raises(CircuitError, match="'u' at position 1 has a non-finite parameter"):
        from_qiskit(qc)
    qc = QuantumCircuit(1, global_phase=value)
    qc.h(0)
    with pytest.raises(CircuitError, match="global phase is .*finite angle"):
        from_qiskit(qc)


@pytest.mark.parametrize("program, message", [
    ('OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[1];\nrx(2^10000) q[0];\n', "non-finite parameter inf"),
    ("OPENQASM 2.0;\nqreg q[99999999999];\n", r"OpenQASM 2 import error: Register size too large. \(CircuitError\)"),
    ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit q;\nrx(1e400) q;\n', "non-finite parameter inf"),
])
def test_what_qiskit_raises_while_building_becomes_our_circuit_error(program, message):
    """Qiskit's CircuitError is not circuits.CircuitError: the command line would print a traceback."""
    with pytest.raises(CircuitError, match=message):
        from_qasm(program)
