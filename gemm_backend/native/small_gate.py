"""GPU kernel for a small dense gate, in place (kernels/small_gate.cu): column <- U @ column for
every column of a flat state at any set of target bits (target_layout.py).

cuBLAS spends most of its time on launch and tiling overhead when K <= 32; this kernel
moves each amplitude once through registers, so it runs near the memory floor.
"""
import functools

from ..arrays import cupy_module, multiprocessor_count
from ..errors import BackendError
from ..kernel_launch import raw_module
from ..target_layout import contiguous_targets, launch_layout, pack_targets

SUPPORTED_DIMS = (2, 4, 8, 16, 32)

def staged_tile(k: int) -> int:
    """Columns per staged tile (one thread each): shared memory holds U (16 K^2 bytes) plus the tile
    (16 (K+1) TILE bytes), within the 48 KB a block gets without opting in."""
    return 128 if k <= 16 else 32

THREADS = 128


def kernel_is_faster(k: int, n_right: int) -> bool:
    """Whether this kernel beats cuBLAS for inner size k and stride R (for scattered targets,
    target_layout.run_length), measured with bench_gates.py: at K = 32 with R < 32 the staged tile
    is too small to keep the loads coalesced."""
    return k in SUPPORTED_DIMS and (k <= 16 or n_right >= 32)


def _kernel_names(k: int) -> tuple:
    return f"apply_small_gate_direct<{k}>", f"apply_small_gate_staged<{k}, {staged_tile(k)}>"


@functools.lru_cache(maxsize=None)
def _module():
    return raw_module("small_gate.cu", [name for k in SUPPORTED_DIMS for name in _kernel_names(k)])


def apply_small_gate(u, x, out, targets=None) -> None:
    """Every column of x times u, written to out (out may be x). u: (K, K) complex128 cupy, K in
    SUPPORTED_DIMS. Without targets, x and out are C-contiguous (L, K, R) complex128 cupy views
    with R a power of two (out[l] = u @ x[l]); with targets (gate index bit i at bit targets[i]), flat states
    of 2^n amplitudes whose columns sit at those bits (target_layout.py)."""
    cp = cupy_module()
    k = u.shape[0]
    if k not in SUPPORTED_DIMS:
        raise BackendError(f"small-gate kernel supports K in {SUPPORTED_DIMS}, got {k}")
    x, out, targets = launch_layout(x, out, k, targets)
    u = cp.ascontiguousarray(u, dtype=cp.complex128)
    n_columns = x.size // k
    n_right = 1 << targets[0]
    direct, staged = (_module().get_function(name) for name in _kernel_names(k))
    max_blocks = multiprocessor_count() * 16
    tile = staged_tile(k)
    if (targets == contiguous_targets(k, n_right) and n_right < 32 and n_right <= tile
            and n_columns % tile == 0):
        blocks = min(max_blocks, n_columns // tile)
        staged((blocks,), (tile,), (x, out, u, cp.int64(n_columns), cp.int32(targets[0])))
    else:
        blocks = min(max_blocks, -(-n_columns // THREADS))
        direct((blocks,), (THREADS,), (x, out, u, cp.int64(n_columns), cp.uint64(pack_targets(targets))))
