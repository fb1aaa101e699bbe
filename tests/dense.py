"""Independent dense references for small circuits: full 2^N x 2^N operators built from
Kronecker products and a qubit permutation, never through the engine's views."""
import numpy as np


def qubit_permutation(n_qubits: int, targets) -> np.ndarray:
    """P (2^N x 2^N) moving qubit targets[j] to position j and the other qubits above them in order."""
    others = [q for q in range(n_qubits) if q not in targets]
    new_position = {q: j for j, q in enumerate(list(targets) + others)}
    dim = 1 << n_qubits
    perm = np.zeros((dim, dim))
    for i in range(dim):
        j = sum(((i >> q) & 1) << new_position[q] for q in range(n_qubits))
        perm[j, i] = 1.0
    return perm


def dense_operator(n_qubits: int, targets, matrix) -> np.ndarray:
    """The gate as a full operator: P^T (I ⊗ U) P, U acting on the lowest d qubits after P."""
    d = len(targets)
    perm = qubit_permutation(n_qubits, targets)
    return perm.T @ np.kron(np.eye(1 << (n_qubits - d)), matrix) @ perm


def dense_state(circuit, initial=None) -> np.ndarray:
    dim = 1 << circuit.n_qubits
    state = np.zeros(dim, complex) if initial is None else np.array(initial, complex)
    if initial is None:
        state[0] = 1.0
    for gate in circuit.gates:
        state = dense_operator(circuit.n_qubits, gate.targets, gate.matrix) @ state
    return state
