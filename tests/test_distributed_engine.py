"""The distributed engine on P = 2, 4, 8 simulated ranks against the single-device engine:
bit for bit for INT8 with fixed splits, to 1e-13 for cublas, on brickwork and Qiskit circuits
whose gates reach the global qubits; the readers (amplitude, norm, sampling, the dd reference)
and the errors."""
import numpy as np
import pytest
from qiskit import QuantumCircuit
from qiskit.circuit.random import random_circuit
from qiskit.quantum_info import Statevector

from circuits import Circuit, Gate, brickwork, from_qiskit, fuse
from qsim import SimulationError, Simulator, sampling
from qsim.accuracy import accuracy_report
from qsim.distributed import DistributedSimulator, run_simulated
from qsim.reference import reference_state

from .helpers import crandn

QUIET = {"device": "cpu", "progress": False}


def distributed(circuit, world_size, backend="cublas", reader=None, **options):
    """Run on simulated ranks; returns (reader(result) of every rank, rank 0's result)."""
    reader = reader or (lambda result: result.state_vector())

    def job(comm):
        result = DistributedSimulator(comm, backend, **QUIET, **options).run(circuit)
        return reader(result), result

    outputs = run_simulated(world_size, job)
    return [value for value, _ in outputs], outputs[0][1]


def single(circuit, backend="cublas", **options):
    return Simulator(backend, **QUIET, **options).run(circuit)


BRICKWORK = [(12, 2), (12, 3), (14, 4), (12, 5)]  # each touches the top qubit


@pytest.mark.parametrize("world_size", [2, 4, 8])
@pytest.mark.parametrize("n_qubits, gate_size", BRICKWORK)
def test_brickwork_int8_is_bit_for_bit(world_size, n_qubits, gate_size):
    circuit = brickwork(n_qubits, gate_size, 5, seed=gate_size)
    states, result = distributed(circuit, world_size, "int8-9")
    expected = single(circuit, "int8-9").state
    assert all(np.array_equal(state, expected) for state in states)
    assert result.exchanges, "the circuit must touch the global qubits"
    assert {info["splits"] for info in result.gate_info} == {9}


@pytest.mark.parametrize("world_size", [2, 4, 8])
@pytest.mark.parametrize("n_qubits, gate_size", BRICKWORK)
def test_brickwork_cublas_to_1e_13(world_size, n_qubits, gate_size):
    circuit = brickwork(n_qubits, gate_size, 5, seed=gate_size)
    (state, *_), result = distributed(circuit, world_size)
    assert np.abs(state - single(circuit).state).max() < 1e-13
    assert result.exchanges


def qiskit_circuits():
    ghz = QuantumCircuit(10)
    ghz.h(9)
    for q in range(9, 0, -1):
        ghz.cx(q, q - 1)
    ghz.ccx(9, 0, 5)
    ghz.rzz(0.3, 8, 2)
    yield "ghz", from_qiskit(ghz)
    yield "random", from_qiskit(random_circuit(10, 8, max_operands=3, seed=7))
    yield "random-fused", fuse(from_qiskit(random_circuit(11, 10, max_operands=2, seed=3)), 3)


@pytest.mark.parametrize("world_size", [2, 4, 8])
@pytest.mark.parametrize("name, circuit", list(qiskit_circuits()))
def test_qiskit_circuits_with_gates_on_global_qubits(world_size, name, circuit):
    (exact_state, *_), exact = distributed(circuit, world_size, "int8-9")
    assert exact.exchanges and np.array_equal(exact_state, single(circuit, "int8-9").state)
    (state, *_), _ = distributed(circuit, world_size)
    assert np.abs(state - single(circuit).state).max() < 1e-13
    gates = [(g.targets, g.matrix) for g in circuit.gates]
    reference = Statevector.from_int(0, 2 ** circuit.n_qubits)
    for targets, matrix in gates:
        reference = reference.evolve(matrix, qargs=list(targets))
    assert np.abs(state - reference.data).max() < 1e-12


def test_int8_auto_stays_within_double_precision_of_the_single_device_run():
    circuit = brickwork(12, 4, 4, seed=2)
    (state, *_), _ = distributed(circuit, 4, "int8-auto")
    assert np.abs(state - single(circuit, "int8-auto").state).max() < 1e-13


def test_final_state_is_returned_in_logical_order_from_a_permuted_layout():
    circuit = brickwork(10, 3, 6, seed=1)
    states, result = distributed(circuit, 4, "int8-9", reader=lambda r: (r.state_vector(), r.state.copy()))
    logical, _ = states[0]
    assert result.layout.physical_of != tuple(range(10)), "the run must end in a permuted layout"
    physical = np.concatenate([local for _, local in states])
    assert np.array_equal(logical, single(circuit, "int8-9").state)
    assert np.array_equal(result.layout.to_logical_order(physical), logical)


def test_initial_state_is_split_over_the_ranks(rng):
    psi = crandn(rng, 1 << 9)
    psi /= np.linalg.norm(psi)
    circuit = brickwork(9, 3, 4, seed=5)

    def job(comm):
        return DistributedSimulator(comm, "int8-9", **QUIET).run(circuit, initial_state=psi).state_vector()

    expected = Simulator("int8-9", **QUIET).run(circuit, initial_state=psi).state
    assert np.array_equal(run_simulated(4, job)[1], expected)


def test_amplitudes_norm_and_probabilities_agree_with_the_single_device():
    circuit = brickwork(10, 3, 5, seed=8)
    expected = single(circuit, "int8-9")
    indices = [0, 1, 517, 1023]

    def read(result):
        return ([result.amplitude(i) for i in indices], result.norm(),
                result.probabilities(["0" * 10, "1" * 10, 5]).tolist())

    values, _ = distributed(circuit, 8, "int8-9", reader=read)
    for amplitudes, norm, probabilities in values:
        assert amplitudes == [expected.amplitude(i) for i in indices]
        assert norm == pytest.approx(expected.norm(), abs=1e-15)
        assert probabilities == pytest.approx(expected.probabilities(["0" * 10, "1" * 10, 5]).tolist(), abs=1e-16)


def test_sampling_equals_the_single_device_draws_when_chunks_match(monkeypatch):
    monkeypatch.setattr(sampling, "CHUNK_QUBITS", 7)  # chunks of 2^7 on both sides (8 ranks x 2^7)
    circuit = Circuit(10, brickwork(7, 2, 3, seed=4).gates)  # no gate on the global qubits 7..9
    counts, result = distributed(circuit, 8, "int8-9", reader=lambda r: r.sample_counts([0, 9, 4, 7], 5000, seed=3))
    assert not result.exchanges and all(c == counts[0] for c in counts)
    assert counts[0] == sampling.sample_counts(single(circuit, "int8-9").state, [0, 9, 4, 7], 5000, seed=3)


def test_sampling_on_a_permuted_layout_follows_the_state(monkeypatch):
    from scipy.stats import chisquare

    monkeypatch.setattr(sampling, "CHUNK_QUBITS", 4)
    circuit = brickwork(9, 3, 6, seed=6)
    measured, shots = [8, 0, 3], 100_000

    def read(result):
        return result.sample_counts(measured, shots, seed=11), result.state.copy(), result.layout

    values, _ = distributed(circuit, 4, "int8-9", reader=read)
    counts, _, layout = values[0]
    assert layout.physical_of != tuple(range(9)) and all(v[0] == counts for v in values)
    physical = np.concatenate([local for _, local, _ in values])
    bits = [layout.physical_of[q] for q in measured]  # the same draws from the undivided physical vector
    assert counts == sampling.sample_counts(physical, bits, shots, seed=11)
    exact = Statevector(single(circuit).state).probabilities_dict(qargs=measured)
    keys = sorted(exact)
    observed = np.array([counts.get(k, 0) for k in keys])
    assert chisquare(observed, np.array([exact[k] for k in keys]) * shots).pvalue > 1e-3


def test_dd_reference_runs_distributed():
    circuit = brickwork(10, 3, 5, seed=9)
    accuracies, result = _distributed_with_reference(circuit, 4)
    hi, lo = reference_state(circuit, "cpu", progress=False)
    expected = accuracy_report(single(circuit, "int8-9").state, hi, lo)
    assert result.exchanges and all(a == accuracies[0] for a in accuracies)
    for key in ("l2_error", "infidelity", "max_rel_amplitude_error", "mean_rel_amplitude_error", "rel_error_re_amp0"):
        assert accuracies[0][key] == pytest.approx(expected[key], rel=1e-6), key
    assert accuracies[0]["amplitudes_compared"] == expected["amplitudes_compared"]
    assert 0 < accuracies[0]["l2_error"] < 1e-13


def _distributed_with_reference(circuit, world_size):
    def job(comm):
        result = DistributedSimulator(comm, "int8-9", **QUIET).run(circuit, reference="dd")
        return result.accuracy, result

    outputs = run_simulated(world_size, job)
    return [a for a, _ in outputs], outputs[0][1]


def test_report_splits_compute_and_exchange():
    circuit = brickwork(11, 4, 4, seed=3)
    reports, result = distributed(circuit, 4, reader=lambda r: r.to_dict())
    report = reports[0]
    split = report["distributed"]
    assert split["ranks"] == 4 and split["global_qubits"] == 2 and split["local_qubits"] == 9
    assert split["exchanges"] == len(result.exchanges) == len(split["exchange_log"]) > 0
    assert split["compute_time_s"] > 0 and split["exchange_time_s"] > 0
    assert report["total_time_s"] == pytest.approx(split["compute_time_s"] + split["exchange_time_s"])
    assert report["gates"] == len(circuit) == len(report["per_gate"])
    assert all("physical_targets" in g and "targets" in g for g in report["per_gate"])
    assert [e["bytes_sent"] for e in split["exchange_log"]] == [
        int(16 * 2**9 * (1 - 2.0 ** -len(e["pairs"]))) for e in split["exchange_log"]]
    assert len(report["backend_statistics"]) == 4 and report["norm"] == pytest.approx(1, abs=1e-13)
    assert all(r == report for r in reports)


def test_single_rank_without_communicator_is_the_single_device_engine():
    circuit = brickwork(9, 4, 3, seed=1)
    result = DistributedSimulator(None, "int8-9", **QUIET).run(circuit)
    assert np.array_equal(result.state_vector(), single(circuit, "int8-9").state) and not result.exchanges


# -- errors ---------------------------------------------------------------------------------
def run_on(world_size, circuit, **options):
    def job(comm):
        return DistributedSimulator(comm, **{**QUIET, **options}).run(circuit)

    return run_simulated(world_size, job)


def test_world_size_must_be_a_power_of_two():
    with pytest.raises(SimulationError, match="power of two"):
        run_on(3, brickwork(6, 2, 1))


def test_more_global_qubits_than_the_state_has():
    with pytest.raises(SimulationError, match="cannot be split over 8 ranks.*at most 4 ranks"):
        run_on(8, brickwork(3, 1, 1))


def test_gate_wider_than_a_rank_slice():
    with pytest.raises(SimulationError, match="gate 0 acts on 5 qubits.*at most 2 ranks"):
        run_on(4, brickwork(6, 5, 1))


def test_memory_shortfall_names_every_rank_before_allocating():
    with pytest.raises(SimulationError, match=r"each rank needs .* GiB \(slice .*rank 0 \(cpu\) has .* short by .*"
                                              r"rank 3 \(cpu\) has .* short by"):
        run_on(4, brickwork(10, 3, 2), memory_fraction=1e-12)


def test_bad_options_and_inputs():
    circuit = brickwork(6, 2, 1)
    with pytest.raises(SimulationError, match="reference must be"):
        DistributedSimulator(None, **QUIET).run(circuit, reference="exact")
    with pytest.raises(SimulationError, match="out_of_place"):
        DistributedSimulator(None, out_of_place="maybe", **QUIET)
    with pytest.raises(SimulationError, match="exchange_bytes"):
        DistributedSimulator(None, exchange_bytes=0, **QUIET)
    with pytest.raises(SimulationError, match="memory_fraction"):
        DistributedSimulator(None, memory_fraction=1.5, **QUIET)
    with pytest.raises(SimulationError, match="amplitude index"):
        DistributedSimulator(None, **QUIET).run(circuit).amplitude(64)


def test_one_rank_failing_stops_all_ranks():
    circuit = Circuit(6, [Gate((5,), np.eye(2)), Gate((0,), np.eye(2))])

    def job(comm):
        simulator = DistributedSimulator(comm, **QUIET)
        if comm.rank == 1:
            simulator.backend.apply_batched = None  # this rank fails at its first gate
        return simulator.run(circuit)

    with pytest.raises(TypeError):  # rank 1's own error, not the PeerLostError it caused on rank 0
        run_simulated(2, job)
