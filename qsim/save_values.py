"""Values of save operations (circuits.Save) read off a state, and their combination over shots.

read_save(save, state) computes one value from the (2^N,) complex128 state (numpy or cupy) and
returns it on the host: the state vector (complex128, Qiskit order), {index: amplitude} of its
nonzero amplitudes, outcome probabilities of the saved qubits ((2^k,) float64, bit j of the
index = qubits[j]) or {index: probability} of the nonzero ones, an expectation value (float) or
[value, variance], chosen amplitudes (complex128) or their squared moduli. Probabilities and
expectation values are those of the normalised state.

combine(save, records, shots) merges the values of one save over shots by Aer's subtype rules:
records are (value, classical bits at the save, shots that carried it, indices of those shots).
"""
import numpy as np

from gemm_backend.arrays import array_module, to_host

from .state import squared_norm


def read_save(save, state):
    """The host value of `save` (a circuits.Save) on `state` (see the module docstring)."""
    kind = save.kind
    if kind == "statevector":
        return to_host(state).astype(np.complex128, copy=True)
    if kind == "statevector_dict":
        vector = to_host(state)
        return {int(i): complex(vector[i]) for i in np.flatnonzero(vector)}
    if kind.startswith("probabilities"):
        probabilities = marginal_probabilities(state, save.qubits)
        if kind == "probabilities":
            return probabilities
        return {int(i): float(probabilities[i]) for i in np.flatnonzero(probabilities)}
    if kind.startswith("expectation_value"):
        norm2 = squared_norm(state)
        value = sum(c * pauli_expectation(state, save.qubits, label) for label, (c, _) in save.params) / norm2
        if kind == "expectation_value":
            return float(value)
        square = sum(c2 * pauli_expectation(state, save.qubits, label) for label, (_, c2) in save.params) / norm2
        return np.array([value, square - value * value])
    amplitudes = _selected_amplitudes(state, save.qubits, save.params)
    if kind == "amplitudes":
        return amplitudes
    return (amplitudes.real ** 2 + amplitudes.imag ** 2) / squared_norm(state)


def marginal_probabilities(state, qubits) -> np.ndarray:
    """(2^k,) float64 host probabilities of measuring `qubits` (bit j of the index = qubits[j]),
    normalised by the state's squared norm."""
    xp = array_module(state)
    n = int(state.size).bit_length() - 1
    tensor = (state.real * state.real + state.imag * state.imag).reshape((2,) * n)
    # Tensor axis a is qubit n-1-a; keep qubits[k-1], ..., qubits[0] as the leading axes.
    kept = [n - 1 - q for q in reversed(qubits)]
    summed = tuple(a for a in range(n) if a not in kept)
    marginal = xp.sum(tensor, axis=summed) if summed else tensor
    remaining = sorted(kept)  # the axes a sum leaves, in ascending order
    marginal = xp.transpose(marginal, tuple(remaining.index(a) for a in kept))
    values = to_host(marginal).reshape(-1)
    return values / values.sum()


def pauli_expectation(state, qubits, label: str) -> float:
    """<psi|P|psi> (unnormalised) for the Pauli string `label` on `qubits` (label[-1-j] acts on
    qubits[j]): (P psi)[i] = (-i)^{#Y} (-1)^{popcount(i & zy)} psi[i ^ xy], where xy and zy are
    the masks of the qubits carrying X or Y, and Z or Y."""
    xp = array_module(state)
    n = int(state.size).bit_length() - 1
    tensor = state.reshape((2,) * n)
    flip_axes, sign_axes, n_y = [], [], 0
    for j, q in enumerate(qubits):
        letter = label[len(label) - 1 - j]
        if letter in "XY":
            flip_axes.append(n - 1 - q)
        if letter in "ZY":
            sign_axes.append(n - 1 - q)
        n_y += letter == "Y"
    moved = xp.flip(tensor, axis=tuple(flip_axes)) if flip_axes else tensor
    signed = moved
    for axis in sign_axes:
        sign = xp.asarray(np.array([1.0, -1.0]).reshape([2 if a == axis else 1 for a in range(n)]))
        signed = signed * sign
    value = complex(xp.sum(xp.conj(tensor) * signed)) * (-1j) ** n_y
    return value.real


def _selected_amplitudes(state, qubits, indices) -> np.ndarray:
    """The amplitudes at `indices`, whose bit j is qubits[j] (Aer saves them over all qubits)."""
    positions = [sum(((i >> j) & 1) << q for j, q in enumerate(qubits)) for i in indices]
    return to_host(state[array_module(state).asarray(positions)]).astype(np.complex128)


def combine(save, records: list, shots: int, clbit_text):
    """Aer's combination of one save's values over shots (see the module docstring).

    records: (value, bits, count, shot_indices) per branch that reached the save; shot_indices
    are the positions of its shots in the run's shot order (length count). clbit_text(bits) is
    the key of a conditional subtype (hex of the classical bits). Returns None when no shot
    reached the save (a save under a false condition or in a branch no shot took).
    """
    if not records:
        return None
    conditional = save.subtype.startswith("c_")
    mode = save.subtype.removeprefix("c_")
    if not conditional:
        return _combine_group(mode, records, shots)
    groups = {}
    for record in records:
        groups.setdefault(clbit_text(record[1]), []).append(record)
    return {key: _combine_group(mode, group, sum(r[2] for r in group)) for key, group in sorted(groups.items())}


def _combine_group(mode: str, records: list, shots: int):
    if mode == "single":
        return max(records, key=lambda r: max(r[3]))[0]  # the value of the last shot
    if mode == "list":
        per_shot = sorted((index, r[0]) for r in records for index in r[3])
        values = [value for _, value in per_shot]
        return np.array(values) if all(np.isscalar(v) for v in values) else values
    total = _weighted_sum([(r[0], r[2]) for r in records])
    return total if mode == "accum" else _scaled(total, 1.0 / shots)


def _weighted_sum(pairs):
    """sum count * value over (value, count) pairs, for floats, arrays and {key: float} dicts."""
    if isinstance(pairs[0][0], dict):
        total = {}
        for value, count in pairs:
            for key, entry in value.items():
                total[key] = total.get(key, 0.0) + count * entry
        return dict(sorted(total.items()))
    return sum(count * value for value, count in pairs)


def _scaled(value, factor):
    if isinstance(value, dict):
        return {key: entry * factor for key, entry in value.items()}
    return value * factor
