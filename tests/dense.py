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


# -- dynamic circuits: an independent replay with projectors and a branch enumeration ----------
PAULI_X = np.array([[0.0, 1.0], [1.0, 0.0]])


def condition_holds(condition, bits) -> bool:
    """The condition's meaning written out from its fields: every test compares the integer whose
    bit j is bits[test.clbits[j]] with test.value (== when test.equal, != otherwise)."""
    if condition is None:
        return True
    for test in condition.tests:
        value = sum(bits[c] << j for j, c in enumerate(test.clbits))
        if (value == test.value) != test.equal:
            return False
    return True


def projector(n_qubits: int, qubits, outcome: int) -> np.ndarray:
    """Diagonal 0/1 projector (2^N x 2^N) onto qubits[j] = bit j of outcome."""
    index = np.arange(1 << n_qubits)
    keep = np.ones(1 << n_qubits, dtype=bool)
    for j, q in enumerate(qubits):
        keep &= ((index >> q) & 1) == ((outcome >> j) & 1)
    return np.diag(keep.astype(float))


class DenseDynamic:
    """Full 2^N state, full 2^N x 2^N operators: the gates (dense_operator), measurement and
    reset as projectors P (the state becomes P psi / ||P psi||), reset's flips as X operators."""

    def __init__(self, circuit):
        self.circuit = circuit
        self.n = circuit.n_qubits
        self.operators = [dense_operator(self.n, op.targets, op.matrix) if hasattr(op, "matrix") else None
                          for op in circuit.gates]

    def initial(self):
        state = np.zeros(1 << self.n, complex)
        state[0] = 1.0
        return state, [0] * self.circuit.n_clbits

    def apply_outcome(self, op, state, bits, outcome):
        """(new state, new bits, probability) after op (a Measure or Reset) reads `outcome`."""
        projected = projector(self.n, op.qubits, outcome) @ state
        probability = float(np.vdot(projected, projected).real)
        state = projected / np.sqrt(probability) if probability > 0 else projected
        bits = list(bits)
        for j, q in enumerate(op.qubits):
            bit = (outcome >> j) & 1
            if hasattr(op, "clbits"):
                bits[op.clbits[j]] = bit
            elif bit:
                state = dense_operator(self.n, (q,), PAULI_X) @ state
        return state, bits, probability

    def replay(self, events):
        """Final (state, bits, probabilities) when the measurements and resets read the outcomes
        of `events` (Trajectory.record()["events"], in order)."""
        state, bits = self.initial()
        remaining = list(events)
        probabilities = []
        for op, operator in zip(self.circuit.gates, self.operators):
            if not condition_holds(op.condition, bits):
                continue
            if operator is not None:
                state = operator @ state
                continue
            event = remaining.pop(0)
            assert event["qubits"] == list(op.qubits)
            state, bits, probability = self.apply_outcome(op, state, bits, event["outcome"])
            probabilities.append(probability)
        assert not remaining
        return state, bits, probabilities

    def distribution(self, drop_below=1e-14) -> dict:
        """Exact probability of every final classical value (int, bit c = classical bit c), by
        following every branch of every measurement and reset."""
        branches = [(1.0, *self.initial())]
        for op, operator in zip(self.circuit.gates, self.operators):
            following = []
            for weight, state, bits in branches:
                if not condition_holds(op.condition, bits):
                    following.append((weight, state, bits))
                elif operator is not None:
                    following.append((weight, operator @ state, bits))
                else:
                    for outcome in range(1 << len(op.qubits)):
                        new_state, new_bits, p = self.apply_outcome(op, state, bits, outcome)
                        if weight * p > drop_below:
                            following.append((weight * p, new_state, new_bits))
            branches = following
        distribution = {}
        for weight, _state, bits in branches:
            value = sum(b << c for c, b in enumerate(bits))
            distribution[value] = distribution.get(value, 0.0) + weight
        return distribution
