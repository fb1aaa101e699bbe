"""Integer indices and counts (qubits, classical bits, register sizes) checked by type.

A float, a string or a bool is refused rather than converted with int(): int(0.5) is 0, so
Gate((0.5,), u) would quietly become a gate on qubit 0. Python ints and numpy integers pass.
"""
import numbers

import numpy as np

from .errors import CircuitError

#: The most qubits a circuit may have: the simulator indexes 2^N amplitudes with signed 64-bit
#: integers (numpy's and cupy's sizes), so 2^62 is the largest power of two it can address. Memory
#: ends real runs far earlier; the engine says so with the bytes needed (qsim.Simulator.memory_plan).
MAX_QUBITS = 62


def integer(value, what: str) -> int:
    """value as an int when it is an int or a numpy integer (not a bool); CircuitError naming
    `what` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise CircuitError(f"{what} must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


def distinct_indices(values, what: str) -> tuple:
    """values as a tuple of distinct non-negative ints (one at least); CircuitError naming
    `what` otherwise."""
    try:
        items = tuple(values)
    except TypeError:
        raise CircuitError(f"{what} must be a sequence of integer indices, got {values!r}") from None
    indices = tuple(integer(v, f"{what}: every index") for v in items)
    if not indices:
        raise CircuitError(f"{what}: give at least one index")
    if min(indices) < 0:
        raise CircuitError(f"{what}: negative index in {indices}")
    if len(set(indices)) != len(indices):
        raise CircuitError(f"{what}: repeated index in {indices}")
    return indices


def qubit_count(value, what: str) -> int:
    """value as a number of qubits in 1..MAX_QUBITS (an int or numpy integer, not a bool);
    CircuitError naming `what` otherwise, before anything of that size is built."""
    count = integer(value, what)
    if count < 1:
        raise CircuitError(f"{what} must be >= 1, got {count} (a circuit needs at least 1 qubit)")
    if count > MAX_QUBITS:
        raise CircuitError(f"{what} is {count}, above the {MAX_QUBITS} qubits a state vector of 2^N amplitudes "
                           "can be indexed with (64-bit indices); use fewer qubits")
    return count
