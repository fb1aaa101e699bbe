"""Measurement and reset of qubits of a state vector, in place on the state's own device.

Outcome probabilities come from an exact, order-independent reduction, so the CPU and the GPU
(and any summation order) get the same bits, and so do the renormalised states:
every real and imaginary part v of an amplitude gives t = (v * 2^30)^2 = v^2 * 2^60 in float64
(one correctly rounded multiply, the same on every device); t splits exactly into its whole part
and its fraction, the fraction is rounded to 28 bits, and both are summed exactly as integers. The weight
of an outcome is thus an integer in units of 2^-88 whose only error is the rounding of each
v^2 (relative 2^-53) and of each fraction (2^-89 absolute per term). The reduction runs over
chunks of 2^REDUCTION_CHUNK_QUBITS amplitudes with a few chunk-sized buffers; only the 2^k
integer weights of the k measured qubits come to the host (k <= MAX_JOINT_QUBITS per draw).
This numpy/cupy code is the specification; a cupy state goes through the kernels of
qsim.measurement_gpu instead (one read of the state for the weights, one pass for a collapse),
which compute the same integers and the same bits.

Projection zeroes the other outcomes and multiplies the kept amplitudes by one host-computed
float64 scale (real parts and imaginary parts alike, a correctly rounded multiply); a reset then
moves each qubit that read 1 back to 0. Both are copies and fills of strided views: exact.
"""
import bisect
import functools
import itertools
import math

import numpy as np

from gemm_backend.arrays import array_module, is_gpu_array, to_host

from . import measurement_gpu
from .errors import SimulationError

REDUCTION_CHUNK_QUBITS = 16  # amplitudes per reduction chunk: 2^16 (1 MiB of complex128, cache-sized)
# The largest chunk whose rounded fractions (below 2^28, two per amplitude) sum exactly in float64.
MAX_EXACT_CHUNK_QUBITS = 24
ROW_BITS = 10  # a chunk's terms are summed to rows of at least 2^ROW_BITS floats first
MAX_JOINT_QUBITS = 12  # qubits drawn jointly from one reduction; more are drawn in groups
SQUARE_PRESCALE = 2.0**30  # (v * 2^30)^2 = v^2 * 2^60: the whole part counts units of 2^-60
FRACTION_BITS = 28
WEIGHT_UNIT_BITS = 60 + FRACTION_BITS  # weights are integers in units of 2^-88
MAX_SQUARED_NORM = 4  # int64 sums of the whole parts hold up to 8 * 2^60; larger is an error
BUFFERS = 3  # float64 work, float64 whole parts, int64 terms, each 2 floats per amplitude


def measurement_workspace_bytes(n_qubits: int, *, on_gpu: bool) -> int:
    """Bytes a measurement of an n_qubits state allocates besides the state on its device: on the
    GPU the kernels' bins (qsim.measurement_gpu, at most 64 KiB); on the CPU the chunk buffers."""
    if on_gpu:
        return measurement_gpu.workspace_bytes(min(n_qubits, MAX_JOINT_QUBITS))
    return BUFFERS * 8 * (2 << _chunk_qubits(n_qubits))


def outcome_weights(state, qubits) -> list:
    """Exact weights of every outcome of measuring `qubits` (at most MAX_JOINT_QUBITS).

    state: (2^N,) complex128, numpy or cupy, C-contiguous. Returns a list of 2^k Python ints:
    entry o (bit j of o = qubits[j]) is the squared norm of the amplitudes with those qubit values,
    in units of 2^-WEIGHT_UNIT_BITS. Only these integers leave the device.
    """
    if is_gpu_array(state):
        whole_sums, fraction_sums, bad = measurement_gpu.weight_sums(state, tuple(qubits))
        if bad:
            raise _norm_error()
        return _host_weights(whole_sums, fraction_sums, qubits, sorted(qubits), [])  # flat bit i = i-th lowest
    whole_sums, fraction_sums, high, low = _chunked_sums(state, qubits)
    return _host_weights(to_host(whole_sums).reshape(-1), to_host(fraction_sums).reshape(-1), qubits, high, low)


def _chunked_sums(state, qubits) -> tuple:
    """(whole-part sums, fraction sums, high qubits, low qubits) of outcome_weights, chunk by chunk
    (numpy or cupy). Every step is exact, so no order of summation changes a bit: t - floor(t)
    is t's exact fraction (t >= 0), and the rounded fractions are integers below 2^28, summed in
    float64 over at most 2^25 of them (a chunk) without rounding."""
    xp = array_module(state)
    n_qubits = int(state.size).bit_length() - 1
    chunk_qubits = _chunk_qubits(n_qubits)
    low = [q for q in qubits if q < chunk_qubits]
    high = [q for q in qubits if q >= chunk_qubits]
    # A chunk's terms are first summed into one row of 2^row_bits (float bits 0..row_bits-1, the
    # low qubits' among them): a long contiguous sum, where summing the whole chunk over axes of
    # length 2 at low qubits is many times slower.
    row_bits = min(chunk_qubits + 1, max(max(low, default=-1) + 2, ROW_BITS))
    shape, axis_of = _split_shape(row_bits, {q + 1 for q in low})
    summed = tuple(a for a in range(len(shape)) if a not in axis_of.values())
    whole_sums = xp.zeros((1 << len(high),) + (2,) * len(low), dtype=xp.int64)
    fraction_sums = xp.zeros_like(whole_sums)
    chunks = state.view(xp.float64).reshape(-1, 2 << chunk_qubits)
    work, whole = xp.empty(chunks.shape[1]), xp.empty(chunks.shape[1])
    terms = xp.empty(chunks.shape[1], dtype=xp.int64)
    for chunk_index in range(chunks.shape[0]):
        row = sum(((chunk_index >> (q - chunk_qubits)) & 1) << i for i, q in enumerate(high))
        xp.multiply(chunks[chunk_index], SQUARE_PRESCALE, out=work)
        xp.multiply(work, work, out=work)
        xp.floor(work, out=whole)
        xp.subtract(work, whole, out=work)
        xp.copyto(terms, whole, casting="unsafe")
        whole_sums[row] += terms.reshape(-1, 1 << row_bits).sum(axis=0).reshape(shape).sum(axis=summed)
        xp.multiply(work, float(1 << FRACTION_BITS), out=work)
        xp.rint(work, out=work)
        fractions = work.reshape(-1, 1 << row_bits).sum(axis=0).reshape(shape).sum(axis=summed)
        fraction_sums[row] += fractions.astype(xp.int64)
    return whole_sums, fraction_sums, high, low


def _chunk_qubits(n_qubits: int) -> int:
    """Qubits of a CPU reduction chunk: REDUCTION_CHUNK_QUBITS, at most the state's and
    MAX_EXACT_CHUNK_QUBITS."""
    return min(n_qubits, REDUCTION_CHUNK_QUBITS, MAX_EXACT_CHUNK_QUBITS)


def _host_weights(whole_sums, fraction_sums, qubits, high, low) -> list:
    """Python-int weights indexed by outcome (bit j = qubits[j]) from the int64 accumulators, whose
    flat index holds the high qubits (bit i = high[i]) above the low ones (ascending order).
    Vectorised over object arrays: at k = 12 a loop of 4096 Python steps per measurement was most
    of the GPU path's time at N = 28."""
    if (whole_sums < 0).any() or _exact_sum(whole_sums) > MAX_SQUARED_NORM << 60:
        raise _norm_error()
    weights = (whole_sums.astype(object) << FRACTION_BITS) + fraction_sums.astype(object)
    flat_of_outcome = _flat_index_of_outcomes(tuple(qubits), tuple(high), tuple(sorted(low)))
    return (weights if flat_of_outcome is None else weights[flat_of_outcome]).tolist()


def _exact_sum(values) -> int:
    """The exact sum of at most 2^31 int64 values in [0, 2^63), from two 32-bit halves (no wrap)."""
    return (int((values >> 32).sum()) << 32) + int((values & 0xFFFFFFFF).sum())


@functools.lru_cache(maxsize=256)
def _flat_index_of_outcomes(qubits: tuple, high: tuple, ascending_low: tuple):
    """(2^k,) int64: entry o is the flat accumulator index of outcome o (see _host_weights); None
    when that is o itself (the usual case: the GPU's bins for ascending qubits)."""
    flat_bit = {q: b for b, q in enumerate(ascending_low + high)}
    if all(flat_bit[q] == j for j, q in enumerate(qubits)):
        return None
    outcome = np.arange(1 << len(qubits), dtype=np.int64)
    flat = np.zeros_like(outcome)
    for j, q in enumerate(qubits):
        flat |= ((outcome >> j) & 1) << flat_bit[q]
    flat.flags.writeable = False
    return flat


def _norm_error() -> SimulationError:
    return SimulationError("the state's squared norm left [0, 4] before a measurement "
                           "(the backend's error grew too large); cannot draw an outcome")


def collapse(state, qubits, outcome: int, weight: int, reset: bool = False) -> None:
    """project(state, qubits, outcome, weight), then flip_to_zero(...) when reset: on the GPU in
    one pass over the state, with the same bits."""
    if is_gpu_array(state):
        measurement_gpu.collapse(state, tuple(qubits), outcome, _scale(weight), reset)
        return
    project(state, qubits, outcome, weight)
    if reset:
        flip_to_zero(state, qubits, outcome)


def _scale(weight: int) -> float:
    """The float64 factor that brings an outcome of `weight` (units of 2^-88) to unit norm."""
    return math.ldexp(1.0 / math.sqrt(weight), WEIGHT_UNIT_BITS // 2)


def project(state, qubits, outcome: int, weight: int) -> None:
    """Keep only the amplitudes where qubits[j] reads bit j of `outcome`, scaled to unit norm.

    weight: that outcome's entry of outcome_weights (its squared norm in units of 2^-88), > 0.
    Each zeroing pass only touches the part not zeroed by the previous ones (< 2^N in total);
    a cupy state is collapsed by one kernel instead (the same bits).
    """
    if is_gpu_array(state):
        measurement_gpu.collapse(state, tuple(qubits), outcome, _scale(weight), reset=False)
        return
    floats, n_bits = _float_view(state)
    fixed = {}
    for j, q in enumerate(qubits):
        bit = (outcome >> j) & 1
        _fixed_bits(floats, n_bits, {**fixed, q + 1: 1 - bit})[...] = 0
        fixed[q + 1] = bit
    kept = _fixed_bits(floats, n_bits, fixed)
    kept *= _scale(weight)


def flip_to_zero(state, qubits, outcome: int) -> None:
    """After project(state, qubits, outcome, ...): move every qubit that reads 1 to 0."""
    floats, n_bits = _float_view(state)
    fixed = {q + 1: (outcome >> j) & 1 for j, q in enumerate(qubits)}
    for q in qubits:
        if fixed[q + 1]:
            source = _fixed_bits(floats, n_bits, fixed)
            _fixed_bits(floats, n_bits, {**fixed, q + 1: 0})[...] = source
            source[...] = 0
            fixed[q + 1] = 0


def draw_outcome(weights: list, rng: np.random.Generator) -> int:
    """Index o with probability weights[o] / sum(weights), from one rng.random(), in exact
    integer arithmetic: u = m / 2^53 selects the first o whose cumulative weight exceeds u * total
    (so an outcome of weight 0 is never drawn)."""
    cumulative = list(itertools.accumulate(weights))
    if cumulative[-1] <= 0:
        raise SimulationError("cannot draw a measurement outcome: the state is zero")
    m = int(rng.random() * 2.0**53)
    return bisect.bisect_right(cumulative, (m * cumulative[-1]) >> 53)


def measure(state, qubits, rng: np.random.Generator, *, reset: bool = False) -> tuple:
    """Measure `qubits` of `state` (in place): draw, project, renormalise, and with reset move
    every measured qubit back to 0.

    Groups of MAX_JOINT_QUBITS qubits are drawn one after another, each from the state left by
    the previous group (the same distribution as one joint draw). Returns (outcome, probability):
    bit j of outcome is qubits[j]'s result; probability is that of the whole outcome given the
    state before the measurement (float).
    """
    outcome, probability = 0, 1.0
    for start in range(0, len(qubits), MAX_JOINT_QUBITS):
        group = qubits[start : start + MAX_JOINT_QUBITS]
        weights = outcome_weights(state, group)
        drawn = draw_outcome(weights, rng)
        collapse(state, group, drawn, weights[drawn], reset)
        outcome |= drawn << start
        probability *= weights[drawn] / sum(weights)
    return outcome, probability


def _float_view(state):
    """(the state as a flat float64 array, its number of index bits N + 1)."""
    xp = array_module(state)
    return state.view(xp.float64), int(state.size).bit_length()


def _fixed_bits(flat, n_bits: int, fixed: dict):
    """View of `flat` (2^n_bits elements) where index bit b is fixed[b], as a few-axis array."""
    shape, axis_of = _split_shape(n_bits, fixed)
    index = [slice(None)] * len(shape)
    for bit, value in fixed.items():
        index[axis_of[bit]] = value
    return flat.reshape(shape)[tuple(index)]


def _split_shape(n_bits: int, bits) -> tuple:
    """(shape, {bit: axis}) of a 2^n_bits array seen with every bit in `bits` as its own axis of
    length 2 and each run of other bits merged into one axis; most significant first."""
    shape, axis_of, run = [], {}, 0
    for bit in range(n_bits - 1, -1, -1):
        if bit in bits:
            if run:
                shape.append(1 << run)
                run = 0
            axis_of[bit] = len(shape)
            shape.append(2)
        else:
            run += 1
    if run:
        shape.append(1 << run)
    return tuple(shape), axis_of
