"""Dynamic circuits run as quantum trajectories, checked against an independent dense simulation
(tests/dense.py: full 2^N vectors, 2^N x 2^N projectors and operators, conditions evaluated from
their fields) fed the same outcome sequence, and outcome distributions over 2000 trajectories
against the exact distribution from enumerating every branch in that dense simulation.

Total-variation bound: for n independent draws from p, E[TV(p_hat, p)] <= 1/2 sum_i
sqrt(p_i (1 - p_i) / n) (Jensen on each |p_hat_i - p_i|), and TV changes by at most 1/n when one
draw changes, so by McDiarmid P(TV >= E[TV] + t) <= exp(-2 n t^2). The tests allow
E-bound + sqrt(ln(1/delta) / (2n)) with delta = 1e-6: a correct simulator fails once in a
million runs; a wrong probability by more than the bound (about 0.05-0.15 here) fails.
"""
import math

import numpy as np
import pytest

from circuits import Circuit, ClbitTest, Condition, Gate, Measure, Reset, brickwork, fuse, monitored_brickwork
from circuits.qiskit_import import from_qasm, from_qiskit
from gemm_backend.arrays import gpu_available, to_host
from qsim import SimulationError, Simulator, measurement
from qsim.trajectory import run_trajectories, trajectory_seed

from .dense import DenseDynamic, dense_state

TRAJECTORIES = 2000
DELTA = 1e-6
requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

TELEPORTATION_QASM2 = """OPENQASM 2.0;
include "qelib1.inc";
// teleportation_n3 in QASMBench's style: q[0]'s state moves to q[2]
qreg q[3];
creg c0[1];
creg c1[1];
creg c2[1];
u3(0.9,0.4,-0.3) q[0];
h q[1];
cx q[1],q[2];
barrier q;
cx q[0],q[1];
h q[0];
measure q[0] -> c0[0];
measure q[1] -> c1[0];
if(c0==1) z q[2];
if(c1==1) x q[2];
"""

IPE_QASM2 = """OPENQASM 2.0;
include "qelib1.inc";
// iterative phase estimation of u1(2*pi*PHASE) on its eigenstate |1>, three bits, one ancilla reused
qreg q[2];
creg c[3];
x q[1];
h q[0];
cu1(8*pi*PHASE) q[0],q[1];
h q[0];
measure q[0] -> c[0];
reset q[0];
h q[0];
cu1(4*pi*PHASE) q[0],q[1];
if(c==1) u1(-pi/2) q[0];
h q[0];
measure q[0] -> c[1];
reset q[0];
h q[0];
cu1(2*pi*PHASE) q[0],q[1];
if(c==1) u1(-pi/4) q[0];
if(c==2) u1(-pi/2) q[0];
if(c==3) u1(-3*pi/4) q[0];
h q[0];
measure q[0] -> c[2];
"""

SYNDROME_QASM2 = """OPENQASM 2.0;
include "qelib1.inc";
// three-qubit bit-flip code: encode, a partial flip, syndrome on two ancillas, correction, reuse
qreg q[5];
creg syn[2];
creg out[3];
ry(0.7) q[0];
cx q[0],q[1];
cx q[0],q[2];
rx(0.9) q[1];
cx q[0],q[3];
cx q[1],q[3];
cx q[1],q[4];
cx q[2],q[4];
measure q[3] -> syn[0];
measure q[4] -> syn[1];
if(syn==1) x q[0];
if(syn==3) x q[1];
if(syn==2) x q[2];
reset q[3];
reset q[4];
h q[3];
cx q[3],q[4];
measure q[0] -> out[0];
measure q[1] -> out[1];
measure q[2] -> out[2];
"""

RESET_QASM2 = """OPENQASM 2.0;
include "qelib1.inc";
// resets of entangled and superposed qubits, reused afterwards
qreg q[3];
creg c[4];
h q[0];
cx q[0],q[1];
ry(1.1) q[2];
cx q[2],q[0];
reset q[0];
measure q[1] -> c[0];
rx(0.6) q[0];
cx q[0],q[2];
reset q[1];
reset q[2];
h q[1];
measure q[0] -> c[1];
measure q[1] -> c[2];
measure q[2] -> c[3];
"""

DYNAMIC_QASM3 = """OPENQASM 3.0;
include "stdgates.inc";
qubit[3] q;
bit[2] c;
bit[3] out;
rx(1.2) q[0];
h q[1];
cx q[1], q[2];
c[0] = measure q[0];
if (c[0]) { x q[1]; } else { ry(0.8) q[2]; }
reset q[0];
cx q[2], q[0];
c[1] = measure q[2];
if (c == 3) { h q[1]; }
if (!c[1]) { rz(0.5) q[1]; sx q[1]; }
out = measure q;
"""


def qiskit_nested_if():
    from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
    from qiskit.circuit.classical import expr

    q, c, d = QuantumRegister(3, "q"), ClassicalRegister(2, "c"), ClassicalRegister(1, "d")
    qc = QuantumCircuit(q, c, d)
    qc.h(0)
    qc.ry(0.7, 1)
    qc.measure(0, c[0])
    qc.measure(1, c[1])
    with qc.if_test((c[0], 1)) as else_:
        qc.cx(1, 2)
        with qc.if_test(expr.equal(c, 3)):
            qc.h(2)
    with else_:
        qc.rx(0.3, 2)
    with qc.if_test(expr.logic_not(c[1])):
        qc.reset(1)
        qc.ry(1.3, 1)
    qc.measure(2, d[0])
    qc.measure(1, c[0])
    return from_qiskit(qc)


def ipe(phase):
    return from_qasm(IPE_QASM2.replace("PHASE", repr(phase)))


DYNAMIC_CIRCUITS = {
    "teleportation": lambda: from_qasm(TELEPORTATION_QASM2),
    "ipe_exact": lambda: ipe(5 / 8),
    "ipe_inexact": lambda: ipe(0.3),
    "syndrome": lambda: from_qasm(SYNDROME_QASM2),
    "resets": lambda: from_qasm(RESET_QASM2),
    "qiskit_nested_if": qiskit_nested_if,
}


def dynamic_circuit(name):
    """One of DYNAMIC_CIRCUITS; they are read by Qiskit's parsers (skips where qiskit is missing)."""
    pytest.importorskip("qiskit")
    return DYNAMIC_CIRCUITS[name]()


def qasm3_circuit():
    return from_qasm(DYNAMIC_QASM3)  # qiskit-qasm3-import is a dependency: no skip


def simulator(backend="cublas", device="cpu"):
    return Simulator(backend=backend, device=device, progress=False)


def tv_bound(exact: dict, n: int) -> float:
    expected = 0.5 * sum(math.sqrt(p * (1 - p) / n) for p in exact.values())
    return expected + math.sqrt(math.log(1 / DELTA) / (2 * n))


def total_variation(samples: list, exact: dict) -> float:
    n = len(samples)
    observed = {}
    for value in samples:
        observed[value] = observed.get(value, 0) + 1
    keys = set(observed) | set(exact)
    return 0.5 * sum(abs(observed.get(k, 0) / n - exact.get(k, 0.0)) for k in keys)


def assert_matches_dense_replay(circuit, result, tolerance=1e-12):
    """The trajectory's final state, classical bits and outcome probabilities equal the dense
    simulation fed the same outcomes."""
    state, bits, probabilities = DenseDynamic(circuit).replay(result.trajectory["events"])
    assert np.abs(result.state_vector() - state).max() < tolerance
    assert int(result.trajectory["clbits_hex"], 16) == sum(b << c for c, b in enumerate(bits))
    recorded = [event["probability"] for event in result.trajectory["events"]]
    assert np.allclose(recorded, probabilities, rtol=1e-12, atol=0)


def assert_distribution(circuit, sim, seed=11):
    exact = DenseDynamic(circuit).distribution()
    assert math.isclose(sum(exact.values()), 1.0, abs_tol=1e-9)
    records, _ = run_trajectories(sim, circuit, TRAJECTORIES, seed, progress=False)
    samples = [int(r["clbits_hex"], 16) for r in records]
    assert set(samples) <= set(exact)
    assert total_variation(samples, exact) < tv_bound(exact, TRAJECTORIES)


# -- against the dense replay ----------------------------------------------------------------
@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("name", list(DYNAMIC_CIRCUITS))
def test_trajectories_equal_dense_replay(name, fused):
    circuit = dynamic_circuit(name)
    assert circuit.is_dynamic
    run_circuit = fuse(circuit, 3) if fused else circuit
    for seed in range(12):
        result = simulator().run(run_circuit, seed=seed)
        assert result.trajectory["seed"] == seed
        # The fused circuit has the same measurements in the same order, so the unfused dense
        # replay applies to it too.
        assert_matches_dense_replay(circuit, result)


def test_qasm3_dynamic_circuit_equals_dense_replay_and_distribution():
    circuit = qasm3_circuit()
    assert circuit.n_clbits == 5 and circuit.clbit_registers == (("c", 2), ("out", 3))
    for seed in range(8):
        assert_matches_dense_replay(circuit, simulator().run(circuit, seed=seed))
    assert_distribution(circuit, simulator())


def test_teleportation_moves_the_state_whatever_the_outcomes():
    """A check apart from the dense replay: after the corrections q2 holds u3(0.9, 0.4, -0.3)|0>
    and q0, q1 hold the measured bits, so amplitude m0 + 2 m1 + 4 b is psi_b."""
    QuantumCircuit = pytest.importorskip("qiskit").QuantumCircuit
    qc = QuantumCircuit(1)
    qc.u(0.9, 0.4, -0.3, 0)
    psi = dense_state(from_qiskit(qc))
    circuit = dynamic_circuit("teleportation")
    seen = set()
    for seed in range(16):
        result = simulator().run(circuit, seed=seed)
        m0, m1 = int(result.trajectory["clbits"].split()[-1]), int(result.trajectory["clbits"].split()[-2])
        seen.add((m0, m1))
        state = result.state_vector()
        teleported = state[[m0 + 2 * m1, m0 + 2 * m1 + 4]]
        assert np.abs(np.abs(np.vdot(psi, teleported)) - 1) < 1e-12
    assert len(seen) == 4  # every correction branch was exercised


def test_exact_phase_is_read_in_every_trajectory():
    records, _ = run_trajectories(simulator(), dynamic_circuit("ipe_exact"), 64, seed=3, progress=False)
    assert {r["clbits"] for r in records} == {"101"}
    assert all(event["probability"] == pytest.approx(1.0, abs=1e-12) for r in records for event in r["events"])


def test_reset_leaves_the_qubit_in_zero():
    circuit = dynamic_circuit("resets")
    for seed in range(10):
        result = simulator().run(circuit, seed=seed)
        # The last three measurements follow resets: q1 after h is random, q2 reads 0 always.
        assert result.trajectory["clbits"][0] == "0"
    hadamard = np.array([[1, 1], [1, -1]]) / np.sqrt(2)
    circuit = Circuit(2, [Gate((0,), hadamard), Gate((1,), hadamard), Reset((0, 1))])
    outcomes = set()
    for seed in range(12):
        result = simulator().run(circuit, seed=seed)
        state = result.state_vector()
        assert state[0] == pytest.approx(1.0, abs=1e-15) and np.abs(state[1:]).max() == 0.0
        outcomes.add(result.trajectory["events"][0]["outcome"])
    assert outcomes == {0, 1, 2, 3}


# -- distributions over 2000 trajectories ------------------------------------------------------
@pytest.mark.parametrize("name", ["teleportation", "ipe_inexact", "syndrome", "resets", "qiskit_nested_if"])
def test_outcome_distribution_matches_branch_enumeration(name):
    assert_distribution(dynamic_circuit(name), simulator())


def monitored_with_final_measurement(rate, seed=5):
    """monitored_brickwork (4 qubits, 2-qubit gates, depth 4) with every qubit measured at the
    end into extra classical bits, so that even p = 0 has a distribution to compare."""
    circuit = monitored_brickwork(4, 2, 4, rate, seed)
    final = Measure((0, 1, 2, 3), tuple(range(circuit.n_clbits, circuit.n_clbits + 4)))
    return Circuit(4, list(circuit.gates) + [final], n_clbits=circuit.n_clbits + 4)


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.5])
def test_monitored_brickwork_distribution(rate):
    circuit = monitored_with_final_measurement(rate)
    measured_mid_circuit = sum(len(op.qubits) for op in circuit.gates if isinstance(op, Measure)) - 4
    assert (measured_mid_circuit == 0) == (rate == 0.0)
    assert_distribution(circuit, simulator())
    for seed in range(5):
        assert_matches_dense_replay(circuit, simulator().run(circuit, seed=seed))


def test_monitored_brickwork_without_final_measurement_at_rate_zero_is_brickwork():
    plain = simulator().run(brickwork(6, 3, 4, seed=2)).state_vector()
    monitored = simulator().run(monitored_brickwork(6, 3, 4, 0.0, seed=2)).state_vector()
    assert np.array_equal(plain, monitored)


# -- reproducibility -------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["int8-9", "int8-auto"])
def test_fixed_seed_gives_identical_outcomes_and_bits(backend):
    circuit = monitored_brickwork(8, 3, 6, 0.3, seed=4)
    first = simulator(backend).run(circuit, seed=21)
    second = simulator(backend).run(circuit, seed=21)
    assert first.trajectory["events"] == second.trajectory["events"]
    assert np.array_equal(first.state.view(np.uint64), second.state.view(np.uint64))
    other = simulator(backend).run(circuit, seed=22)
    assert other.trajectory["events"] != first.trajectory["events"]
    assert_matches_dense_replay(circuit, first, tolerance=1e-11)


def test_outcomes_agree_across_backends():
    circuit = monitored_brickwork(8, 3, 6, 0.3, seed=4)
    events = [simulator(b).run(circuit, seed=8).trajectory["events"] for b in ("cublas", "int8-auto", "int8-9")]
    outcomes = [[e["outcome"] for e in run] for run in events]
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_trajectory_seeds_are_derived_deterministically():
    circuit = monitored_brickwork(5, 2, 3, 0.5, seed=1)
    records, last = run_trajectories(simulator(), circuit, 6, seed=9, progress=False)
    again, _ = run_trajectories(simulator(), circuit, 6, seed=9, progress=False)
    assert [r["seed"] for r in records] == [trajectory_seed(9, i) for i in range(6)]
    assert [r["events"] for r in records] == [r["events"] for r in again]
    assert len({r["seed"] for r in records}) == 6
    alone = simulator().run(circuit, seed=records[-1]["seed"])
    assert alone.trajectory["events"] == records[-1]["events"]
    assert np.array_equal(alone.state_vector(), last.state_vector())
    assert all(abs(r["norm"] - 1) < 1e-14 and r["time_s"] > 0 for r in records)


def test_unseeded_runs_report_their_seed_and_bad_seeds_are_refused():
    circuit = monitored_brickwork(4, 2, 2, 1.0, seed=0)
    result = simulator().run(circuit)
    again = simulator().run(circuit, seed=result.trajectory["seed"])
    assert again.trajectory["events"] == result.trajectory["events"]
    for bad in (-1, 2**63, 1.5, "7"):
        with pytest.raises(SimulationError, match="trajectory seed"):
            simulator().run(circuit, seed=bad)
    with pytest.raises(SimulationError, match="seed of a set of trajectories"):
        run_trajectories(simulator(), circuit, 2, seed=-1, progress=False)


def test_conditions_read_the_bits_written_so_far():
    """x on q1 when clbit 0 is 1 and clbit 1 (never written) is 0; the != test on the register."""
    circuit = Circuit(2, [
        Gate((0,), np.array([[0, 1], [1, 0]])),
        Measure((0,), (0,)),
        Gate((1,), np.array([[0, 1], [1, 0]]), condition=Condition((ClbitTest((0,), 1), ClbitTest((1,), 0)))),
        Measure((1,), (1,), condition=Condition((ClbitTest((0, 1), 3, equal=False),))),
    ], n_clbits=2)
    result = simulator().run(circuit, seed=0)
    assert result.trajectory["clbits"] == "11"
    assert [e["outcome"] for e in result.trajectory["events"]] == [1, 1]


def test_a_dynamic_circuit_too_large_is_refused_before_allocating():
    circuit = monitored_brickwork(40, 2, 1, 0.5, seed=0)
    with pytest.raises(SimulationError, match="40 qubits need"):
        simulator().run(circuit, seed=0)


# -- GPU: same outcomes and the same bits as the CPU -------------------------------------------
@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n_qubits, gate_size, rate, chunk_qubits", [(12, 3, 0.3, 22), (20, 5, 0.2, 14),
                                                                     (18, 2, 0.5, 22)])
def test_gpu_trajectory_is_bit_identical_to_cpu(monkeypatch, n_qubits, gate_size, rate, chunk_qubits):
    """int8-9 at a fixed seed: the same outcomes and the same final state, bit for bit; a chunk
    smaller than the state makes the reduction run over several chunks (high qubits too)."""
    monkeypatch.setattr(measurement, "REDUCTION_CHUNK_QUBITS", chunk_qubits)
    circuit = monitored_brickwork(n_qubits, gate_size, 4, rate, seed=7)
    cpu = simulator("int8-9", "cpu").run(circuit, seed=5)
    gpu = simulator("int8-9", "gpu").run(circuit, seed=5)
    assert gpu.trajectory["events"] == cpu.trajectory["events"]
    assert np.array_equal(to_host(gpu.state).view(np.uint64), cpu.state.view(np.uint64))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", list(DYNAMIC_CIRCUITS))
def test_gpu_dynamic_circuits_equal_dense_replay(name):
    circuit = dynamic_circuit(name)
    for seed in range(4):
        gpu = simulator("int8-9", "gpu").run(circuit, seed=seed)
        assert_matches_dense_replay(circuit, gpu)
        cpu = simulator("int8-9", "cpu").run(circuit, seed=seed)
        assert gpu.trajectory["events"] == cpu.trajectory["events"]
        assert np.array_equal(gpu.state_vector().view(np.uint64), cpu.state.view(np.uint64))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", ["resets", "syndrome"])
def test_gpu_outcome_distribution_matches_branch_enumeration(name):
    """The fused GPU collapse and reset (qsim.measurement_gpu) over 2000 trajectories."""
    assert_distribution(dynamic_circuit(name), simulator("int8-9", "gpu"))
