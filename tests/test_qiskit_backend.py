"""QsimBackend as a Qiskit BackendV2 and under BackendSamplerV2, and Result.to_qiskit; references
are qiskit's own Statevector and exact basis-state outcomes."""
import importlib.util

import numpy as np
import pytest
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister, transpile
from qiskit.circuit.library import QFTGate
from qiskit.circuit.random import random_circuit
from qiskit.primitives import BackendSamplerV2
from qiskit.quantum_info import Statevector
from scipy.stats import chisquare

from circuits import CircuitError
from circuits.qiskit_import import from_qiskit
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from qsim import SimulationError, Simulator
from qsim.qiskit import QsimBackend

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
P_VALUE = 0.001


def measured_random_circuit(n_qubits=5, seed=3):
    qc = random_circuit(n_qubits, 6, max_operands=2, seed=seed)
    qc.measure_all()
    return qc


def assert_counts_match(counts, qc, shots):
    """Chi-square test of {bitstring: count} over all qubits against Statevector(qc)."""
    exact = Statevector(qc.remove_final_measurements(inplace=False)).probabilities_dict()
    assert set(counts) <= set(exact) and sum(counts.values()) == shots
    keys = sorted(exact)
    observed = np.array([counts.get(k, 0) for k in keys])
    assert chisquare(observed, np.array([exact[k] for k in keys]) * shots).pvalue > P_VALUE


@pytest.fixture(scope="module")
def backend():
    return QsimBackend(device="cpu")


def test_counts_follow_the_statevector(backend):
    qc = measured_random_circuit()
    result = backend.run(qc, shots=50_000, seed_simulator=4).result()
    assert result.success
    assert_counts_match(result.get_counts(), qc, 50_000)


def test_registers_format_counts_and_unmeasured_bits_read_zero(backend):
    q = QuantumRegister(3, "q")
    a, b = ClassicalRegister(2, "a"), ClassicalRegister(3, "b")
    qc = QuantumCircuit(q, a, b)
    qc.x([0, 2])
    qc.measure(q[0], b[2])
    qc.measure(q[1], a[0])
    qc.measure(q[2], a[1])
    result = backend.run(qc, shots=10, memory=True, seed_simulator=0).result()
    # b = (b2 b1 b0) = 100, a = (a1 a0) = 10; registers printed last-first.
    assert result.get_counts() == {"100 10": 10}
    assert result.get_memory() == ["100 10"] * 10


def test_memory_agrees_with_counts_and_seed_reproduces(backend):
    qc = measured_random_circuit(seed=8)
    first = backend.run(qc, shots=3000, memory=True, seed_simulator=12).result()
    memory = first.get_memory()
    assert len(memory) == 3000
    assert {k: memory.count(k) for k in set(memory)} == first.get_counts()
    again = backend.run(qc, shots=3000, memory=True, seed_simulator=12).result()
    assert again.get_memory() == memory
    other = backend.run(qc, shots=3000, memory=True, seed_simulator=13).result()
    assert other.get_memory() != memory


def test_unseeded_runs_report_their_seed(backend):
    qc = measured_random_circuit(seed=9)
    first = backend.run(qc, shots=2000, memory=True).result()
    seed = first.results[0].seed_simulator
    assert isinstance(seed, int)
    assert backend.run(qc, shots=2000, memory=True, seed_simulator=seed).result().get_memory() == first.get_memory()


def test_statevector_option_and_list_input(backend):
    plain = QuantumCircuit(4, global_phase=0.2)
    plain.append(QFTGate(4), range(4))
    measured = measured_random_circuit(seed=5)
    result = backend.run([plain, measured], shots=100, statevector=True, seed_simulator=7).result()
    assert len(result.results) == 2
    assert np.abs(result.get_statevector(0) - Statevector(plain).data).max() < 1e-13
    reference = Statevector(measured.remove_final_measurements(inplace=False)).data
    assert np.abs(result.get_statevector(1) - reference).max() < 1e-13
    assert [r.seed_simulator for r in result.results] == [7, 8]
    assert sum(result.get_counts(1).values()) == 100


def test_fusion_is_on_by_default_and_can_be_turned_off(backend):
    qc = QuantumCircuit(8)
    qc.append(QFTGate(8), range(8))
    fused = backend.run(qc, statevector=True).result()
    unfused = backend.run(qc, statevector=True, fusion_max_qubits=0).result()
    assert fused.results[0].metadata["fused_gates"] < unfused.results[0].metadata["fused_gates"] // 2
    assert unfused.results[0].metadata["fused_gates"] == unfused.results[0].metadata["gates"]
    assert np.abs(fused.get_statevector() - unfused.get_statevector()).max() < 1e-13


def test_transpiled_circuits_run(backend):
    qc = measured_random_circuit(seed=6)
    transpiled = transpile(qc, backend, optimization_level=1, seed_transpiler=1)
    counts = backend.run(transpiled, shots=20_000, seed_simulator=2).result().get_counts()
    assert_counts_match(counts, qc, 20_000)


def test_backend_sampler_v2(backend):
    q = QuantumRegister(4, "q")
    low, high = ClassicalRegister(2, "low"), ClassicalRegister(2, "high")
    qc = QuantumCircuit(q, low, high)
    qc.h(0)
    qc.ry(1.1, 1)
    qc.cx(1, 2)
    qc.x(3)
    qc.measure(q[0], low[0])
    qc.measure(q[1], low[1])
    qc.measure(q[2], high[0])
    qc.measure(q[3], high[1])
    sampler = BackendSamplerV2(backend=backend, options={"seed_simulator": 3})
    data = sampler.run([qc], shots=40_000).result()[0].data
    assert data.high.num_shots == 40_000
    # high: q3 = 1 always, q2 = q1.
    p1 = np.sin(0.55) ** 2
    high_counts = data.high.get_counts()
    assert set(high_counts) == {"10", "11"}
    assert chisquare([high_counts["10"], high_counts["11"]], [40_000 * (1 - p1), 40_000 * p1]).pvalue > P_VALUE
    low_counts = data.low.get_counts()
    expected = {"00": (1 - p1) / 2, "01": (1 - p1) / 2, "10": p1 / 2, "11": p1 / 2}
    observed = [low_counts.get(k, 0) for k in sorted(expected)]
    assert chisquare(observed, [40_000 * expected[k] for k in sorted(expected)]).pvalue > P_VALUE
    # Per shot, the low register's q1 bit equals the high register's q2 bit.
    low_bits, high_bits = data.low.array[:, 0], data.high.array[:, 0]
    assert np.array_equal((low_bits >> 1) & 1, high_bits & 1)


def test_bad_runs_give_clear_errors(backend):
    qc = measured_random_circuit()
    with pytest.raises(SimulationError, match="takes no option colour"):
        backend.run(qc, colour="red")
    with pytest.raises(SimulationError, match="shots must be an integer >= 1"):
        backend.run(qc, shots=0)
    with pytest.raises(SimulationError, match="seed_simulator must be an integer"):
        backend.run(qc, seed_simulator=-3)
    with pytest.raises(SimulationError, match="not a QuantumCircuit"):
        backend.run([qc, "h q[0];"])
    with pytest.raises(SimulationError, match="takes no option shot"):
        QsimBackend(shot=10)
    with pytest.raises(SimulationError, match="memory must be True or False, got 'no'"):
        backend.run(qc, memory="no")
    with pytest.raises(SimulationError, match="statevector must be True or False, got 1"):
        backend.run(qc, statevector=1)
    with pytest.raises(SimulationError, match="shots must be an integer >= 1, got 0"):
        QsimBackend(shots=0)
    with pytest.raises(SimulationError, match="fusion_max_qubits must be .auto. or a block size >= 0 .0 turns fusion off., got 2.5"):
        backend.set_options(fusion_max_qubits=2.5)
    assert backend.options.fusion_max_qubits != 2.5  # the refused value was not stored
    with pytest.raises(BackendError, match="unknown backend"):
        backend.run(qc, backend="nope")
    with pytest.raises(BackendError, match="takes no option"):
        backend.run(qc, backend_options={"bogus": 1})
    loop = QuantumCircuit(1, 1)
    with loop.while_loop((loop.clbits[0], 0)):
        loop.h(0)
        loop.break_loop()
    with pytest.raises(CircuitError, match="'while_loop' at position 0 holds break_loop"):
        backend.run(loop)
    with pytest.raises(SimulationError, match="max_while_iterations must be an integer >= 1"):
        backend.run(loop, max_while_iterations=-1)


def test_target_accepts_standard_gates_unitaries_reset_and_if_else(backend):
    names = set(backend.target.operation_names)
    assert {"cx", "ccx", "u", "rzz", "measure", "reset", "unitary", "if_else", "while_loop", "box"} <= names


def teleportation_with_registers(measure_out=True):
    """Teleport ry(THETA)|0> from q0 to q2; registers m (2 bits, the Bell measurement) and out."""
    q, m, out = QuantumRegister(3, "q"), ClassicalRegister(2, "m"), ClassicalRegister(1, "out")
    qc = QuantumCircuit(q, m, out)
    qc.ry(TELEPORTED_ANGLE, 0)
    qc.h(1)
    qc.cx(1, 2)
    qc.cx(0, 1)
    qc.h(0)
    qc.measure([0, 1], [m[0], m[1]])
    with qc.if_test((m[1], 1)):
        qc.x(2)
    with qc.if_test((m[0], 1)):
        qc.z(2)
    if measure_out:
        qc.measure(2, out[0])
    return qc


TELEPORTED_ANGLE = 1.1


def test_dynamic_circuit_counts_in_qiskit_format(backend):
    """Counts read 'out m1m0'; the Bell bits are uniform and out reads 1 with sin^2(THETA/2)
    whatever they are (chi-square on the 8 keys)."""
    shots = 4000
    result = backend.run(teleportation_with_registers(), shots=shots, memory=True, seed_simulator=5).result()
    counts = result.get_counts()
    assert all(len(key) == 4 and key[1] == " " for key in counts)
    memory = result.get_memory()
    assert {k: memory.count(k) for k in set(memory)} == counts
    p1 = np.sin(TELEPORTED_ANGLE / 2) ** 2
    keys = [f"{o} {b}" for o in "01" for b in ("00", "01", "10", "11")]
    expected = [shots * (p1 if o == "1" else 1 - p1) / 4 for o in "01" for _ in range(4)]
    assert chisquare([counts.get(k, 0) for k in keys], expected).pvalue > P_VALUE
    assert result.results[0].metadata["branches"] == 4  # one per Bell outcome; the final measurement is sampled
    again = backend.run(teleportation_with_registers(), shots=shots, memory=True, seed_simulator=5).result()
    assert again.get_memory() == memory


def test_dynamic_statevector_is_the_last_shots(backend):
    qc = teleportation_with_registers(measure_out=False)
    result = backend.run(qc, shots=3, memory=True, statevector=True, seed_simulator=2).result()
    last = result.get_memory()[-1]
    m0, m1 = int(last[-1]), int(last[-2])
    state = result.get_statevector()
    assert isinstance(state, Statevector)
    amplitudes = state.data[[m0 + 2 * m1, m0 + 2 * m1 + 4]]
    assert np.abs(np.abs(amplitudes) - [np.cos(TELEPORTED_ANGLE / 2), np.sin(TELEPORTED_ANGLE / 2)]).max() < 1e-12


def test_transpiled_dynamic_circuit_keeps_its_control_flow(backend):
    transpiled = transpile(teleportation_with_registers(), backend, optimization_level=1, seed_transpiler=1)
    assert {"if_else", "measure"} <= set(transpiled.count_ops())
    counts = backend.run(transpiled, shots=500, seed_simulator=1).result().get_counts()
    assert sum(counts.values()) == 500 and len(counts) == 8


def test_backend_sampler_v2_with_a_dynamic_circuit(backend):
    sampler = BackendSamplerV2(backend=backend, options={"seed_simulator": 4})
    data = sampler.run([teleportation_with_registers()], shots=2000).result()[0].data
    out = data.out.get_counts()
    p1 = np.sin(TELEPORTED_ANGLE / 2) ** 2
    assert chisquare([out.get("0", 0), out.get("1", 0)], [2000 * (1 - p1), 2000 * p1]).pvalue > P_VALUE
    assert set(data.m.get_counts()) == {"00", "01", "10", "11"}


@pytest.mark.skipif(importlib.util.find_spec("gemm_backend.ozaki.backend") is None,
                    reason="backend 'int8-auto': module gemm_backend.ozaki.backend is not written yet")
def test_other_gemm_backends_run(backend):
    qc = QuantumCircuit(6)
    qc.append(QFTGate(6), range(6))
    result = backend.run(qc, backend="int8-auto", statevector=True).result()
    assert np.abs(result.get_statevector() - Statevector(qc).data).max() < 1e-12


def test_result_to_qiskit_round_trip():
    qc = random_circuit(6, 8, max_operands=3, seed=12)
    result = Simulator(backend="cublas", device="cpu", progress=False).run(from_qiskit(qc))
    statevector = result.to_qiskit()
    assert isinstance(statevector, Statevector) and statevector.num_qubits == 6
    assert np.abs(statevector.data - Statevector(qc).data).max() < 1e-13
    # Back in as an initial state: evolving it further agrees with Qiskit's evolve.
    follow = random_circuit(6, 4, max_operands=2, seed=13)
    again = Simulator(backend="cublas", device="cpu", progress=False).run(from_qiskit(follow),
                                                                           initial_state=statevector.data)
    assert np.abs(again.to_qiskit().data - statevector.evolve(follow).data).max() < 1e-13


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("gemm", ["cublas", "int8-auto", "fp16x2"])
def test_backend_on_gpu(gemm):
    if gemm != "cublas" and importlib.util.find_spec(
            {"int8-auto": "gemm_backend.ozaki.backend", "fp16x2": "gemm_backend.multiword"}[gemm]) is None:
        pytest.skip(f"backend {gemm!r} is not written yet")
    qc = measured_random_circuit(n_qubits=10, seed=4)
    result = QsimBackend(device="gpu").run(qc, backend=gemm, shots=50_000, seed_simulator=1,
                                           statevector=True).result()
    tolerance = 1e-5 if gemm == "fp16x2" else 1e-12
    reference = Statevector(qc.remove_final_measurements(inplace=False)).data
    assert np.abs(result.get_statevector() - reference).max() < tolerance
    assert_counts_match(result.get_counts(), qc, 50_000)
    assert result.results[0].metadata["device"].startswith("gpu")


@pytest.mark.parametrize("run_input, message", [
    (5, "run takes a QuantumCircuit or a list of them, got int"),
    (None, "run takes a QuantumCircuit or a list of them, got NoneType"),
    ([], "empty list of circuits"),
])
def test_run_input_must_be_circuits(run_input, message):
    with pytest.raises(SimulationError, match=message):
        QsimBackend(device="cpu").run(run_input)


# -- AerSimulator's run options and result fields (issue 28) ------------------------------------
def test_parameter_binds_give_one_experiment_per_value(backend):
    """Aer's spelling: parameter_binds=[{theta: [values]}]; each experiment's saved state is
    Statevector of the circuit bound to that value."""
    from qiskit.circuit import Parameter

    theta, phi = Parameter("theta"), Parameter("phi")
    qc = QuantumCircuit(2)
    qc.ry(theta, 0)
    qc.cx(0, 1)
    qc.rz(phi, 1)
    values = {theta: [0.1, 1.3, 2.9], phi: [0.5, -0.2, 1.0]}
    measured = qc.copy()
    measured.save_statevector()
    result = backend.run([measured], parameter_binds=[values], seed_simulator=1).result()
    assert len(result.results) == 3
    for index in range(3):
        bound = qc.assign_parameters({theta: values[theta][index], phi: values[phi][index]})
        assert np.abs(result.get_statevector(index).data - Statevector(bound).data).max() < 1e-12
    with pytest.raises(SimulationError, match="parameter_binds needs one dict per circuit"):
        backend.run([measured, measured], parameter_binds=[values])
    with pytest.raises(SimulationError, match="one length"):
        backend.run([measured], parameter_binds=[{theta: [1.0], phi: [1.0, 2.0]}])


def test_aer_run_options_are_taken_or_refused_in_one_line(backend):
    qc = measured_random_circuit()
    result = backend.run(qc, shots=None, method="statevector", precision="double", max_parallel_threads=0,
                         device="CPU", seed_simulator=3).result()
    assert result.results[0].shots == 1024 and sum(result.get_counts().values()) == 1024
    assert backend.run(qc, method="automatic", seed_simulator=3).result().get_counts() == result.get_counts()
    for option, message in [({"noise_model": object()}, "takes no option noise_model"),
                            ({"method": "matrix_product_state"}, "method 'matrix_product_state' is not available"),
                            ({"precision": "single"}, "precision 'single' is not available"),
                            ({"max_parallel_threads": 2}, "max_parallel_threads=2 cannot be honoured")]:
        with pytest.raises(SimulationError, match=message) as error:
            backend.run(qc, **option)
        assert "\n" not in str(error.value)


def test_time_taken_is_wall_time_and_num_qubits_follows_memory(backend):
    import time

    qc = measured_random_circuit()
    started = time.perf_counter()
    result = backend.run([qc, qc], shots=100).result()
    wall = time.perf_counter() - started
    per_experiment = [experiment.time_taken for experiment in result.results]
    assert 0 < sum(per_experiment) <= result.time_taken <= wall
    assert result.results[0].metadata["gate_time_s"] <= per_experiment[0]
    free = Simulator(device="cpu").device.free_bytes()
    assert 16 << backend.num_qubits <= free < 16 << (backend.num_qubits + 2)
    assert {"shots", "method", "precision", "max_parallel_threads", "seed_simulator"} <= set(backend.options.__dict__)


def test_estimator_loop_matches_statevector_estimator(backend):
    """BackendEstimatorV2 on QsimBackend against StatevectorEstimator: the estimates agree within
    6 standard errors (the backend's estimate is sampled)."""
    from qiskit.circuit import Parameter
    from qiskit.primitives import BackendEstimatorV2, StatevectorEstimator
    from qiskit.quantum_info import SparsePauliOp

    theta = Parameter("theta")
    qc = QuantumCircuit(3)
    qc.h(0)
    qc.ry(theta, 1)
    qc.cx(0, 2)
    qc.cx(1, 2)
    observable = SparsePauliOp(["ZZI", "IXZ", "XIX"], [1.0, 0.5, -0.7])
    values = [[0.2], [1.1], [2.5]]
    estimator = BackendEstimatorV2(backend=backend, options={"default_precision": 0.01,
                                                             "seed_simulator": 5})
    ours = estimator.run([(qc, observable, values)]).result()[0].data
    exact = StatevectorEstimator().run([(qc, observable, values)]).result()[0].data.evs
    assert np.all(np.abs(ours.evs - exact) <= 6 * np.maximum(ours.stds, 1e-3))


def test_for_loop_runs_as_its_unrolled_circuit(backend):
    from qiskit.circuit import Parameter

    theta = Parameter("theta")
    qc = QuantumCircuit(3)
    qc.h(0)
    with qc.for_loop(range(4)) as i:
        qc.rx(0.3 * i + 0.1, 1)
        qc.cx(1, 2)
    with qc.for_loop([1, 3], theta):
        qc.ry(0.5 * theta, 0)
    unrolled = QuantumCircuit(3)
    unrolled.h(0)
    for i in range(4):
        unrolled.rx(0.3 * i + 0.1, 1)
        unrolled.cx(1, 2)
    for value in (1, 3):
        unrolled.ry(0.5 * value, 0)
    qc.save_statevector()
    state = backend.run(qc).result().get_statevector()
    assert np.abs(state.data - Statevector(unrolled).data).max() < 1e-12


def test_switch_takes_the_case_of_the_measured_register(backend):
    """Register c of two measured |+> qubits: case 0 or 3 flips qubit 2, case 1 rotates it by
    ry(1.0), the default (2) by ry(2.0); the joint counts follow the exact distribution."""
    qc = QuantumCircuit(3, 3)
    creg = ClassicalRegister(2, "m")
    qc.add_register(creg)
    qc.h([0, 1])
    qc.measure([0, 1], creg)
    with qc.switch(creg) as case:
        with case(0, 3):
            qc.x(2)
        with case(1):
            qc.ry(1.0, 2)
        with case(case.DEFAULT):
            qc.ry(2.0, 2)
    qc.measure(2, 0)
    shots = 20000
    counts = backend.run(qc, shots=shots, seed_simulator=8).result().get_counts()
    p_one = {0: 1.0, 3: 1.0, 1: np.sin(0.5) ** 2, 2: np.sin(1.0) ** 2}
    exact = {f"{m:02b} 00{bit}": 0.25 * (p_one[m] if bit else 1 - p_one[m]) for m in range(4) for bit in (0, 1)}
    exact = {key: p for key, p in exact.items() if p > 0}
    assert set(counts) <= set(exact)
    assert chisquare([counts.get(k, 0) for k in exact], [shots * p for p in exact.values()]).pvalue > P_VALUE


def test_initialize_and_state_preparation_without_transpile(backend):
    from qiskit.circuit.library import StatePreparation
    from qiskit.quantum_info import random_statevector

    psi = random_statevector(8, seed=3).data
    qc = QuantumCircuit(4)
    qc.initialize(psi, [0, 1, 3])
    qc.h(2)
    qc.append(StatePreparation(random_statevector(4, seed=4).data), [2, 0])
    reference = Statevector(qc)
    qc.save_statevector()
    assert np.abs(backend.run(qc).result().get_statevector().data - reference.data).max() < 1e-12
    entangled = QuantumCircuit(2, 1)  # initialize after an entangling gate resets: a random projection
    entangled.h(0)
    entangled.cx(0, 1)
    entangled.initialize([0, 1], [1])
    entangled.measure(0, 0)
    counts = backend.run(entangled, shots=4000, seed_simulator=2).result().get_counts()
    assert chisquare([counts.get("0", 0), counts.get("1", 0)]).pvalue > P_VALUE
