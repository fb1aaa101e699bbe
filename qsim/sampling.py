"""Measurement samples drawn from a state vector, on the state's own device, exactly.

Every amplitude gets an integer weight rint((re 2^30)^2) + rint((im 2^30)^2) in units of 2^-60
(each probability rounded to the nearest multiple of 2^-60: an error of at most 2^-60 per
amplitude); the total T of these is exact. Shot s takes u_s from one numpy Generator
(rng.random(shots), in shot order), m = u_s 2^53, and picks the first amplitude whose running
weight exceeds floor(m T / 2^53), like qsim.measurement.draw_outcome; its outcome is that
amplitude's measured bits. Integers throughout: the picks depend on nothing but the state's
bits and the seed, not on the device (qsim.sampling_gpu: one read of the state for the block
weights, then every shot at once), the chunking, or the ranks a state is divided over.

The CPU path reads the state in chunks of 2^CHUNK_QUBITS amplitudes and keeps one int64 per block
of 2^SAMPLE_BLOCK_QUBITS amplitudes (the running sum of their weights); each shot then searches
the blocks and scans one block.
"""
import numpy as np

from gemm_backend.arrays import is_gpu_array

from . import sampling_gpu
from .errors import SimulationError

CHUNK_QUBITS = 16  # 2^16 amplitudes = 1 MiB of complex128 per chunk: its temporaries stay in cache
SAMPLE_BLOCK_QUBITS = 6  # amplitudes per block of the running sum (CPU path)
SHOT_BATCH = 1 << 14  # shots scanned together on the CPU (each gathers one block)
SQUARE_PRESCALE = 2.0**30
TERM_LIMIT = 2.0**62  # a part whose square exceeds 4 is refused
MAX_TOTAL = 4 << 60  # squared norm 4 in units of 2^-60
UNIFORM_SCALE = 2.0**53


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
    index bits of the whole (n + g)-bit index. All ranks return the same outcomes, those of the
    undivided state (a collective call).
    """
    ranks = 1 if comm is None else comm.world_size
    n_local = _state_qubits(state)
    qubits = checked_qubits(qubits, n_local + ranks.bit_length() - 1)
    shots = checked_integer(shots, "shots", minimum=1)
    rng = np.random.default_rng(checked_integer(seed, "seed", minimum=0))
    state = state.astype(np.complex128, copy=False)  # the weights are defined on float64 parts
    weights = sampling_gpu.BlockWeights(state) if is_gpu_array(state) else _HostBlockWeights(state)
    # On the GPU, while the weight pass runs; the same numbers either way.
    uniforms = sampling_gpu.host_uniforms(rng, shots) if is_gpu_array(state) else rng.random(shots)
    local = weights.finish(MAX_TOTAL)
    parts = [local] if comm is None else comm.allgather_object(local)
    total = _checked_total(parts)
    rank = 0 if comm is None else comm.rank
    offset = sum(part_total for part_total, _ in parts[:rank])
    draw = sampling_gpu.draw_shots if is_gpu_array(state) else _draw_on_host
    outcomes = draw(state, weights, uniforms, total, offset, rank << n_local, qubits)
    if comm is None:
        return outcomes
    mine = np.flatnonzero(outcomes >= 0)
    for shot_indices, values in comm.allgather_object((mine, outcomes[mine])):
        outcomes[shot_indices] = values
    return outcomes


def _checked_total(parts: list) -> int:
    """The exact total weight of all parts ((total, bad) each); SimulationError unless it is a
    squared norm in (0, 4] and every part was good."""
    if any(bad for _, bad in parts):
        raise SimulationError("cannot sample: the state's squared norm is NaN, Inf or above 4")
    total = sum(part_total for part_total, _ in parts)
    if not 0 < total <= MAX_TOTAL:
        raise SimulationError(f"cannot sample: the state's squared norm is {total / 2.0**60!r} (zero or above 4)")
    return total


class _HostBlockWeights:
    """The CPU path of sampling_gpu.BlockWeights: running block weights, chunk by chunk."""

    def __init__(self, state):
        n_qubits = int(state.size).bit_length() - 1
        chunk_qubits = min(n_qubits, CHUNK_QUBITS)
        self.block_qubits = min(SAMPLE_BLOCK_QUBITS, chunk_qubits)
        sums, self._approximate_total, self._bad = [], 0.0, False
        for chunk in state.reshape(-1, 1 << chunk_qubits):
            squares = np.square(chunk.view(np.float64) * SQUARE_PRESCALE)
            self._bad |= not bool((squares < TERM_LIMIT).all())
            if self._bad:
                break
            self._approximate_total += float(squares.sum())
            sums.append(np.rint(squares).astype(np.int64).reshape(-1, 2 << self.block_qubits).sum(axis=1))
        self.cumulative = np.cumsum(np.concatenate(sums)) if not self._bad else None

    def finish(self, limit: int) -> tuple:
        """(total weight, bad), as sampling_gpu.BlockWeights.finish (the float total guards the
        int64 sums against wrapping: it exceeds limit by far before they could)."""
        bad = self._bad or not self._approximate_total <= limit * 1.125
        return (0 if bad else int(self.cumulative[-1])), bad


def scaled_targets(uniforms: np.ndarray, total: int) -> np.ndarray:
    """floor(m total / 2^53) for m = uniforms * 2^53 (exact: integers below 2^53) and 0 < total < 2^63,
    as int64, in 64-bit pieces: m total = m1 t1 2^64 + (m1 t0 + m0 t1) 2^32 + m0 t0."""
    m = (uniforms * UNIFORM_SCALE).astype(np.uint64)
    low32 = np.uint64(0xFFFFFFFF)
    m1, m0 = m >> np.uint64(32), m & low32
    t1, t0 = np.uint64(total >> 32), np.uint64(total & 0xFFFFFFFF)
    middle, low = m1 * t0 + m0 * t1, m0 * t0
    carry = (((middle & np.uint64((1 << 21) - 1)) << np.uint64(32)) + (low & np.uint64((1 << 53) - 1))) >> np.uint64(53)
    return ((m1 * t1 << np.uint64(11)) + (middle >> np.uint64(21)) + (low >> np.uint64(53)) + carry).astype(np.int64)


def _draw_on_host(state, weights, uniforms, total: int, offset: int, index_offset: int, qubits) -> np.ndarray:
    """The CPU path of sampling_gpu.draw_shots (same arguments, same outcomes)."""
    targets = scaled_targets(uniforms, total) - offset
    cumulative, block_qubits = weights.cumulative, weights.block_qubits
    outcomes = np.full(targets.size, -1, dtype=np.int64)
    mine = np.flatnonzero((targets >= 0) & (targets < cumulative[-1]))
    floats = state.view(np.float64).reshape(cumulative.size, 2 << block_qubits)
    for start in range(0, mine.size, SHOT_BATCH):
        shots = mine[start:start + SHOT_BATCH]
        blocks = np.searchsorted(cumulative, targets[shots], side="right")
        rest = targets[shots] - np.where(blocks > 0, cumulative[blocks - 1], 0)
        squares = np.square(floats[blocks] * SQUARE_PRESCALE)
        running = np.cumsum(np.rint(squares).astype(np.int64).reshape(shots.size, -1, 2).sum(axis=2), axis=1)
        picks = (running <= rest[:, None]).sum(axis=1)
        index = index_offset | (blocks << block_qubits) | picks
        outcome = np.zeros(shots.size, dtype=np.int64)
        for j, q in enumerate(qubits):
            outcome |= ((index >> q) & 1) << j
        outcomes[shots] = outcome
    return outcomes


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
