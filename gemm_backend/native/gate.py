"""The FP64 tensor-core gate kernel (kernels/native_gate.cu): column <- U @ column for every
column of a flat state at any set of target bits (target_layout.py), in place, for K = 8..64.

The CUDA-core kernel (small_gate.py) is bound by its FP64 FMAs from K = 32 (8 K^2 flops per
column on the CUDA cores), and cuBLAS pays a second pass through memory; here the products run on
DMMA (mma.sync m16n8k4 f64) inside the tile skeleton of the fused INT8 kernel, so each amplitude is
read once and written once.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..arrays import array_module, compute_capability, cupy_module
from ..errors import BackendError
from ..kernel_launch import persistent_blocks, raw_module, shared_limit
from ..target_layout import ADDRESS_TABLE_BYTES, launch_layout, pack_targets, run_length

DMMA_DIMS = (8, 16, 32, 64)
MIN_COMPUTE_CAPABILITY = 90  # mma.sync m16n8k4 / m16n8k8 in f64 are Hopper instructions
SMALL_STRIDE = 8  # R up to this takes the small-stride launch shape
STAGED_STRIDE_LIMIT = 32  # small_gate.py stages tiles (slowly, at K = 16) below this stride
MAX_WARPS = 8
# -D options of native_gate.cu: its __launch_bounds__ (the most warps a launch_shape takes).
KERNEL_DEFINITIONS = (f"-DMAX_WARPS_PER_BLOCK={MAX_WARPS}",)


@dataclass(frozen=True)
class NativeLaunch:
    """One kernel variant and its launch shape."""

    k: int
    n_tiles: int  # NT: 8-column mma tiles per warp
    prefetch: bool
    blocks_per_sm: int
    warps: int = MAX_WARPS
    mma_k: int = 4  # DMMA shape m16n8k4 or m16n8k8

    @property
    def name(self) -> str:
        return (f"native_gate<{self.k}, {self.n_tiles}, {str(self.prefetch).lower()}, {self.blocks_per_sm}, "
                f"{self.mma_k}>")

    @property
    def gate_bytes(self) -> int:
        return 16 * (self.k // 8) * (self.k // 4) * 32

    @property
    def fixed_bytes(self) -> int:
        """Shared memory besides the stages: the gate and the address tables."""
        return self.gate_bytes + ADDRESS_TABLE_BYTES

    @property
    def stage_bytes_per_warp(self) -> int:
        return 16 * self.n_tiles * (self.k // 4) * 32 if self.prefetch else 0

    @property
    def shared_bytes(self) -> int:
        return self.fixed_bytes + self.warps * self.stage_bytes_per_warp


def default_launch(k: int, n_right: int) -> NativeLaunch:
    """The shape measured fastest on the H100 (BENCHMARKS.md): no prefetch (the cp.async stage costs
    more than it hides); two n-tiles per warp and one block per multiprocessor, except one n-tile
    and two blocks for K <= 16 at small strides. m16n8k4 (m16n8k8 is no faster)."""
    if k not in DMMA_DIMS:
        raise BackendError(f"the DMMA gate kernel takes K in {DMMA_DIMS}, got {k}")
    if k <= 16 and n_right <= SMALL_STRIDE:
        return launch_shape(k, n_tiles=1, prefetch=False, blocks_per_sm=2)
    return launch_shape(k, n_tiles=2, prefetch=False, blocks_per_sm=1)


def dmma_available() -> bool:
    """Whether the current GPU has the f64 mma shapes this kernel uses (sm_90 and newer)."""
    return compute_capability() >= MIN_COMPUTE_CAPABILITY


def dmma_preferred(k: int, n_right: int) -> bool:
    """Whether this kernel should take inner size k at stride R rather than the CUDA-core one
    (small_gate.py), measured on the H100 (BENCHMARKS.md): from K = 32 always (FP64 FMAs bound the
    CUDA-core kernel there); at K = 16 for small strides but not large ones. At K = 8 the two are
    close, and the caller decides."""
    return k in DMMA_DIMS and (k >= 32 or n_right < STAGED_STRIDE_LIMIT)


def launch_shape(k: int, n_tiles: int, prefetch: bool, blocks_per_sm: int, mma_k: int = 4) -> NativeLaunch:
    """A NativeLaunch with as many warps (up to 8) as shared memory allows at blocks_per_sm."""
    limit = shared_limit(blocks_per_sm)
    shape = NativeLaunch(k, n_tiles, prefetch, blocks_per_sm, MAX_WARPS, mma_k)
    if shape.shared_bytes <= limit:
        return shape
    warps = (limit - shape.fixed_bytes) // max(1, shape.stage_bytes_per_warp)
    if warps < 4:
        raise BackendError(f"no shared memory for {shape.name} at {blocks_per_sm} block(s) per multiprocessor")
    return NativeLaunch(k, n_tiles, prefetch, blocks_per_sm, int(warps), mma_k)


def gate_fragments(u):
    """(K/8, K/4, 32, 2) float64 on u's device: for m-tile mt, slot j and lane (g, t) =
    (lane // 4, lane % 4), (Re, Im) of u[8 mt + g, 4 j + t], the A operand pairs of native_gate.cu."""
    xp = array_module(u)
    k = u.shape[0]
    lane = np.arange(32)
    rows = 8 * np.arange(k // 8)[:, None, None] + (lane // 4)[None, None, :]
    cols = 4 * np.arange(k // 4)[None, :, None] + (lane % 4)[None, None, :]
    picked = xp.asarray(u, dtype=xp.complex128)[xp.asarray(rows), xp.asarray(cols)]
    return xp.ascontiguousarray(xp.stack([picked.real, picked.imag], axis=-1))


@functools.lru_cache(maxsize=None)
def _kernel(name: str):
    return raw_module("native_gate.cu", [name], KERNEL_DEFINITIONS).get_function(name)


def native_gate_call(u, x, out, targets=None, launch: NativeLaunch = None, fragments=None) -> tuple:
    """(launch, arguments) of the kernel call that applies u to x's columns, written to out:
    `launch` (default_launch unless given) and the kernel's arguments (flat x, flat out, columns,
    packed targets, gate fragments); arrays numpy or cupy like u and x (apply_native_gate's
    arguments)."""
    k = u.shape[0]
    x, out, targets = launch_layout(x, out, k, targets)
    launch = default_launch(k, run_length(targets)) if launch is None else launch
    if launch.k != k:
        raise BackendError(f"launch shape for K = {launch.k} used with K = {k}")
    fragments = gate_fragments(u) if fragments is None else fragments
    return launch, (x, out, x.size // k, pack_targets(targets), fragments)


def apply_native_gate(u, x, out, targets=None, launch: NativeLaunch = None, fragments=None) -> None:
    """Every column of x times u, written to out (out may be x). u: (K, K) complex128 cupy, K in
    DMMA_DIMS. Without targets, x and out are C-contiguous (L, K, R) complex128 cupy views with R a
    power of two (out[l] = u @ x[l]); with targets (gate index bit i at bit targets[i]), flat states of 2^n
    amplitudes whose columns sit at those bits (target_layout.py). fragments: gate_fragments(u),
    when made beforehand."""
    cp = cupy_module()
    launch, (x, out, n_columns, packed_targets, fragments) = native_gate_call(u, x, out, targets, launch, fragments)
    kernel = _kernel(launch.name)
    kernel.max_dynamic_shared_size_bytes = launch.shared_bytes
    blocks = persistent_blocks(-(-n_columns // (8 * launch.n_tiles * launch.warps)), launch.blocks_per_sm)
    kernel((blocks,), (32 * launch.warps,), (x, out, cp.int64(n_columns), cp.uint64(packed_targets), fragments),
           shared_mem=launch.shared_bytes)
