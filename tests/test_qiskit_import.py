"""from_qiskit / from_qasm: states equal qiskit's Statevector (an independent reference) on every
backend, with and without fusion; each rejected construct names its instruction and position."""
import importlib.util

import numpy as np
import pytest
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
from qiskit.circuit import Parameter
from qiskit.circuit.library import GlobalPhaseGate, Initialize, MCXGate, QFTGate, UnitaryGate, quantum_volume
from qiskit.circuit.random import random_circuit
from qiskit.quantum_info import Statevector, random_unitary

from circuits import CircuitError
from circuits.fusion import fuse
from circuits.qiskit_import import from_qasm, from_qiskit, from_qiskit_with_clbits
from gemm_backend.arrays import gpu_available
from qsim import Simulator

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

#: backend -> (module implementing it, max |amplitude - reference| allowed on the CPU, on the GPU).
#: fp16x2 measured <= 1.6e-7 on these circuits on the CPU; tensor cores truncate, hence more room there.
BACKENDS = {
    "cublas": ("gemm_backend.zgemm", 1e-12, 1e-12),
    "int8-auto": ("gemm_backend.ozaki", 1e-12, 1e-12),
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


def _mid_circuit_measure():
    qc = QuantumCircuit(2, 1)
    qc.h(0)
    qc.measure(0, 0)
    qc.x(0)
    return qc


def _reset():
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.reset(1)
    return qc


def _if_else():
    qc = QuantumCircuit(2, 1)
    qc.h(0)
    qc.h(1)
    qc.measure(1, 0)
    with qc.if_test((qc.clbits[0], 1)):
        qc.x(0)
    return qc


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


def _nested_reset():
    sub = QuantumCircuit(2, name="prep")
    sub.h(0)
    sub.reset(1)
    qc = QuantumCircuit(3)
    qc.x(2)
    qc.append(sub.to_instruction(), [0, 2])
    return qc


def _clbit_written_twice():
    qc = QuantumCircuit(2, 1)
    qc.measure(0, 0)
    qc.measure(1, 0)
    return qc


def _qubit_measured_twice():
    qc = QuantumCircuit(1, 2)
    qc.measure(0, 0)
    qc.measure(0, 1)
    return qc


@pytest.mark.parametrize("build, message", [
    (_mid_circuit_measure, r"'x' at position 2 acts on qubit 0 after its measurement at position 1.*mid-circuit"),
    (_reset, r"'reset' at position 1 is not unitary"),
    (_if_else, r"'if_else' at position 3 .*classical"),
    (_unbound, r"'rx' at position 0 has unbound parameters theta"),
    (_unbound_phase, r"global phase has unbound parameters phi"),
    (_initialize, r"'initialize' at position 1 is not unitary"),
    (_nested_reset, r"'reset' at position 1 inside 'prep' at position 1 is not unitary"),
    (_clbit_written_twice, r"'measure' at position 1 writes classical bit 0, already written .* position 0"),
    (_qubit_measured_twice, r"'measure' at position 1 acts on qubit 0 after its measurement at position 0"),
], ids=lambda value: value.__name__.strip("_") if callable(value) else "")
def test_rejected_constructs_name_instruction_and_position(build, message):
    with pytest.raises(CircuitError, match=message):
        from_qiskit(build())


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
HAS_QASM3_IMPORTER = importlib.util.find_spec("qiskit_qasm3_import") is not None


@pytest.mark.skipif(HAS_QASM3_IMPORTER, reason="qiskit_qasm3_import is installed: the error path cannot occur")
def test_qasm3_without_importer_is_a_clear_error():
    with pytest.raises(CircuitError, match="qiskit_qasm3_import"):
        from_qasm(QASM3)


@pytest.mark.skipif(not HAS_QASM3_IMPORTER, reason="needs the optional package qiskit_qasm3_import")
def test_qasm3_loads_with_importer():
    circuit = from_qasm(QASM3)
    assert circuit.measured == (0, 1)
    assert np.abs(simulate(circuit)[[0, 3]] - 2**-0.5).max() < 1e-15
