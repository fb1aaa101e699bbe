"""What to simulate: gates, circuits, brickwork random circuits, Qiskit/QASM import, fusion."""
from .brickwork import brickwork, haar_unitary
from .errors import CircuitError
from .gate import Circuit, Gate

__all__ = ["Circuit", "CircuitError", "Gate", "brickwork", "haar_unitary"]
