"""Errors raised while building or importing circuits."""


class CircuitError(ValueError):
    """A gate or circuit is invalid (bad targets, non-unitary matrix, unsupported instruction)."""


def one_line(exc) -> str:
    """An exception's text on one line (parsers put positions and context on several)."""
    return " ".join(str(exc).split())
