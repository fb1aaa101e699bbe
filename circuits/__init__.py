"""What to simulate: gates, measurements, resets and conditions, circuits, brickwork random
circuits (plain and monitored), Qiskit/QASM import, fusion.

Qiskit is imported only by the import functions, so this package loads without it.
"""
import importlib

from .brickwork import brickwork, haar_unitary, monitored_brickwork
from .errors import CircuitError
from .gate import Circuit, Gate
from .indices import MAX_QUBITS
from .operations import ClbitTest, Condition, LoopLimit, Measure, Reset, format_clbits
from .save import Save

_LAZY = {"from_qiskit": ".qiskit_import", "from_qasm": ".qiskit_import", "fuse": ".fusion", "fuse_by_cost": ".fusion"}

__all__ = ["MAX_QUBITS", "Circuit", "CircuitError", "ClbitTest", "Condition", "Gate", "LoopLimit", "Measure", "Reset", "Save", "brickwork",
           "format_clbits", "haar_unitary", "monitored_brickwork", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'circuits' has no attribute {name!r}")
