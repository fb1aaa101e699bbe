"""Errors raised while building or importing circuits."""


class CircuitError(ValueError):
    """A gate or circuit is invalid (bad targets, non-unitary matrix, unsupported instruction)."""
