"""Complex GEMM backends behind one interface: native ZGEMM, INT8 Ozaki, multiword FP16,
double-double. Backends know nothing of qubits; see `GemmBackend`."""
from .base import GemmBackend
from .errors import BackendError
from .registry import OPTION_SPECS, accepted_options, available, backends_taking, get, names, parse_label, parse_option

__all__ = ["GemmBackend", "BackendError", "OPTION_SPECS", "accepted_options", "available", "backends_taking", "get",
           "names", "parse_label", "parse_option"]
