"""Brickwork circuits of Haar-random d-qubit gates (design brief section 2), and monitored
brickwork circuits: the same gates with random single-qubit measurements after every layer."""
import numbers
import os

import numpy as np

from .errors import CircuitError
from .gate import Circuit, Gate
from .indices import integer, qubit_count
from .operations import Measure

#: monitored_brickwork draws which qubits to measure from np.random.default_rng([seed, this]), a
#: stream apart from the gates' default_rng(seed), so its gates are brickwork's for the same seed.
MEASUREMENT_CHOICE_STREAM = 1


def haar_unitary(dim: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random (dim, dim) complex128 unitary: QR of Z = (randn + i randn)/sqrt(2), with Q's
    columns multiplied by the phases of diag(R) so the distribution is exactly Haar (Mezzadri).

    The Gaussian draws are bit-identical on every machine (numpy's Generator); the QR is
    LAPACK's, so matrices from different BLAS builds may differ in the last bits.
    """
    z = (rng.standard_normal((dim, dim)) + 1j * rng.standard_normal((dim, dim))) / np.sqrt(2.0)
    q, r = np.linalg.qr(z)
    diagonal = np.diag(r)
    return q * (diagonal / np.abs(diagonal))


def brickwork_layer_targets(n_qubits: int, gate_size: int, layer: int) -> list:
    """Target tuples of one layer: offset 0 on even layers, floor(d/2) on odd ones, open boundary."""
    offset = 0 if layer % 2 == 0 else gate_size // 2
    count = (n_qubits - offset) // gate_size
    return [tuple(range(offset + j * gate_size, offset + (j + 1) * gate_size)) for j in range(count)]


def _check_gate_memory(count: int, gate_size: int) -> None:
    """Refuse, before drawing any, gates whose dense matrices (16 bytes x 4^d each) together exceed
    the machine's physical memory: numpy would fail part way with a size or memory error."""
    needed = count * (16 << (2 * gate_size))
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no sysconf names here: numpy's own error then
        return
    if needed > physical:
        raise CircuitError(f"{count} Haar gates of {gate_size} qubits are dense 2^{gate_size} x 2^{gate_size} "
                           f"matrices, {needed / (1 << 30):.3g} GiB together, more than this machine's "
                           f"{physical / (1 << 30):.3g} GiB of memory; use a smaller --gate-size")


def brickwork(n_qubits: int, gate_size: int, depth: int, seed: int = 0) -> Circuit:
    """A depth-`depth` brickwork of independent Haar-random `gate_size`-qubit gates, ordered layer
    by layer then by position; the same seed gives the same gates."""
    n_qubits, gate_size, depth, seed = (integer(value, name) for value, name in (
        (n_qubits, "--qubits"), (gate_size, "--gate-size"), (depth, "--depth"), (seed, "--seed")))
    qubit_count(n_qubits, "--qubits")
    if gate_size < 1:
        raise CircuitError(f"--gate-size must be >= 1, got {gate_size}")
    if gate_size > n_qubits:
        raise CircuitError(f"--gate-size {gate_size} exceeds --qubits {n_qubits}: no gate fits")
    if depth < 1:
        raise CircuitError(f"--depth must be >= 1, got {depth}")
    if seed < 0:
        raise CircuitError(f"--seed must be >= 0, got {seed}")
    even, odd = (len(brickwork_layer_targets(n_qubits, gate_size, layer)) for layer in (0, 1))
    _check_gate_memory(even * ((depth + 1) // 2) + odd * (depth // 2), gate_size)  # without a loop over depth
    rng = np.random.default_rng(seed)
    dim = 1 << gate_size
    gates = []
    for layer in range(depth):
        for targets in brickwork_layer_targets(n_qubits, gate_size, layer):
            gates.append(Gate(targets, haar_unitary(dim, rng), name=f"haar{gate_size}_L{layer}"))
    return Circuit(n_qubits, gates)


def monitored_brickwork(n_qubits: int, gate_size: int, depth: int, rate: float, seed: int = 0) -> Circuit:
    """brickwork(n_qubits, gate_size, depth, seed) with every qubit measured with probability
    `rate` after every layer (the measurement-induced transition setting).

    After layer l, one Measure op (named measure_L<l>) measures the chosen qubits jointly, in
    ascending order, into the next unused classical bits, so classical bit b records the b-th
    measurement of the run; the bits form one register "c". Which qubits are chosen is seeded
    (a stream apart from the gates'); rate 0 gives exactly brickwork's circuit.
    """
    if isinstance(rate, (bool, np.bool_)) or not isinstance(rate, numbers.Real) or not 0.0 <= rate <= 1.0:
        raise CircuitError(f"--measure-rate must be between 0 and 1, got {rate!r}")
    rate = float(rate)
    gates = list(brickwork(n_qubits, gate_size, depth, seed).gates)
    choice = np.random.default_rng([seed, MEASUREMENT_CHOICE_STREAM])
    operations, n_clbits = [], 0
    for layer in range(depth):
        count = len(brickwork_layer_targets(n_qubits, gate_size, layer))
        operations += gates[:count]
        del gates[:count]
        measured = tuple(int(q) for q in np.flatnonzero(choice.random(n_qubits) < rate))
        if measured:
            clbits = tuple(range(n_clbits, n_clbits + len(measured)))
            operations.append(Measure(measured, clbits, name=f"measure_L{layer}"))
            n_clbits += len(measured)
    registers = (("c", n_clbits),) if n_clbits else ()
    return Circuit(n_qubits, operations, n_clbits=n_clbits, clbit_registers=registers)
