"""Complex GEMM backends behind one interface: native ZGEMM, INT8 Ozaki, multiword FP16,
double-double. Backends know nothing of qubits; see `GemmBackend`."""
from .base import GemmBackend
from .errors import BackendError
from .registry import accepted_options, available, get, names

__all__ = ["GemmBackend", "BackendError", "accepted_options", "available", "get", "names"]
