"""gemm_backend.native.cpu_chunks and the cublas backend's CPU path through it, against dense
2^N x 2^N operators (tests/dense.py): any targets, chunks smaller than, equal to and larger than
the state, and the engine's results on contiguous and scattered gates."""
import numpy as np
import pytest

import gemm_backend
from circuits import Circuit, Gate, haar_unitary
from gemm_backend.native.cpu_chunks import apply_in_chunks
from qsim import Simulator

from .dense import dense_operator, dense_state

N_QUBITS = 9
TARGET_SETS = [(0,), (8,), (0, 1), (3, 4, 5), (0, 4, 8), (1, 2, 6, 7), (0, 2, 3, 5, 8), (4, 7, 1)]


def _random_state(rng, n_qubits):
    state = rng.standard_normal(1 << n_qubits) + 1j * rng.standard_normal(1 << n_qubits)
    return state / np.linalg.norm(state)


@pytest.mark.parametrize("targets", TARGET_SETS)
@pytest.mark.parametrize("chunk_amplitudes", [2, 1 << 5, 1 << N_QUBITS, 1 << 12])
def test_chunks_apply_the_gate_as_the_dense_operator(targets, chunk_amplitudes, rng):
    ordered = tuple(sorted(targets))
    u = haar_unitary(1 << len(targets), rng)
    state = _random_state(rng, N_QUBITS)
    expected = dense_operator(N_QUBITS, ordered, u) @ state
    apply_in_chunks(u, state, ordered, chunk_amplitudes)
    np.testing.assert_allclose(state, expected, atol=1e-13)


@pytest.mark.parametrize("targets", TARGET_SETS)
def test_the_cublas_backend_on_the_cpu_applies_scattered_gates_in_place(targets, rng):
    backend = gemm_backend.get("cublas")
    ordered = tuple(sorted(targets))
    u = haar_unitary(1 << len(targets), rng)
    state = _random_state(rng, N_QUBITS)
    expected = dense_operator(N_QUBITS, ordered, u) @ state
    assert backend.apply_scattered(u, state, ordered)
    assert backend.last_call_info == {"kernel": "numpy chunks"}
    np.testing.assert_allclose(state, expected, atol=1e-13)


def test_the_engine_on_the_cpu_matches_the_dense_circuit(rng):
    gates = [Gate(targets, haar_unitary(1 << len(targets), rng)) for targets in TARGET_SETS * 2]
    circuit = Circuit(N_QUBITS, gates)
    result = Simulator(backend="cublas", device="cpu", progress=False).run(circuit)
    np.testing.assert_allclose(result.state, dense_state(circuit), atol=1e-12)
    kernels = {info["kernel"] for info in result.gate_info}
    assert kernels == {"numpy chunks", "zgemm"}  # strides <= 2 and scattered gates in chunks, the rest whole
