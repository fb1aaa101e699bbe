"""Errors raised by the engine."""


class SimulationError(ValueError):
    """The simulation cannot run as asked (unknown device, state too large, bad initial state)."""
