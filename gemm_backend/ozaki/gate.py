"""The fused INT8 Ozaki-I gate kernels on the GPU (kernels/ozaki_gate.cu, ozaki_gate_wide.cu).

out[l] = U @ x[l] on an (L, K, R) view, or on the columns at any target bits of a flat state,
with every amplitude read once and written once: the column digits are made on chip, the gate's
digits are made once per gate (here) in mma fragment order, INT8 tensor-core products, exact
diagonal sums, FP64 accumulation, one write. Their bits equal the numpy specification
(backend.py's tile path with the same plan): A = the state's columns (plan.a_slices digits),
B = the gate (plan.b_slices digits).

Two kernels: for K <= 64 (FUSED_DIMS) a quad of lanes holds a column's digits in registers and the
gate's digits sit in shared memory (Launch); for K = 128 .. 512 (WIDE_DIMS) a block makes the digits
of WIDE_COLUMNS[K] columns in shared memory and reads the gate's digits through L2 (WideLaunch).
The wide kernel also takes K = 64 (WIDE_UNMEASURED_DIMS: wide_launch only, slower than the fused
kernel there). At K = 512 int8-auto runs it only for plans the cost model finds cheaper than
Ozaki-II (cost.py).
"""
import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..arrays import array_module, compute_capability, cupy_module, gpu_available
from ..errors import BackendError
from ..kernel_launch import arch_kernel, persistent_blocks, raw_module, shared_limit
from .split import row_exponents, split_rows
from ..target_layout import ADDRESS_TABLE_BYTES, launch_layout, pack_targets, packed_gate

FUSED_DIMS = (2, 4, 8, 16, 32, 64)
WIDE_DIMS = (128, 256, 512)
# A size the wide kernel takes (wide_launch, the tests) that plan_launch does not route to it: at
# K = 64 the fused kernel is faster (BENCHMARKS.md round 13: 3.03 passes against 3.37 at N = 30).
WIDE_UNMEASURED_DIMS = (64,)
# Columns of the wide kernel's block tile (NB) by K: 32; 64 at K = 64, where they halve the L2
# reads of the gate's digits and still fit. Where the column digits do not fit in shared memory
# (K = 512 with 9 digits: 295 KB), half as many, down to WIDE_MIN_COLUMNS.
WIDE_COLUMNS = {64: 64, 128: 32, 256: 32, 512: 32}
WIDE_MIN_COLUMNS = 16
WIDE_WARPS = 8
# The wide kernel's products by warpgroups (wgmma) where the GPU has them: Hopper (compute
# capability 9.0, NVRTC target sm_90a). Four n-tiles per warpgroup while ptxas keeps the diagonal
# sums in WGMMA_DIAGONAL_REGISTERS without spilling (ten diagonals), else two; three gate digits
# held (and three more read ahead). Measured faster than mma.sync at K = 128 and 256 on the H100
# (BENCHMARKS.md round 12, wide_variants.py).
WGMMA_ARCH = "sm_90a"
WGMMA_CAPABILITY = 90
WGMMA_DIAGONAL_REGISTERS = 160
WGMMA_GATE_DIGITS_HELD = 3
# Two chunks of wgmma products in flight (two register sets of gate digits) from this K on: 3-12%
# faster at K = 256, 512, no faster at K = 128 (BENCHMARKS.md round 13).
WGMMA_TWO_CHUNKS_FROM_K = 256
# The wide kernel's WideTables per gate amplitude (its offset and the exponent of its embedded
# rows) and per tile column (offset, exponent, largest |value|); the kernel asserts the sum.
WIDE_TABLE_BYTES_PER_AMPLITUDE = 8 + 4
WIDE_TABLE_BYTES_PER_COLUMN = 4 + 4 + 8
# Registers of the wide kernel's int32 diagonal sums per lane: WARP_NT n-tiles x 4 per diagonal.
# Four n-tiles per warp (half the L2 reads of the gate's digits per product) while these stay
# within WIDE_DIAGONAL_REGISTERS[K], else two (at most the tile's n-tiles); the next tile staged
# in shared memory at K in WIDE_STAGED_DIMS only. The shapes measured fastest on the H100 at
# K = 128, 256 (BENCHMARKS.md round 10, wide_variants.py); K = 512 takes K = 256's rule and
# K = 64 K = 128's, staged, not yet measured.
WIDE_DIAGONAL_REGISTERS = {64: 144, 128: 144, 256: 96, 512: 96}
WIDE_STAGED_DIMS = (64, 128)
# Gates of these sizes run packed in the K = PACKED_K kernel: PACKED_K / k of their columns (told
# apart by a few free qubits, target_layout.packing_qubits) form one kernel column under the gate
# I (x) U, each with its own exponent, so every bit is the small gate's while the mma k-tiles are
# used whole (a 4 x 4 gate alone fills a quarter of them).
PACKED_K = 16
PACKED_GATE_DIMS = (4, 8)
MAX_STATE_DIGITS = 16
MAX_TOP = 63  # the chunk tops travel as bits of a 64-bit mask
MAX_WARPS = 8
MIN_PREFETCH_WARPS = 4
DIGIT_REGISTERS = 128  # per-lane registers the column digits may take (NT at K = 64)
DIGIT_BITS = 8
_EXPONENT_BYTES = 256
_FIXED_EXTRA_BYTES = _EXPONENT_BYTES + ADDRESS_TABLE_BYTES  # shared memory besides the gate and stages


@dataclass(frozen=True)
class Launch:
    """One kernel variant (the plan is compiled in) and its launch shape."""

    k: int  # K of the kernel
    group: int  # the gate's size: K, or less in a packed kernel
    state_slices: int
    gate_slices: int
    top: int
    chunk_tops: int  # bit t set for every chunk's top diagonal t
    n_tiles: int  # NT: 8-column mma tiles per warp
    prefetch: bool
    warps: int
    shared_bytes: int
    blocks_per_sm: int = 1  # 2 caps the registers at 128 so that two blocks share a multiprocessor
    source: ClassVar[str] = "ozaki_gate.cu"
    definitions: ClassVar[tuple] = (f"-DMAX_WARPS_PER_BLOCK={MAX_WARPS}",)
    arch: ClassVar = None  # cupy's own NVRTC target

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def block_columns(self) -> int:
        """State columns a block takes at a time."""
        return 8 * self.n_tiles * self.warps

    @property
    def name(self) -> str:
        return (f"ozaki_gate<{self.k}, {self.group}, {self.state_slices}, {self.gate_slices}, {self.top}, "
                f"{self.chunk_tops}ULL, "
                f"{self.n_tiles}, {str(self.prefetch).lower()}, {self.blocks_per_sm}>")


@dataclass(frozen=True)
class WideLaunch:
    """A variant of the wide kernel (K in WIDE_DIMS or WIDE_UNMEASURED_DIMS; the plan compiled in)
    and its shared memory."""

    k: int
    state_slices: int
    gate_slices: int
    top: int
    chunk_tops: int
    warp_n_tiles: int  # n-tiles of 8 columns each warp computes per m-tile
    gate_digits_held: int  # gate digits a lane holds in registers at once
    staged: bool  # the next tile's amplitudes copied into shared memory while this tile's products run
    shared_bytes: int
    columns: int  # the block's tile of columns (NB)
    blocks_per_sm: int = 1  # 2 caps the registers at 128 so that two blocks share a multiprocessor
    wgmma: bool = False  # products by warpgroups (sm_90a), four warps per m-tile round
    chunks_in_flight: int = 1  # wgmma: chunks of products issued before the one before is waited for (1, 2)
    source: ClassVar[str] = "ozaki_gate_wide.cu"
    definitions: ClassVar[tuple] = (f"-DWIDE_WARPS={WIDE_WARPS}",
                                    f"-DWIDE_TABLE_BYTES_PER_AMPLITUDE={WIDE_TABLE_BYTES_PER_AMPLITUDE}",
                                    f"-DWIDE_TABLE_BYTES_PER_COLUMN={WIDE_TABLE_BYTES_PER_COLUMN}")
    threads: ClassVar[int] = 32 * WIDE_WARPS

    @property
    def group(self) -> int:
        return self.k

    @property
    def block_columns(self) -> int:
        """State columns a block takes at a time."""
        return self.columns

    @property
    def name(self) -> str:
        return (f"ozaki_gate_wide<{self.k}, {self.state_slices}, {self.gate_slices}, {self.top}, "
                f"{self.chunk_tops}ULL, {self.columns}, {self.warp_n_tiles}, {self.gate_digits_held}, "
                f"{str(self.staged).lower()}, {self.blocks_per_sm}, {str(self.wgmma).lower()}, "
                f"{self.chunks_in_flight}>")

    @property
    def arch(self):
        """The architecture-specific NVRTC target the variant needs, or None (cupy's own)."""
        return WGMMA_ARCH if self.wgmma else None


def wgmma_fits(warp_n_tiles: int, columns: int) -> bool:
    """Whether the wide kernel's warpgroups (WIDE_WARPS / 4) split a tile's columns evenly in
    n-tile groups of warp_n_tiles (ozaki_gate_wide.cu's static_asserts)."""
    groups_per_m_tiles = columns // 8 // warp_n_tiles
    return WIDE_WARPS % 4 == 0 and groups_per_m_tiles >= 1 and (WIDE_WARPS // 4) % groups_per_m_tiles == 0


def wide_shared_bytes(k: int, state_slices: int, staged: bool, columns: int) -> int:
    """The wide kernel's shared memory in bytes: the tile's column digits (one byte per real and
    digit), its WideTables, and when staged the next tile's complex128 amplitudes."""
    tables = WIDE_TABLE_BYTES_PER_AMPLITUDE * k + WIDE_TABLE_BYTES_PER_COLUMN * columns
    return state_slices * 2 * k * columns + tables + (16 * k * columns if staged else 0)


def wgmma_here() -> bool:
    """Whether the current GPU runs the wide kernel's wgmma variants (False without a GPU)."""
    return gpu_available() and compute_capability() == WGMMA_CAPABILITY


def wide_launch(k: int, plan, staged: bool = None, columns: int = None, blocks_per_sm: int = 1, wgmma: bool = None):
    """The WideLaunch for a gate of size k in WIDE_DIMS + WIDE_UNMEASURED_DIMS under `plan`
    (columns: WIDE_COLUMNS[k] by default, halved down to WIDE_MIN_COLUMNS where their digits do
    not fit), or None when its column digits do not fit in shared memory (blocks_per_sm times);
    staged by default at K in WIDE_STAGED_DIMS where the stage fits beside them. Two blocks per
    multiprocessor take one n-tile per warp (their 128 registers hold no more diagonal sums).
    wgmma: products by warpgroups (by default where the GPU has them, one block per
    multiprocessor; None for two blocks, whose 128 registers would not hold the sums, or where its
    warps cannot split the columns, wgmma_fits), two chunks in flight from WGMMA_TWO_CHUNKS_FROM_K."""
    limit = shared_limit(blocks_per_sm)
    if columns is None:
        columns = WIDE_COLUMNS[k]
        while columns > WIDE_MIN_COLUMNS and wide_shared_bytes(k, plan.a_slices, False, columns) > limit:
            columns //= 2
    if staged is None:
        staged = k in WIDE_STAGED_DIMS and wide_shared_bytes(k, plan.a_slices, True, columns) <= limit
    shared = wide_shared_bytes(k, plan.a_slices, staged, columns)
    if shared > limit:
        return None
    diagonals = min(plan.top, plan.a_slices + plan.b_slices) - 1
    if wgmma is None:
        wgmma = blocks_per_sm == 1 and wgmma_here()
    if wgmma:
        warp_n_tiles = min(4 if 4 * 4 * diagonals <= WGMMA_DIAGONAL_REGISTERS else 2, columns // 8)
        held = min(plan.b_slices, WGMMA_GATE_DIGITS_HELD)
        if blocks_per_sm > 1 or not wgmma_fits(warp_n_tiles, columns):
            return None
    else:
        if blocks_per_sm > 1:
            warp_n_tiles = 1
        else:
            warp_n_tiles = min(4 if 4 * 4 * diagonals <= WIDE_DIAGONAL_REGISTERS[k] else 2, columns // 8)
        held = min(plan.b_slices, 9 if warp_n_tiles == 2 else 3)
    in_flight = 2 if wgmma and k >= WGMMA_TWO_CHUNKS_FROM_K else 1
    return WideLaunch(k, plan.a_slices, plan.b_slices, plan.top, chunk_mask(plan), warp_n_tiles, held, staged,
                      shared, columns, blocks_per_sm, wgmma, in_flight)


def tiles(k: int) -> tuple:
    """(k-tiles, m-tiles, amplitude slots per lane) of the kernel for K = k."""
    k_tiles, m_tiles = -(-2 * k // 32), -(-2 * k // 16)
    return k_tiles, m_tiles, 4 * k_tiles


def gate_bytes(k: int, gate_slices: int) -> int:
    k_tiles, m_tiles, _ = tiles(k)
    return gate_slices * m_tiles * k_tiles * 32 * 16


def default_shape(k: int, state_slices: int, gate_slices: int) -> tuple:
    """(n_tiles, prefetch, blocks_per_sm) measured fastest on the H100 (BENCHMARKS.md, rounds 4
    and 7: N = 30, int8-auto's plans, several first targets): no prefetch; at K = 32 one 8-column
    tile per warp and three blocks per multiprocessor where the gate's digits fit three times;
    elsewhere two blocks wherever they fit twice, with two tiles per warp up to K = 32 and one at
    K = 64. Where they fit once (K = 64 with more gate digits): one block, two tiles while the
    column digits fit in 128 registers."""
    fixed = gate_bytes(k, gate_slices) + _FIXED_EXTRA_BYTES
    if k == 32 and fixed <= shared_limit(3):
        return 1, False, 3
    if fixed <= shared_limit(2):
        return (2 if k <= 32 else 1), False, 2
    k_tiles = tiles(k)[0]
    return (2 if 2 * state_slices * k_tiles * 2 <= DIGIT_REGISTERS else 1), False, 1


def plan_launch(k: int, plan, n_tiles: int = None, prefetch: bool = None, blocks_per_sm: int = None,
                packed: bool = True, wgmma: bool = None):
    """The Launch for a gate of size k under `plan` (shape from default_shape unless given), or
    for k in WIDE_DIMS wide_launch's default WideLaunch (the shape arguments do not apply; wgmma
    passed on), or None when no fused kernel takes it. packed: sizes in PACKED_GATE_DIMS run in
    the PACKED_K kernel (apply_fused_gate goes back to their own where the qubits do not allow it)."""
    if (k not in FUSED_DIMS + WIDE_DIMS or plan.bits != DIGIT_BITS or plan.a_slices > MAX_STATE_DIGITS
            or plan.top > MAX_TOP):
        return None
    if k in WIDE_DIMS:
        return wide_launch(k, plan, wgmma=wgmma)
    group, k = k, PACKED_K if packed and k in PACKED_GATE_DIMS else k
    default = default_shape(k, plan.a_slices, plan.b_slices)
    n_tiles = default[0] if n_tiles is None else n_tiles
    prefetch = default[1] if prefetch is None else prefetch
    blocks_per_sm = default[2] if blocks_per_sm is None else blocks_per_sm
    limit = shared_limit(blocks_per_sm)
    fixed = gate_bytes(k, plan.b_slices) + _FIXED_EXTRA_BYTES
    if fixed > limit:
        if blocks_per_sm == 1:
            return None
        return plan_launch(group, plan, n_tiles, prefetch, 1, packed)
    per_warp = n_tiles * tiles(k)[2] * 32 * 16
    warps = min(MAX_WARPS, (limit - fixed) // per_warp)
    common = (k, group, plan.a_slices, plan.b_slices, plan.top, chunk_mask(plan), n_tiles)
    if prefetch and warps >= MIN_PREFETCH_WARPS:
        return Launch(*common, True, warps, fixed + warps * per_warp, blocks_per_sm)
    return Launch(*common, False, MAX_WARPS, fixed, blocks_per_sm)


def chunk_mask(plan) -> int:
    """Bit t set for every chunk's top diagonal t."""
    return sum(1 << chunk[0] for chunk in plan.chunks)


# -- the gate's digits in fragment order --------------------------------------------------
def embedded_gate_rows(u):
    """(2n, 2m) float64 for a complex (n, m) u: rows 2j, 2j + 1 = [Re u_j, -Im u_j] and
    [Im u_j, Re u_j] interleaved, the real embedding of output j (for a gate, output amplitude
    j; ozaki.py embeds the columns of B = U^T the same way)."""
    xp = array_module(u)
    n, m = u.shape
    rows = xp.empty((n, 2, m, 2), xp.float64)
    rows[:, 0, :, 0] = u.real
    xp.negative(u.imag, out=rows[:, 0, :, 1])
    rows[:, 1, :, 0] = u.imag
    rows[:, 1, :, 1] = u.real
    return rows.reshape(2 * n, 2 * m)


@functools.lru_cache(maxsize=None)
def fragment_index(k: int) -> tuple:
    """(rows, cols), each (MT, KT, 32, 16) int64, of the embedded gate entry in every byte of the
    mma A fragments; -1 where the fragment is padding."""
    k_tiles, m_tiles, _ = tiles(k)
    mt, kt, lane, byte = np.meshgrid(np.arange(m_tiles), np.arange(k_tiles), np.arange(32), np.arange(16),
                                     indexing="ij")
    g, t = lane >> 2, lane & 3
    amplitude_out = 8 * mt + g
    rows = 2 * amplitude_out + ((byte >> 2) & 1)  # rows g + 8 of an m-tile hold Im
    half, within = byte >> 3, byte & 3
    slot = 4 * kt + 2 * half + (within >> 1)
    amplitude_in = 4 * slot + t
    cols = 2 * amplitude_in + (within & 1)
    valid = (amplitude_out < k) & (amplitude_in < k)
    return np.where(valid, rows, -1), np.where(valid, cols, -1)


def gate_fragments(u, gate_slices: int):
    """(fragments, exponents): the gate's digits as (gate_slices, MT, KT, 32, 16) int8 in fragment
    order, and the exponent of each output amplitude's embedded rows, (K,) int32; numpy or cupy
    like u (K, K)."""
    xp = array_module(u)
    k = u.shape[0]
    rows = embedded_gate_rows(xp.asarray(u, dtype=xp.complex128))
    exponents, _ = row_exponents(rows, DIGIT_BITS)
    digits = split_rows(rows, exponents, gate_slices, DIGIT_BITS)  # (2K, s, 2K)
    row_index, col_index = fragment_index(k) if xp is np else _device_fragment_index(k)
    valid = row_index >= 0
    gathered = digits[xp.maximum(row_index, 0), :, xp.maximum(col_index, 0)]  # (MT, KT, 32, 16, s)
    gathered = xp.where(valid[..., None], gathered, 0).astype(xp.int8)
    return xp.ascontiguousarray(xp.moveaxis(gathered, -1, 0)), xp.ascontiguousarray(exponents[0::2])


@functools.lru_cache(maxsize=None)
def _device_fragment_index(k: int) -> tuple:
    return tuple(cupy_module().asarray(i) for i in fragment_index(k))


# -- launch -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _kernel(source: str, name: str, definitions: tuple, arch):
    if arch is not None:
        return arch_kernel(source, name, definitions, arch)
    return raw_module(source, [name], definitions).get_function(name)


def kernel_of(launch):
    """The compiled kernel variant of a Launch or WideLaunch (cupy, or arch_kernel for an
    architecture-specific one, caches it across runs)."""
    return _kernel(launch.source, launch.name, launch.definitions, launch.arch)


def build_kernel(launch) -> None:
    """Compile (or load from cupy's cache) the kernel variant of `launch` now, so that its first
    gate does not pay for it: the plan is compiled in, so gates of one size may need several."""
    kernel_of(launch)


def _packed(u, targets, n_amplitudes: int, plan, launch: Launch) -> tuple:
    """(I (x) U, the targets then the packing qubits, launch) for a packed launch (the packing
    qubits are the kernel's top gate bits, so each small column is whole slots), or (u, targets,
    the gate's own launch) where the state has too few qubits."""
    packed = packed_gate(u, targets, n_amplitudes, launch.k)
    if packed is None:
        return u, targets, plan_launch(launch.group, plan, packed=False)
    return (*packed, launch)


def fused_gate_call(u, x, out, plan, launch, targets=None) -> tuple:
    """(launch, arguments) of the kernel call that applies u to x's columns, written to out:
    `launch` with a packed one resolved (_packed), and the kernel's arguments before the NaN flag,
    (flat x, flat out, columns, packed targets, gate fragments, gate exponents); arrays numpy or
    cupy like u and x (apply_fused_gate's arguments)."""
    x, out, targets = launch_layout(x, out, u.shape[0], targets)
    if launch.group != launch.k:
        u, targets, launch = _packed(u, targets, x.size, plan, launch)
    fragments, exponents = gate_fragments(u, plan.b_slices)
    return launch, (x, out, x.size // launch.k, pack_targets(targets), fragments, exponents)


def apply_fused_gate(u, x, out, plan, launch, nonfinite=None, targets=None) -> None:
    """Every column of x times U by the fused kernel, written to out (out may be x). u: (K, K)
    complex128 cupy; `launch`: plan_launch's Launch (a packed one too: same bits) or WideLaunch.
    Without targets, x and out are C-contiguous (L, K, R) complex128 cupy views with R a power of
    two (out[l] = U @ x[l]); with targets (gate index bit i at bit targets[i]), flat states of 2^n
    amplitudes whose columns sit at those bits (target_layout.py). A column holding NaN or Inf is
    left as it was and reported: by a BackendError now, or, when `nonfinite` (a device
    int32 flag) is given, by setting it without waiting for the kernel."""
    cp = cupy_module()
    launch, (x, out, n_columns, packed_targets, fragments, exponents) = fused_gate_call(u, x, out, plan, launch,
                                                                                       targets)
    kernel = kernel_of(launch)
    kernel.max_dynamic_shared_size_bytes = launch.shared_bytes
    blocks = persistent_blocks(-(-n_columns // launch.block_columns), launch.blocks_per_sm)
    flag = cp.zeros(1, cp.int32) if nonfinite is None else nonfinite
    kernel((blocks,), (launch.threads,),
           (x, out, cp.int64(n_columns), cp.uint64(packed_targets), fragments, exponents, flag),
           shared_mem=launch.shared_bytes)
    if nonfinite is None and int(flag[0]):
        raise BackendError("the state contains NaN or Inf; the INT8 Ozaki scheme needs finite input")


