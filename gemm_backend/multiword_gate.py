"""The fused fp16x2 gate kernel on the GPU (kernels/multiword_gate.cu) for gates of up to 6 qubits.

out[l] = U @ x[l] with every amplitude read once and written once: the column's fp16 words are
made in registers, the gate's words (made once per gate, here, by the CPU path's own split) sit
in shared memory in mma fragment order, FP16 tensor-core products with FP32 accumulation in
blocks of the backend's `block` input amplitudes, block sums in FP32 or FP64 (`accumulate`) in
block order, the low-word term, the scaling undone, one write. Larger gates, the CPU and
fused=False keep the unfused path (multiword.py); the backend reports which ran as "kernel":
"fused" or "gemm", and the fused kernel's size as "kernel_size".

Packed gates (PACKED_K): a 4 x 4 gate alone leaves three quarters of the kernel's mma tiles as
padding, so PACKED_K / k of its columns (told apart by free qubits, target_layout.packing_qubits)
form one kernel column under I (x) U, each with its own column shift: every word, product and
block sum is the unpacked kernel's (the tensor cores only see extra exact zeros), so the results
are its bits. Only a gate that is one block runs packed; where the state has too few whole free
qubits the gate runs in its own kernel (resolve_packing).

What equals the CPU path (multiword.py with A = the state's columns, B = U^T) and what does not:
- Bit-identical: the column shifts and the gate's shifts, every fp16 word, every product of two
  words (exact in FP32), and, given the same block products, the block sums, the low-word term
  and the scaled result (the same round-to-nearest operations in the same order).
- Within a bound: the FP32 sums inside a block and the cross term. The tensor cores' order and
  rounding inside an mma are unspecified (they truncate, aligning each 16-product step to its
  largest term); numpy's BLAS rounds to nearest in its own order. A sum of n products is taken
  to differ from the exact one by at most n 2^-22 (tensor cores: a factor 4 over one truncation
  per term) or n 2^-24 (round to nearest) times the sum of their magnitudes; the block sums add
  one rounding of 2^-24 per block on each side. So per real output the two paths differ by at
  most difference_bound(k, block, blocks) * M, where M = sum_a (|Re u_ja| + |Im u_ja|)
  (|Re x_a| + |Im x_a|) (the words exceed the values by at most 2^-11: a 1% margin). Where every
  block sum is exact in FP32 (small integers: the tests), the results are bit-identical.
"""
import functools
from dataclasses import dataclass

import numpy as np

from .arrays import cupy_module, gpu_available, is_gpu_array, to_host
from .errors import BackendError
from .kernel_launch import persistent_blocks, raw_module
from .multiword_words import LOW_SHIFT, WORD_EXPONENT, embed_rows, inner_layout, real_rows, split_rows
from .target_layout import ADDRESS_TABLE_BYTES, launch_layout, pack_targets, packing_qubits

FUSED_DIMS = (2, 4, 8, 16, 32, 64)
FUSED, UNFUSED = "fused", "gemm"  # the "kernel" a gate reports
# Gate size -> the kernel size it runs packed in by default. d = 3 (K = 8) fills its k-tiles
# already: packed into 16 it would do the same mma work per amplitude (the variants script
# measures it).
PACKED_K = {4: 8}
MAX_PACKED_K = 16  # at most 4 groups per kernel column (the kernel's per-group registers)
MAX_WARPS = 8
ACCUMULATOR_TYPES = {"fp32": "float", "fp64": "double"}
_SHIFT_TABLE_BYTES = 256
# -D options of multiword_gate.cu: its __launch_bounds__ and the ints of its gate-shift table.
KERNEL_DEFINITIONS = (f"-DMAX_WARPS_PER_BLOCK={MAX_WARPS}", f"-DSHIFT_TABLE_INTS={_SHIFT_TABLE_BYTES // 4}")
_FRAGMENT_BYTES = 16  # one uint4 of A fragment per lane


def tiles(k: int) -> int:
    """k-tiles (= m-tiles) of the kernel for K = k: 8 amplitudes, 16 embedded reals, each."""
    return -(-k // 8)


@dataclass(frozen=True)
class GateLaunch:
    """One kernel variant and its launch shape."""

    k: int  # the kernel's size
    group: int  # the gate's size: k, or less when packed
    block: int  # the gate's input amplitudes per tensor-core block (at most group)
    accumulate: str  # "fp32" or "fp64": the block sums
    n_tiles: int  # NT: 8-column mma tiles per warp
    blocks_per_sm: int  # the register cap: 65536 / (256 blocks_per_sm) per thread

    @property
    def blocks(self) -> int:
        return -(-self.group // self.block)

    @property
    def kernel_block(self) -> int:
        """The kernel's BLOCK: a packed kernel is one block of k (the gate one block of group)."""
        return self.block if self.group == self.k else self.k

    @property
    def shared_bytes(self) -> int:
        return 2 * tiles(self.k) ** 2 * 32 * _FRAGMENT_BYTES + _SHIFT_TABLE_BYTES + ADDRESS_TABLE_BYTES

    @property
    def name(self) -> str:
        return (f"multiword_gate<{self.k}, {self.group}, {self.kernel_block}, {ACCUMULATOR_TYPES[self.accumulate]}, "
                f"{self.n_tiles}, {self.blocks_per_sm}>")


def default_shape(k: int) -> tuple:
    """(n_tiles, blocks_per_sm): as many 8-column tiles per warp as keep the loads of a warp near
    1-2 KiB and the registers under the cap (ptxas: 66-115 per thread, no spills), two blocks
    per multiprocessor (three for the small gates, whose tiles carry little data each).
    Not yet measured against other shapes."""
    if k <= 8:
        return 4, 3
    return (2, 3) if k == 16 else (2 if k == 32 else 1, 2)


def plan_launch(k: int, block: int, accumulate: str, n_tiles: int = None, blocks_per_sm: int = None,
                packed_k: int = None):
    """The GateLaunch for a k x k gate whose products are blocked by `block` input amplitudes
    (the fp16x2 GEMM's resolved block: 0 = unblocked), or None when k is not in FUSED_DIMS.
    packed_k: the kernel's size; None = PACKED_K's where the gate is one block, else k. A packed
    launch needs a gate of at least 4 (whole slots) that is one block, and packed_k <= 16."""
    if k not in FUSED_DIMS:
        return None
    if accumulate not in ACCUMULATOR_TYPES:
        raise BackendError(f"accumulate must be one of {', '.join(ACCUMULATOR_TYPES)}, got {accumulate!r}")
    block = inner_layout(k, 2, block).block
    if packed_k is None:
        packed_k = PACKED_K.get(k, k) if block == k else k
    if packed_k != k and not (4 <= k < packed_k <= MAX_PACKED_K and packed_k in FUSED_DIMS and block == k):
        raise BackendError(f"a {k} x {k} gate blocked by {block} cannot run packed in a kernel of size {packed_k}")
    default_tiles, default_blocks = default_shape(packed_k)
    return GateLaunch(packed_k, k, block, accumulate,
                      default_tiles if n_tiles is None else n_tiles,
                      default_blocks if blocks_per_sm is None else blocks_per_sm)


def resolve_packing(launch: GateLaunch, targets, n_amplitudes: int) -> tuple:
    """(launch, targets) to run on a flat state of n_amplitudes (an (L, K, R) view's L K R
    included): a packed launch with its packing qubits after the gate's targets (the kernel's
    top gate bits), or the gate's own launch (default shape) where the state has too few whole
    free qubits (target_layout.packing_qubits)."""
    if launch.group == launch.k:
        return launch, tuple(targets)
    packing = packing_qubits(targets, n_amplitudes, launch.k // launch.group)
    if packing is None:
        return plan_launch(launch.group, launch.block, launch.accumulate, packed_k=launch.group), tuple(targets)
    return launch, tuple(targets) + packing


def difference_bound(k: int, block: int, blocks: int) -> float:
    """Largest |fused - CPU path| of one real output over M (module notes). Per real output a
    block sums 2 block products of high words (2 k over all blocks, magnitudes summing to at
    most M), the cross term 4 k products weighted 2^-11 (magnitudes up to 2 M 2^-11);
    each sum differs by (2^-22 + 2^-24) n per unit magnitude, the block sums by 2^-24 per block
    and side."""
    summed = 2 * block + 8 * k * 2.0**-LOW_SHIFT
    return (5 * summed + 2 * (blocks + 1)) * 2.0**-24 * 1.01


# -- the gate's words in fragment order ---------------------------------------------------
@functools.lru_cache(maxsize=None)
def fragment_index(k: int) -> tuple:
    """(rows, cols), each (T, T, 32, 8) int64 with T = tiles(k): the embedded gate entry of every
    fp16 element of the mma.m16n8k16 A fragments [m-tile, k-tile, lane, element]; -1 where the
    fragment is padding. Element e of lane (g, t): register e >> 1, row g (+ 8 for odd
    registers), column 2 t + (e & 1) (+ 8 for registers 2 and 3); row r is Re (r < 8) or Im of
    output amplitude 8 mt + r % 8; column c is Re or Im (c & 1) of input amplitude
    8 kt + 4 (c >> 3) + (c & 7) // 2."""
    count = tiles(k)
    mt, kt, lane, element = np.meshgrid(np.arange(count), np.arange(count), np.arange(32), np.arange(8),
                                        indexing="ij")
    g, t, register = lane >> 2, lane & 3, element >> 1
    mma_row = g + 8 * (register & 1)
    mma_col = 2 * t + (element & 1) + 8 * (register >> 1)
    amplitude_out = 8 * mt + (mma_row & 7)
    amplitude_in = 8 * kt + 4 * (mma_col >> 3) + ((mma_col & 7) >> 1)
    valid = (amplitude_out < k) & (amplitude_in < k)
    rows, cols = 2 * amplitude_out + (mma_row >> 3), 2 * amplitude_in + (mma_col & 1)
    return np.where(valid, rows, -1), np.where(valid, cols, -1)


@dataclass(frozen=True)
class GateWords:
    """A gate's fp16x2 words for the kernel: fragments (2, T, T, 32, 4) uint32 (word 0 high, 1 low;
    two fp16 per uint32, the lower element in the low half) and shifts (K,) int32 (row j of U was
    scaled by 2^shifts[j]); numpy, or cupy after to_device."""

    fragments: object
    shifts: object

    def to_device(self):
        cp = cupy_module()
        return GateWords(cp.asarray(self.fragments), cp.asarray(self.shifts))


def block_diagonal(u, k: int):
    """I (x) u of size k for a numpy (n, n) u: copies of u on the diagonal, +0 elsewhere (a kron
    would give -0 beside u's negative entries: the same products, but not the same words)."""
    n = u.shape[0]
    out = np.zeros((k, k), np.complex128)
    for start in range(0, k, n):
        out[start:start + n, start:start + n] = u
    return out


def gate_words(u, k: int = None) -> GateWords:
    """The words of u (n, n) complex, numpy or cupy, as the CPU path makes those of B = U^T:
    split_rows on the rows of U, the real embedding of each output amplitude (embed_rows). For a
    kernel of size k > n (packed), the words of I (x) u: the same words and row shifts, n at a
    time on the diagonal, zeros elsewhere."""
    u = np.ascontiguousarray(to_host(u), dtype=np.complex128)
    if k is not None and k != u.shape[0]:
        u = block_diagonal(u, k)
    k = u.shape[0]
    shifts, words = split_rows(real_rows(u), 2, "the gate")  # (K, 4K): [high | low]
    embedded = np.stack([embed_rows(words[:, :2 * k], 2), embed_rows(words[:, 2 * k:], 2)])  # (2, 2K, 2K)
    rows, cols = fragment_index(k)
    gathered = embedded[:, np.maximum(rows, 0), np.maximum(cols, 0)]
    fragments = np.where(rows >= 0, gathered, np.float16(0)).astype(np.float16)
    return GateWords(np.ascontiguousarray(fragments).view(np.uint32), shifts)


# -- launch -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _kernel(name: str):
    return raw_module("multiword_gate.cu", [name], KERNEL_DEFINITIONS).get_function(name)


def apply_gate(words: GateWords, x, out, launch: GateLaunch, nonfinite=None, targets=None) -> None:
    """Every column of x times the gate of `words` (device arrays, gate_words(u, launch.k)
    .to_device()), written to out (out may be x). Without targets, x and out are C-contiguous
    (L, K, R) complex128 cupy views with R a power of two; with targets (kernel gate index bit i
    at state bit targets[i]: a packed launch's from resolve_packing), flat states whose columns
    sit at those bits (target_layout.py). A column holding NaN or Inf (a gate's column, packed)
    is left as it was and reported: by a BackendError now, or, when `nonfinite` (a device int32
    flag) is given, by setting it without waiting for the kernel."""
    cp = cupy_module()
    x, out, n_columns, packed_targets = gate_call(words, x, out, launch, targets)
    kernel = _kernel(launch.name)
    kernel.max_dynamic_shared_size_bytes = launch.shared_bytes
    blocks = persistent_blocks(-(-n_columns // (8 * launch.n_tiles * MAX_WARPS)), launch.blocks_per_sm)
    flag = cp.zeros(1, cp.int32) if nonfinite is None else nonfinite
    kernel((blocks,), (32 * MAX_WARPS,),
           (x, out, cp.int64(n_columns), cp.uint64(packed_targets), words.fragments, words.shifts,
            cp.int32(WORD_EXPONENT), cp.int32(LOW_SHIFT), flag), shared_mem=launch.shared_bytes)
    if nonfinite is None and int(flag[0]):
        raise BackendError("the state contains NaN or Inf; fp16x2 needs finite input")


def gate_call(words: GateWords, x, out, launch: GateLaunch, targets=None) -> tuple:
    """(flat x, flat out, columns, packed targets): the state arguments of apply_gate's kernel
    call (numpy or cupy like x), after checking the words against the launch."""
    if words.shifts.shape != (launch.k,):
        raise BackendError(f"words of a {words.shifts.shape[0]}-row gate for a kernel of size {launch.k}")
    x, out, targets = launch_layout(x, out, launch.k, targets)
    return x, out, x.size // launch.k, pack_targets(targets)


class FusedGates:
    """The fused kernel's part of an fp16x2 backend: which gates it takes, their words prepared
    for a run, and the NaN/Inf flag a run checks once at its end."""

    def __init__(self, backend, fused: bool):
        if not isinstance(fused, bool):
            raise BackendError(f"fused must be True or False, got {fused!r}")
        self.backend, self.fused = backend, fused
        self._prepared = {}  # id(u) -> (u, {kernel size: device GateWords}), from prepare()
        self._deferred_flag = None

    def takes(self, k: int, on_gpu: bool) -> bool:
        return on_gpu and self.fused and k in FUSED_DIMS

    def apply_view(self, u, x, out) -> bool:
        """The kernel on (L, K, R) views where it takes them (C-contiguous, R a power of two);
        False, having done nothing, elsewhere."""
        k, n_right = x.shape[1], x.shape[2]
        usable = x.flags.c_contiguous and out.flags.c_contiguous and not n_right & (n_right - 1)
        if not (self.takes(k, is_gpu_array(x)) and usable):
            return False
        self._apply(u, x, out, None)
        return True

    def apply_scattered(self, u, state, targets) -> bool:
        if not self.takes(u.shape[0], is_gpu_array(state)):
            return False
        self._apply(u, state, state, targets)
        return True

    def _launch(self, k: int) -> GateLaunch:
        return plan_launch(k, self.backend._block_for(k), self.backend.accumulate)

    def _apply(self, u, x, out, targets) -> None:
        backend, k = self.backend, u.shape[0]
        x, out, targets = launch_layout(x, out, k, targets)
        launch, targets = resolve_packing(self._launch(k), targets, x.size)
        backend._count(x.size // k, k, k)
        apply_gate(self._words(u, launch.k), x, out, launch, self._deferred_flag, targets)
        backend.last_call_info = {"kernel": FUSED, "kernel_size": launch.k, "block": launch.block,
                                  "blocks": launch.blocks, "accumulate": launch.accumulate}

    def _words(self, u, k: int) -> GateWords:
        prepared = self._prepared.get(id(u))
        if prepared is None or prepared[0] is not u:
            return gate_words(u, k).to_device()
        if k not in prepared[1]:  # a packed gate on a state without the qubits for it
            prepared[1][k] = gate_words(u, k).to_device()
        return prepared[1][k]

    def prepare(self, u) -> None:
        """Split a gate the kernel will take into words now (for its default kernel size), and
        build its kernel variant."""
        k = u.shape[0]
        if self.takes(k, is_gpu_array(u)):
            launch = self._launch(k)
            self._prepared[id(u)] = (u, {launch.k: gate_words(u, launch.k).to_device()})
            _kernel(launch.name)

    def release(self, u) -> None:
        self._prepared.pop(id(u), None)

    def start_run(self) -> None:
        self._deferred_flag = cupy_module().zeros(1, np.int32) if self.fused and gpu_available() else None

    def finish_run(self) -> None:
        flag, self._deferred_flag = self._deferred_flag, None
        self._prepared.clear()
        if flag is not None and int(flag[0]):
            raise BackendError("the state contains NaN or Inf; fp16x2 needs finite input")
