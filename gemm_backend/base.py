"""The interface every complex GEMM backend implements.

A backend multiplies complex128 matrices; it knows nothing of qubits. The engine calls
`apply_batched(u, x, out)` on an (L, K, R) view of the state: out[l] = u @ x[l] for every l.
Arrays are numpy or cupy; a backend computes on whichever device its inputs live.
"""
from .arrays import array_module, is_gpu_array, iter_column_chunks
from .errors import BackendError
from .gate_cost import CPU_FLOPS_PER_BYTE, GPU_FLOPS_PER_BYTE, TRANSPOSED_EXTRA_PASSES, roofline_passes
from .workspace import DEFAULT_WORKSPACE_BYTES, Workspace  # noqa: F401 (DEFAULT_WORKSPACE_BYTES: the backends' default)


class GemmBackend:
    """Base class. Subclasses implement `matmul`; most inherit `apply_batched`.

    Attributes:
        name: registry name, e.g. "cublas" or "int8-auto".
        options: the keyword options the backend was built with (for reports).
        last_call_info: what the most recent matmul/apply_batched call did, e.g.
            {"splits": 9}; the simulator records it per gate.
        workspace: the Workspace (workspace.py): working memory a call may allocate beyond its
            inputs and outputs; large products are processed in chunks to stay inside it. The
            workspace_bytes option None makes it automatic, for backends with AUTOMATIC_WORKSPACE.
    """

    name = "base"
    #: Keyword options accepted by the constructor, checked by the registry.
    OPTIONS: tuple = ()
    #: Whether workspace_bytes=None (the automatic workspace) is accepted: only by backends that
    #: size every call's working memory through workspace.for_call.
    AUTOMATIC_WORKSPACE = False

    def __init__(self, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
        self.workspace = Workspace.from_option(workspace_bytes, self.AUTOMATIC_WORKSPACE)
        self.options: dict = {}
        self.last_call_info: dict = {}
        self.calls = 0
        self.flops = 0.0

    # -- to implement -------------------------------------------------------------------
    def matmul(self, a, b):
        """C = A @ B. a: (m, k), b: (k, n), complex128 (or float64); returns (m, n) complex128."""
        raise NotImplementedError

    def workspace_bytes_per_row(self, k: int, n: int) -> int:
        """Bytes of working memory one row of A costs inside `matmul` (used for chunking)."""
        return 16 * (k + n)

    @property
    def workspace_bytes(self) -> int:
        """The workspace's nominal bytes (Workspace.nominal)."""
        return self.workspace.nominal

    # -- shared behaviour ---------------------------------------------------------------
    def works_in_place(self, k: int, on_gpu: bool = True) -> bool:
        """True when apply_batched with out=x costs no more than out-of-place for inner size k."""
        return False

    def takes_scattered(self, k: int, on_gpu: bool) -> bool:
        """Whether apply_scattered applies gates of inner size k on this device in place (then a
        gate on non-contiguous targets needs no transposed copy of the state)."""
        return False

    def apply_scattered(self, u, state, targets) -> bool:
        """Replace every column of the flat state by u times it, in place, where a column is the K
        amplitudes at the ascending bit positions `targets` (target_layout.py). u: (K, K)
        complex128; state: (2^n,) complex128 on the same device. Returns False, having done
        nothing, where no kernel takes the gate (the caller then goes through a transposed copy
        and apply_batched)."""
        return False

    def gathers_layout(self, on_gpu: bool) -> bool:
        """Whether the engine should run this backend's gates through a gathered copy of the state
        in a permuted qubit layout (qsim.gathered_layout) where it holds a spare state buffer:
        apply_batched then gets (L, K, 1) views and another buffer as out. Only for backends whose
        product of a column does not depend on the other columns or their order."""
        return False

    def gate_passes(self, k: int, on_gpu: bool, scattered: bool = False) -> float:
        """Estimated time of one k x k gate on a whole state, in passes over the state (one read
        and write of it; gate_cost.py): the in-place cost, plus the transposed copy's passes
        where the targets are not contiguous (`scattered`) and no kernel takes them in place."""
        passes = self.contiguous_gate_passes(k, on_gpu)
        if scattered and not self.takes_scattered(k, on_gpu):
            passes += TRANSPOSED_EXTRA_PASSES
        return passes

    def contiguous_gate_passes(self, k: int, on_gpu: bool) -> float:
        """gate_passes on contiguous targets: the roofline of a dense GEMM unless a backend has
        measured kernels."""
        return roofline_passes(k, GPU_FLOPS_PER_BYTE if on_gpu else CPU_FLOPS_PER_BYTE)

    # -- a run of many gates (the simulator) --------------------------------------------------
    def warm_up(self, u, x) -> None:
        """Build everything apply_batched(u, x, .) will use (kernels, library handles) by
        running it once on x, a small (L, K, R) block of the same K and stride class."""
        self.apply_batched(u, x, x)

    def prepare(self, u) -> None:
        """Host-side work for gate u (K, K), done ahead of its apply_batched (before the timed
        gates, or while the device runs the gate before); apply_batched with the same u object
        then skips it. What it keeps stays until release(u) or finish_run. Default: none."""

    def release(self, u) -> None:
        """Forget what prepare(u) kept (the caller is done with gate u). Default: nothing kept."""

    def start_run(self) -> None:
        """From now on apply_batched may defer its error checks (no host synchronisation)."""

    def finish_run(self) -> None:
        """Raise what the deferred checks found and forget what prepare() kept."""

    def apply_batched(self, u, x, out):
        """out[l] = u @ x[l] for every l.

        u: (K, K) complex128; x, out: (L, K, R) complex128 views on the same device.
        out may be x itself: then the product is done in place, chunk by chunk, with at
        most workspace.for_call(...) of extra memory.
        """
        n_left, k, n_right = x.shape
        row_bytes = self.workspace_bytes_per_row(k, k) + 32 * k  # + transposed copy and result
        max_columns = self.workspace.rows(row_bytes, is_gpu_array(x))
        u_t = u.T
        chunk_infos = []
        for ls, rs in iter_column_chunks(n_left, n_right, max_columns):
            block = x[ls, :, rs]
            lc, _, rc = block.shape
            if rc == 1:
                rows = block.reshape(lc, k)
                out[ls, :, rs] = self.matmul(rows, u_t).reshape(lc, k, 1)
            else:
                rows = block.transpose(0, 2, 1).reshape(lc * rc, k)
                product = self.matmul(rows, u_t).reshape(lc, rc, k)
                out[ls, :, rs] = product.transpose(0, 2, 1)
            chunk_infos.append(self.last_call_info)
        self.last_call_info = merge_call_infos(chunk_infos)

    def _count(self, m: int, k: int, n: int) -> None:
        self.calls += 1
        self.flops += 8.0 * m * k * n

    def reset_statistics(self) -> None:
        """Zero the cumulative counters (the simulator does this after its warm-up)."""
        self.calls = 0
        self.flops = 0.0

    def statistics(self) -> dict:
        """Cumulative counters since construction or the last reset."""
        return {"calls": self.calls, "flops": self.flops}

    def implementation(self, on_gpu: bool) -> str:
        """What does the work on this device, for reports beside the backend's name (the name stays
        the key: "cublas" on the CPU is numpy)."""
        return "CUDA" if on_gpu else "numpy"


def merge_call_infos(infos: list) -> dict:
    """One info dict for several chunk calls: numbers become their maximum, the rest the last value.

    The maximum is the honest summary for split counts (the costliest chunk decides).
    """
    merged: dict = {}
    for info in infos:
        for key, value in info.items():
            previous = merged.get(key)
            if _is_number(value) and _is_number(previous):
                merged[key] = max(previous, value)
            elif value is not None or key not in merged:
                merged[key] = value  # None (e.g. a fallback's "splits") never hides a chunk's number
    return merged


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_matmul_operands(a, b, what: str = "matmul"):
    """(xp, a, b) for C = A @ B after the checks every backend needs: both operands numpy or
    both cupy, 2-D, numeric, equal inner sizes. Dtype conversion is left to the backend."""
    xp = array_module(a)
    if array_module(b) is not xp:
        raise BackendError(f"{what}: a and b must both be numpy or both cupy arrays (one device)")
    a, b = xp.asarray(a), xp.asarray(b)
    need = f"need a (m, k) and b (k, n), got shapes {a.shape} and {b.shape}"
    for name, x in (("a", a), ("b", b)):
        if x.ndim != 2:
            raise BackendError(f"{what}: {name} must be a 2-D matrix; {need}")
        if x.dtype.kind not in "biufc":
            raise BackendError(f"{what}: {name} must hold numeric (real or complex numbers) values, got dtype {x.dtype}")
    if a.shape[1] != b.shape[0]:
        raise BackendError(f"{what}: inner sizes differ; {need}")
    return xp, a, b


def as_complex(x):
    """x as complex128 on its own device (no copy when it already is)."""
    xp = array_module(x)
    return xp.asarray(x, dtype=xp.complex128)
