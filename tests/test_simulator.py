import numpy as np
import pytest

from circuits import Circuit, CircuitError, Gate, brickwork
from gemm_backend import BackendError
from qsim import SimulationError, Simulator

from .dense import dense_state


def test_brickwork_run_matches_dense_and_reports():
    circuit = brickwork(8, 3, 4, seed=5)
    result = Simulator(device="cpu", progress=False).run(circuit)
    expected = dense_state(circuit)
    assert np.abs(result.state_vector() - expected).max() < 1e-12
    assert result.amplitude(0) == pytest.approx(expected[0], abs=1e-13)
    assert abs(result.norm() - 1) < 1e-13
    probs = result.probabilities(["00000000", "00000011", 5])
    assert probs == pytest.approx(np.abs(expected[[0, 3, 5]]) ** 2, abs=1e-14)
    report = result.to_dict()
    assert report["gates"] == len(circuit) == len(report["per_gate"])
    assert report["per_gate"][0]["targets"] == [0, 1, 2]
    assert report["peak_memory_bytes"] > 0 and report["total_time_s"] > 0
    assert report["effective_tflops"] == pytest.approx(
        sum(8 * 2**8 * 2**3 for _ in circuit.gates) / result.total_time_s / 1e12)


def test_initial_state_is_used_and_checked(rng):
    psi = rng.standard_normal(16) + 1j * rng.standard_normal(16)
    psi /= np.linalg.norm(psi)
    circuit = brickwork(4, 2, 2, seed=1)
    result = Simulator(device="cpu", progress=False).run(circuit, initial_state=psi)
    assert np.abs(result.state - dense_state(circuit, psi)).max() < 1e-12
    with pytest.raises(SimulationError, match="16"):
        Simulator(device="cpu").run(circuit, initial_state=psi[:8])
    with pytest.raises(SimulationError, match="unit norm"):
        Simulator(device="cpu").run(circuit, initial_state=2 * psi)


def test_state_too_large_is_refused_before_allocating():
    circuit = Circuit(44, [Gate((0,), np.eye(2))])
    with pytest.raises(SimulationError, match="44 qubits need .* GiB"):
        Simulator(device="cpu").run(circuit)


def test_bad_device_backend_and_input():
    with pytest.raises(SimulationError, match="unknown device"):
        Simulator(device="tpu")
    with pytest.raises(BackendError, match="unknown backend"):
        Simulator(backend="nope", device="cpu")
    with pytest.raises(BackendError, match="takes no option"):
        Simulator(backend="cublas", device="cpu", rho=1.0)
    with pytest.raises(CircuitError, match="circuits.Circuit"):
        Simulator(device="cpu").run("not a circuit")
    result = Simulator(device="cpu", progress=False).run(brickwork(3, 1, 1))
    with pytest.raises(SimulationError, match="bitstring"):
        result.probabilities(["01"])
    with pytest.raises(SimulationError, match="outside"):
        result.amplitude(8)


@pytest.mark.parametrize("options, message", [
    ({"out_of_place": "yes"}, "out_of_place must be 'auto', True or False, got 'yes'"),
    ({"out_of_place": 1}, "out_of_place must be 'auto', True or False, got 1"),
    ({"out_of_place": None}, "out_of_place must be 'auto', True or False, got None"),
    ({"progress": "no"}, r"progress must be True, False or None \(only on a terminal\), got 'no'"),
    ({"progress": 0}, "progress must be True, False or None"),
])
def test_simulator_options_are_not_coerced(options, message):
    with pytest.raises(SimulationError, match=message):
        Simulator(device="cpu", **options)


@pytest.mark.parametrize("seed", [1.5, True, -1, "7", 2**63])
def test_a_bad_seed_is_refused_even_where_it_is_unused(seed):
    circuit = brickwork(3, 1, 1)  # no measurement: the seed would be ignored
    with pytest.raises(SimulationError, match="seed must be an integer in \\[0, 2\\^63\\)"):
        Simulator(device="cpu", progress=False).run(circuit, seed=seed)
    assert Simulator(device="cpu", progress=False, out_of_place=False).run(circuit, seed=np.int64(5)).norm() > 0.99


def test_runs_are_reproducible():
    circuit = brickwork(10, 4, 3, seed=2)
    a = Simulator(device="cpu", progress=False).run(circuit).state
    b = Simulator(device="cpu", progress=False).run(brickwork(10, 4, 3, seed=2)).state
    assert np.array_equal(a, b)


def test_in_place_chunked_path_matches_out_of_place():
    circuit = brickwork(10, 5, 3, seed=4)
    tiny = 16 * 32 * 8  # forces many chunks
    a = Simulator(device="cpu", progress=False, out_of_place=False, workspace_bytes=tiny).run(circuit).state
    b = Simulator(device="cpu", progress=False, out_of_place=True).run(circuit).state
    assert np.abs(a - b).max() < 1e-13


@pytest.mark.parametrize("initial_state, message", [
    (np.ones((4, 4)) / 4, r"flat array of 16 numbers .*shape \(4, 4\)"),
    ("0000", "flat array of 16 numbers .*dtype <U4"),
    (np.eye(16, dtype=bool)[0], "flat array of 16 numbers .*dtype bool"),
    (np.ones(8) / 8**0.5, "has 8 amplitudes; 4 qubits need 16"),
])
def test_bad_initial_states_are_refused(initial_state, message):
    """Not reshaped, not parsed from text: an initial state is a flat array of 2^N numbers."""
    with pytest.raises(SimulationError, match=message):
        Simulator(device="cpu", progress=False).run(brickwork(4, 2, 1), initial_state)


def test_result_indices_must_be_integers():
    """amplitude(0.5) or probabilities([True]) would read another amplitude if truncated."""
    result = Simulator(device="cpu", progress=False).run(brickwork(4, 2, 2, seed=1))
    assert result.amplitude(np.int64(3)) == result.amplitude(3)
    assert result.probabilities([np.int32(3)])[0] == abs(result.amplitude(3)) ** 2
    for index in (0.5, 1.0, True, "3"):
        with pytest.raises(SimulationError, match="an amplitude index must be an integer"):
            result.amplitude(index)
    for index in (True, 2.0):
        with pytest.raises(SimulationError, match="a basis-state index must be an integer"):
            result.probabilities([index])
    with pytest.raises(SimulationError, match="amplitude index 16 is outside"):
        result.amplitude(16)
