"""Native complex128 GEMM: cuBLAS ZGEMM through cupy on the GPU, numpy (BLAS) on the CPU."""
import numbers

import numpy as np

from ..arrays import array_module, iter_column_chunks, is_gpu_array
from ..base import DEFAULT_WORKSPACE_BYTES, GemmBackend, as_complex, check_matmul_operands
from ..errors import BackendError
from ..gate_cost import NATIVE_GPU_PASSES, measured_passes
from .gate import DMMA_DIMS, apply_native_gate, dmma_available, dmma_preferred, gate_fragments
from .small_gate import SUPPORTED_DIMS, apply_small_gate, kernel_is_faster
from ..target_layout import packed_gate, run_length

PACKED_GATE_DIMS = (4, 8)  # gate sizes that may run packed in the DMMA kernel for K = PACKED_DMMA_K
PACKED_DMMA_K = 16
PACKED_BELOW_QUBIT = 5  # ... when two targets lie below this qubit (small_gate.py's loads use part of a sector)

MAX_DMMA_QUBITS = DMMA_DIMS[-1].bit_length() - 1
# Below this stride an (L, K, R) view's columns are multiplied as the rows of a transposed copy: a
# strided batch of L GEMMs of R columns each reads the whole gate for every R columns. On the H100
# (BENCHMARKS.md round 25) the batch took 5.7-7.3x the rows' time at R = 2, 1.6-2.0x at R = 8 and
# 0.93-1.05x at R = 16, for d = 7..10; numpy's batch is 3x slower at R = 2 and even from R = 8.
DEFAULT_MIN_BATCHED_STRIDE = 16


class ZgemmBackend(GemmBackend):
    """Reference-speed FP64 complex GEMM.

    Options:
        dmma_min_qubits: on the GPU, gates of dmma_min_qubits..6 qubits use the in-place FP64
            tensor-core kernel (native_gate.py) where it was measured faster (dmma_preferred: from
            5 qubits always, smaller gates at strides R < 32); 7 disables it.
        small_gate_max_qubits: on the GPU, smaller gates of at most this many qubits (K = 2^d <= 32)
            use the in-place CUDA-core kernel (small_gate.py) instead of cuBLAS (0 disables it).
        min_batched_stride: an (L, K, R) view goes to cuBLAS (numpy) as a strided batch of L GEMMs
            only from R >= min_batched_stride; with 1 < R below it, each chunk is copied transposed
            and multiplied as one GEMM of its L R rows (1: never).
        workspace_bytes: scratch memory for in-place products done in chunks.
    """

    name = "cublas"
    OPTIONS = ("dmma_min_qubits", "small_gate_max_qubits", "min_batched_stride", "workspace_bytes")

    def __init__(self, dmma_min_qubits: int = 4, small_gate_max_qubits: int = 5,
                 min_batched_stride: int = DEFAULT_MIN_BATCHED_STRIDE, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
        super().__init__(workspace_bytes)
        dmma_min_qubits = _integer_option("dmma_min_qubits", dmma_min_qubits, DMMA_DIMS[0].bit_length() - 1,
                                          MAX_DMMA_QUBITS + 1)
        small_gate_max_qubits = _integer_option("small_gate_max_qubits", small_gate_max_qubits, 0,
                                                SUPPORTED_DIMS[-1].bit_length() - 1)
        self.min_batched_stride = _integer_option("min_batched_stride", min_batched_stride, 1)
        self.dmma_dims = tuple(k for k in DMMA_DIMS if k >= 1 << dmma_min_qubits)
        self.small_gate_max_dim = 1 << small_gate_max_qubits if small_gate_max_qubits else 0
        self.options = {"dmma_min_qubits": dmma_min_qubits, "small_gate_max_qubits": small_gate_max_qubits,
                        "min_batched_stride": self.min_batched_stride, "workspace_bytes": self.workspace_bytes}
        self._fragments = {}  # id(u) -> (u, its DMMA fragments), made by prepare()

    def implementation(self, on_gpu: bool) -> str:
        return "cuBLAS and gate kernels" if on_gpu else "numpy"

    def matmul(self, a, b):
        xp, a, b = check_matmul_operands(a, b, "cublas matmul")  # shapes and dtypes named, as other backends do
        a, b = as_complex(a), as_complex(b)
        self._count(a.shape[0], a.shape[1], b.shape[1])
        self.last_call_info = {}
        return xp.matmul(a, b)

    def _uses_small_gate_kernel(self, k: int, n_right: int, on_gpu: bool) -> bool:
        return on_gpu and k <= self.small_gate_max_dim and kernel_is_faster(k, n_right)

    def _uses_dmma(self, k: int, n_right: int, on_gpu: bool) -> bool:
        return on_gpu and k in self.dmma_dims and dmma_preferred(k, n_right) and dmma_available()

    def _fragments_of(self, u):
        prepared = self._fragments.get(id(u))
        return prepared[1] if prepared and prepared[0] is u else None

    def prepare(self, u) -> None:
        if is_gpu_array(u) and u.shape[0] in self.dmma_dims and dmma_available():
            self._fragments[id(u)] = (u, gate_fragments(u))

    def release(self, u) -> None:
        self._fragments.pop(id(u), None)

    def finish_run(self) -> None:
        self._fragments.clear()

    def works_in_place(self, k: int, on_gpu: bool = True) -> bool:
        # cuBLAS and numpy go through chunks of the workspace in place or not: a second buffer gains nothing
        return True

    def gathers_layout(self, on_gpu: bool) -> bool:
        # numpy's GEMM of (L, K) rows is the CPU's fastest gate: scattered targets are gathered
        # below it instead of a transposed copy and scatter per gate
        return not on_gpu

    def contiguous_gate_passes(self, k: int, on_gpu: bool) -> float:
        fallback = super().contiguous_gate_passes(k, on_gpu)
        return measured_passes(NATIVE_GPU_PASSES, k, fallback) if on_gpu else fallback

    def takes_scattered(self, k: int, on_gpu: bool) -> bool:
        if not on_gpu:
            return False
        return (k in self.dmma_dims and dmma_available()) or (k in SUPPORTED_DIMS and k <= self.small_gate_max_dim)

    def apply_scattered(self, u, state, targets) -> bool:
        """The DMMA kernel where apply_batched would take it at stride 2^targets[0], else the
        CUDA-core kernel (one thread per column, any stride); 2- and 3-qubit gates with two
        targets below PACKED_BELOW_QUBIT run packed in the DMMA kernel for K = PACKED_DMMA_K
        (I (x) U over 4 or 2 columns), where the CUDA-core kernel's loads use part of each sector."""
        k = u.shape[0]
        if not self.takes_scattered(k, is_gpu_array(state)):
            return False
        self._count(state.size // k, k, k)
        packed = self._packed_for_dmma(u, state, targets)
        if packed is not None:
            packed_u, packed_targets = packed
            apply_native_gate(packed_u, state, state, packed_targets)
            self.last_call_info = {"kernel": "dmma", "packed_columns": PACKED_DMMA_K // k}
        elif self._uses_dmma(k, run_length(targets), True) or k not in SUPPORTED_DIMS or k > self.small_gate_max_dim:
            apply_native_gate(u, state, state, targets, fragments=self._fragments_of(u))
            self.last_call_info = {"kernel": "dmma"}
        else:
            apply_small_gate(u, state, state, targets)
            self.last_call_info = {"kernel": "small_gate"}
        return True

    def _packed_for_dmma(self, u, state, targets):
        """(I (x) u, targets and packing qubits) where a small gate with low targets should run
        packed in the DMMA kernel, else None."""
        k = u.shape[0]
        low_targets = sum(t < PACKED_BELOW_QUBIT for t in targets)
        if k not in PACKED_GATE_DIMS or low_targets < 2 or not self._uses_dmma(PACKED_DMMA_K, 1, True):
            return None
        return packed_gate(u, targets, state.size, PACKED_DMMA_K)

    def apply_batched(self, u, x, out):
        n_left, k, n_right = x.shape
        self._count(n_left * n_right, k, k)
        on_gpu = is_gpu_array(x)
        if self._uses_dmma(k, n_right, on_gpu):
            apply_native_gate(u, x, out, fragments=self._fragments_of(u))
            self.last_call_info = {"kernel": "dmma"}
            return
        if self._uses_small_gate_kernel(k, n_right, on_gpu):
            apply_small_gate(u, x, out)
            self.last_call_info = {"kernel": "small_gate"}
            return
        if not on_gpu and n_right == 1 and not np.may_share_memory(x, out):
            self.last_call_info = {"kernel": "zgemm"}
            # straight into out: no result array of the state's size per call
            np.matmul(x.reshape(n_left, k), u.T, out=out.reshape(n_left, k))
            return
        as_rows = 1 < n_right < self.min_batched_stride
        product = _rows_product if as_rows else _view_product
        self.last_call_info = {"kernel": "zgemm-rows" if as_rows else "zgemm"}
        # in chunks also out of place: a whole-view matmul may allocate a state-sized result
        # of its own before copying it into out (measured: an out-of-memory at 32 qubits);
        # the rows product holds two arrays of a chunk's size (its copy and its result)
        max_columns = self.workspace.rows((32 if as_rows else 16) * k, on_gpu)
        for ls, rs in iter_column_chunks(n_left, n_right, max_columns):
            out[ls, :, rs] = product(u, x[ls, :, rs])


def _integer_option(name: str, value, low: int, high: int = None) -> int:
    """value as an int in low..high (no upper bound when high is None), else a BackendError naming it."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low
            or (high is not None and value > high)):
        bounds = f"in {low}..{high}" if high is not None else f">= {low}"
        raise BackendError(f"{name} must be an integer {bounds}, got {value!r}")
    return int(value)


def _view_product(u, block):
    """u @ block[l] for every l of an (L, K, R) block, as one (batched) GEMM, in a new array."""
    xp = array_module(block)
    n_left, k, n_right = block.shape
    if n_right == 1:
        return xp.matmul(block.reshape(n_left, k), u.T).reshape(n_left, k, 1)
    return xp.matmul(u, block)


def _rows_product(u, block):
    """u @ block[l] for every l of an (L, K, R) block as one GEMM: the block's columns copied
    into L R contiguous rows, times u^T; returned as an (L, K, R) view of the (L, R, K) result."""
    xp = array_module(block)
    n_left, k, n_right = block.shape
    rows = xp.ascontiguousarray(block.transpose(0, 2, 1)).reshape(n_left * n_right, k)
    return xp.matmul(rows, u.T).reshape(n_left, n_right, k).transpose(0, 2, 1)
