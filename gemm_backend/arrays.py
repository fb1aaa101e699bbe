"""One code path for numpy and cupy arrays.

cupy is optional: everything here works when it is not installed or sees no GPU.
"""
import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def cupy_module():
    """The cupy module, or None when it is not installed."""
    try:
        import cupy
    except Exception:  # ImportError, or a broken CUDA install that fails at import
        return None
    return cupy


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    """True when cupy is installed and sees at least one CUDA device."""
    cp = cupy_module()
    if cp is None:
        return False
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def _multiprocessors(device_id: int) -> int:
    return cupy_module().cuda.Device(device_id).attributes["MultiProcessorCount"]


def multiprocessor_count() -> int:
    """Multiprocessors of the current GPU (cached: reading device attributes costs host time
    that would show as idle GPU time between timed launches)."""
    return _multiprocessors(cupy_module().cuda.Device().id)


@functools.lru_cache(maxsize=None)
def _compute_capability(device_id: int) -> int:
    return int(cupy_module().cuda.Device(device_id).compute_capability)


def compute_capability() -> int:
    """The current GPU's compute capability as an integer (90 for Hopper), cached like
    multiprocessor_count."""
    return _compute_capability(cupy_module().cuda.Device().id)


def array_module(x):
    """numpy or cupy, whichever owns array x."""
    cp = cupy_module()
    if cp is not None:
        return cp.get_array_module(x)
    return np


def is_gpu_array(x) -> bool:
    return array_module(x) is not np


def to_host(x) -> np.ndarray:
    """x as a numpy array (a copy from the GPU, or x itself on the CPU)."""
    if is_gpu_array(x):
        return x.get()
    return np.asarray(x)


def check_finite(x, what: str) -> None:
    """Raise BackendError when x holds NaN or Inf; `what` names the operand in the message."""
    from .errors import BackendError

    xp = array_module(x)
    if not bool(xp.isfinite(x).all()):
        raise BackendError(f"{what} contains NaN or Inf; emulated GEMM needs finite input")


def iter_column_chunks(n_left: int, n_right: int, max_columns: int):
    """Split the columns (l, r) of an (L, K, R) view into chunks of at most max_columns.

    Yields (slice over L, slice over R). Chunks run along L while a whole R row fits,
    and along R otherwise, so every chunk is a strided view without a copy.
    """
    max_columns = max(1, int(max_columns))
    if n_right <= max_columns:
        step = max(1, max_columns // n_right)
        for l0 in range(0, n_left, step):
            yield slice(l0, min(n_left, l0 + step)), slice(0, n_right)
    else:
        for l0 in range(n_left):
            for r0 in range(0, n_right, max_columns):
                yield slice(l0, l0 + 1), slice(r0, min(n_right, r0 + max_columns))
