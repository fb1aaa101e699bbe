"""Complex GEMM backends behind one interface: native ZGEMM, INT8 Ozaki, multiword FP16,
double-double. Backends know nothing of qubits; see `GemmBackend`."""
from .base import GemmBackend
from .errors import BackendError
from .registry import available, get, names

__all__ = ["GemmBackend", "BackendError", "available", "get", "names"]
