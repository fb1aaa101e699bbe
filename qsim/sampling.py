"""Measurement samples drawn from a state vector, on the state's own device.

The state is read in chunks of 2^CHUNK_QUBITS consecutive amplitudes (fixed high qubits, varying
low ones), so a 32-qubit state needs no full host copy and no full-size probability array.
Drawing is two-level and exact in distribution: a multinomial over the chunks' probabilities,
then, inside each chunk that got shots, independent draws from the chunk's marginal over the
measured qubits (inverse CDF on the device). All randomness comes from one numpy Generator, so
a seed gives the same samples on the CPU and the GPU (up to the last bits of a cumulative sum).
"""
import numpy as np

from gemm_backend.arrays import array_module, to_host

from .errors import SimulationError

CHUNK_QUBITS = 24  # 2^24 amplitudes = 256 MiB of complex128 per chunk


def sample_counts(state, qubits, shots: int, seed: int, *, comm=None) -> dict:
    """Counts of measuring `qubits` of `state` `shots` times.

    state: (2^N,) complex amplitudes, numpy or cupy (bit q of the index is qubit q).
    qubits: distinct qubit indices; the first listed is the rightmost character of each key,
        as in Qiskit's counts for classical bits 0, 1, ...
    comm: for a state split over ranks, this rank's Communicator (see sample_outcomes).
    Returns {bitstring: count}, keys sorted, counts summing to shots.
    """
    outcomes = sample_outcomes(state, qubits, shots, seed, comm=comm)
    values, counts = np.unique(outcomes, return_counts=True)
    width = len(qubits)
    return {format(int(value), f"0{width}b"): int(count) for value, count in zip(values, counts)}


def sample_outcomes(state, qubits, shots: int, seed: int, *, comm=None) -> np.ndarray:
    """(shots,) int64 measurement outcomes in shot order; bit j of an outcome is qubits[j].

    comm: for a state split over 2^g ranks, this rank's Communicator. `state` is then this
    rank's slice of 2^n amplitudes, rank r holding indices r 2^n .. (r+1) 2^n - 1, and `qubits`
    index bits of the whole (n + g)-bit index. Every rank draws with the same generator (a
    rank skips the draws of chunks it does not hold), so all return the same outcomes, and
    with chunks of equal size they equal those of the undivided state (a collective call).
    """
    ranks = 1 if comm is None else comm.world_size
    n_local = _state_qubits(state)
    qubits = checked_qubits(qubits, n_local + ranks.bit_length() - 1)
    shots = checked_integer(shots, "shots", minimum=1)
    rng = np.random.default_rng(checked_integer(seed, "seed", minimum=0))
    layout = _ChunkLayout(qubits, min(n_local, CHUNK_QUBITS))
    chunks = state.reshape(-1, 1 << layout.chunk_qubits)
    weights = _chunk_weights(chunks)
    if comm is not None:
        weights = np.concatenate(comm.allgather_object(weights))
    shots_per_chunk = rng.multinomial(shots, _normalized(weights))
    first = 0 if comm is None else comm.rank * len(chunks)
    parts = []
    for chunk_index, count in enumerate(shots_per_chunk):
        if not count:
            continue
        if first <= chunk_index < first + len(chunks):
            marginal = layout.marginal(chunks[chunk_index - first])
            parts.append(layout.outcomes(chunk_index, _draw_in_chunk(marginal, count, rng)))
        else:
            rng.random(count)  # another rank draws these shots: keep this generator in step
    if comm is not None:
        parts = [part for rank_parts in comm.allgather_object(parts) for part in rank_parts]
    # Grouped by chunk so far; a uniform shuffle makes the shot order that of independent draws.
    return rng.permutation(np.concatenate(parts))


class _ChunkLayout:
    """Which measured qubits vary inside a chunk (low: q < chunk_qubits) and which are fixed by
    the chunk index (high)."""

    def __init__(self, qubits: tuple, chunk_qubits: int):
        self.chunk_qubits = chunk_qubits
        self.low = [(j, q) for j, q in enumerate(qubits) if q < chunk_qubits]
        self.high = [(j, q) for j, q in enumerate(qubits) if q >= chunk_qubits]

    def marginal(self, chunk):
        """(2^len(low),) probabilities of the low measured qubits within one chunk (unnormalised);
        bit i of the index is low[i]'s qubit. Same device as chunk."""
        c = self.chunk_qubits
        low_qubits = [q for _, q in self.low]
        summed = [c - 1 - q for q in range(c) if q not in low_qubits]
        kept = [c - 1 - q for q in reversed(low_qubits)]  # most significant index bit first
        probabilities = chunk.real * chunk.real + chunk.imag * chunk.imag
        tensor = probabilities.reshape((2,) * c).transpose(summed + kept)
        return tensor.reshape(1 << len(summed), 1 << len(kept)).sum(axis=0)

    def outcomes(self, chunk_index: int, low_values: np.ndarray) -> np.ndarray:
        """Full outcomes (bit j = qubits[j]) from indices into `marginal` drawn in one chunk."""
        outcomes = np.zeros(low_values.shape, dtype=np.int64)
        for i, (j, _) in enumerate(self.low):
            outcomes |= ((low_values >> i) & 1) << j
        for j, q in self.high:
            outcomes |= ((chunk_index >> (q - self.chunk_qubits)) & 1) << j
        return outcomes


def _chunk_weights(chunks) -> np.ndarray:
    """Host (n_chunks,) squared norms of the chunks."""
    xp = array_module(chunks)
    return np.array([float(xp.vdot(row, row).real) for row in chunks])


def _normalized(weights: np.ndarray) -> np.ndarray:
    """Chunk probabilities (the state may be off unit norm by an emulated backend's rounding)."""
    total = weights.sum()
    if not np.isfinite(total) or total <= 0:
        raise SimulationError(f"cannot sample: the state's squared norm is {total!r} (NaN, Inf or zero)")
    return weights / total


def _draw_in_chunk(marginal, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` independent draws (host int64 indices) from an unnormalised device marginal."""
    xp = array_module(marginal)
    cdf = xp.cumsum(marginal)
    total = cdf[-1:]
    picks = xp.searchsorted(cdf, xp.asarray(rng.random(count)) * total, side="right")
    # u * total may round up to total itself: clamp to the last outcome of nonzero probability.
    last_possible = xp.searchsorted(cdf, total, side="left")
    return to_host(xp.minimum(picks, last_possible)).astype(np.int64)


def _state_qubits(state) -> int:
    shape = getattr(state, "shape", None)
    if shape is None or len(shape) != 1:
        raise SimulationError(f"sampling needs a flat (2^N,) state vector, got shape {shape}")
    size = int(shape[0])
    if size < 2 or size & (size - 1):
        raise SimulationError(f"a state vector has 2^N amplitudes (N >= 1), got {size}")
    if state.dtype.kind != "c":
        raise SimulationError(f"the state must hold complex amplitudes, got dtype {state.dtype}")
    return size.bit_length() - 1


def checked_qubits(qubits, n_qubits: int) -> tuple:
    try:
        checked = tuple(checked_integer(q, "a measured qubit", minimum=0) for q in qubits)
    except TypeError:
        raise SimulationError(f"qubits must be a sequence of qubit indices, got {qubits!r}") from None
    if not checked:
        raise SimulationError("no qubits to measure: give at least one qubit index")
    if len(set(checked)) != len(checked):
        raise SimulationError(f"measured qubits {checked} repeat a qubit; list each qubit once")
    outside = [q for q in checked if q >= n_qubits]
    if outside:
        raise SimulationError(f"measured qubits {outside} are outside the state's 0..{n_qubits - 1}")
    return checked


def checked_integer(value, what: str, minimum: int) -> int:
    """value as an int when it is an integer >= minimum (Python or numpy, not bool); a
    SimulationError naming `what` otherwise, so 2.5 or True is refused rather than truncated."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SimulationError(f"{what} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise SimulationError(f"{what} must be >= {minimum}, got {value}")
    return int(value)
