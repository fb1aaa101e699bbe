"""Integer indices and counts (qubits, classical bits, register sizes) checked by type.

A float, a string or a bool is refused rather than converted with int(): int(0.5) is 0, so
Gate((0.5,), u) would quietly become a gate on qubit 0. Python ints and numpy integers pass.
"""
import numbers

import numpy as np

from .errors import CircuitError


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
