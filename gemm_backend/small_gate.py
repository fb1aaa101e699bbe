"""GPU kernel for a small dense gate on an (L, K, R) view, in place (kernels/small_gate.cu).

cuBLAS spends most of its time on launch and tiling overhead when K <= 32; this kernel
moves each amplitude once through registers, so it runs near the memory floor.
"""
import functools
from pathlib import Path

from .arrays import cupy_module, multiprocessor_count
from .errors import BackendError

SUPPORTED_DIMS = (2, 4, 8, 16, 32)

def staged_tile(k: int) -> int:
    """Columns per staged tile (one thread each): shared memory holds U (16 K^2 bytes) plus the tile
    (16 (K+1) TILE bytes), within the 48 KB a block gets without opting in."""
    return 128 if k <= 16 else 32

THREADS = 128
_SOURCE = Path(__file__).with_name("kernels") / "small_gate.cu"


def kernel_is_faster(k: int, n_right: int) -> bool:
    """Whether this kernel beats cuBLAS for inner size k and stride R (H200, bench_gates.py):
    at K = 32 with R < 32 the staged tile is too small (4.9x the memory floor vs 1.8x)."""
    return k in SUPPORTED_DIMS and (k <= 16 or n_right >= 32)


def _kernel_names(k: int) -> tuple:
    return f"apply_small_gate_direct<{k}>", f"apply_small_gate_staged<{k}, {staged_tile(k)}>"


@functools.lru_cache(maxsize=None)
def _module():
    cp = cupy_module()
    names = [name for k in SUPPORTED_DIMS for name in _kernel_names(k)]
    module = cp.RawModule(code=_SOURCE.read_text(), options=("--std=c++17",), name_expressions=names)
    return module


def apply_small_gate(u, x, out) -> None:
    """out[l] = u @ x[l]. u: (K, K) complex128 cupy; x, out: C-contiguous (L, K, R) complex128 cupy
    views (out may be x). K must be in SUPPORTED_DIMS and R a power of two."""
    cp = cupy_module()
    n_left, k, n_right = x.shape
    if k not in SUPPORTED_DIMS:
        raise BackendError(f"small-gate kernel supports K in {SUPPORTED_DIMS}, got {k}")
    if not (x.flags.c_contiguous and out.flags.c_contiguous):
        raise BackendError("small-gate kernel needs C-contiguous (L, K, R) views of the state")
    if n_right & (n_right - 1):
        raise BackendError(f"small-gate kernel needs R to be a power of two, got {n_right}")
    u = cp.ascontiguousarray(u, dtype=cp.complex128)
    n_columns = n_left * n_right
    log2_right = n_right.bit_length() - 1
    direct, staged = (_module().get_function(name) for name in _kernel_names(k))
    max_blocks = multiprocessor_count() * 16
    tile = staged_tile(k)
    if n_right < 32 and n_right <= tile and n_columns % tile == 0:
        blocks = min(max_blocks, n_columns // tile)
        staged((blocks,), (tile,), (x, out, u, cp.int64(n_columns), cp.int32(log2_right)))
    else:
        blocks = min(max_blocks, -(-n_columns // THREADS))
        direct((blocks,), (THREADS,), (x, out, u, cp.int64(n_columns), cp.int32(log2_right)))
