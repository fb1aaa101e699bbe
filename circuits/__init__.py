"""What to simulate: gates, circuits, brickwork random circuits, Qiskit/QASM import, fusion.

Qiskit is imported only by the import functions, so this package loads without it.
"""
import importlib

from .brickwork import brickwork, haar_unitary
from .errors import CircuitError
from .gate import Circuit, Gate

_LAZY = {"from_qiskit": ".qiskit_import", "from_qasm": ".qiskit_import", "fuse": ".fusion"}

__all__ = ["Circuit", "CircuitError", "Gate", "brickwork", "haar_unitary", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'circuits' has no attribute {name!r}")
