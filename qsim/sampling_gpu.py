"""GPU kernels of qsim.sampling (qsim/kernels/sampling.cu): the exact integer weight of every block
of 2^BLOCK_QUBITS amplitudes in one read of the state, then all shots in one launch (a binary
search over the blocks' cumulative weights, then a scan of one block per shot).

They compute the integers and picks that qsim.sampling's CPU path computes, so a seed gives the
same outcomes on both. Device memory besides the state: the block weights and their running sum, 8
bytes each per block (2^(N-6) blocks: 256 MiB at N = 30), the shots' uniforms and outcomes (16 bytes
per shot).
"""
import numpy as np

from gemm_backend.arrays import cupy_module, to_host
from gemm_backend.kernel_launch import THREADS, persistent_blocks

from .kernel_modules import kernel_function

BLOCK_QUBITS = 6
BLOCKS_PER_SM = 8


class BlockWeights:
    """Launches the weight pass on construction (asynchronous); finish() waits for it.

    cumulative: (2^(N - block_qubits),) int64 cupy, the running sum of the block weights in units
    of 2^-60 (meaningful once finish() reports the state good)."""

    def __init__(self, state):
        cp = cupy_module()
        n_qubits = int(state.size).bit_length() - 1
        self.block_qubits = min(BLOCK_QUBITS, n_qubits)
        blocks = int(state.size) >> self.block_qubits
        sums = cp.empty(blocks, dtype=cp.int64)
        self._high_total = cp.zeros(1, dtype=cp.uint64)
        self._bad = cp.zeros(1, dtype=cp.uint32)
        warps_per_block = THREADS // 32
        grid = persistent_blocks(-(-blocks // warps_per_block), BLOCKS_PER_SM)
        kernel_function("sampling.cu", "block_weights")(
            (grid,), (THREADS,), (state, cp.int64(blocks), cp.int32(self.block_qubits), sums,
                                  self._high_total, self._bad))
        self.cumulative = cp.cumsum(sums)

    def finish(self, limit: int) -> tuple:
        """(total weight as a Python int, bad): bad when a part was NaN, Inf or above 2 in magnitude,
        or when the total may exceed `limit` (so that the int64 running sum could have wrapped)."""
        high_total = int(to_host(self._high_total)[0])
        bad = bool(to_host(self._bad)[0]) or high_total > limit >> 32
        return (0 if bad else int(to_host(self.cumulative[-1:])[0])), bad


def host_uniforms(rng, shots: int) -> np.ndarray:
    """rng.random(shots), the same numbers, written straight into page-locked host memory (cupy's
    pinned pool): draw_shots then copies them to the device in one DMA, where cupy.asarray of a
    pageable array first copies all of them again into a staging buffer."""
    import cupyx

    uniforms = cupyx.empty_pinned((shots,), dtype=np.float64)
    rng.random(out=uniforms)
    return uniforms


def draw_shots(state, weights: BlockWeights, uniforms, total: int, offset: int, index_offset: int, qubits):
    """Host (shots,) int64 outcomes (bit j = qubits[j]) of the uniforms (host float64 in [0, 1)):
    the shot's target floor(u 2^53 total / 2^53) - offset, when inside this state's weight, picks
    the first amplitude whose running weight exceeds it; -1 marks another state part's shot.
    Uniforms from host_uniforms copy fastest."""
    cp = cupy_module()
    host = np.ascontiguousarray(uniforms, dtype=np.float64)
    uniforms = cp.empty(host.size, dtype=cp.float64)
    uniforms.set(host)
    outcomes = cp.empty(uniforms.size, dtype=cp.int64)
    grid = persistent_blocks(-(-uniforms.size // THREADS), BLOCKS_PER_SM)
    kernel_function("sampling.cu", "draw_shots")(
        (grid,), (THREADS,),
        (state, weights.cumulative, cp.int64(weights.cumulative.size), cp.int32(weights.block_qubits), uniforms,
         cp.int64(uniforms.size), cp.int64(total), cp.int64(offset), cp.int64(index_offset),
         cp.asarray(qubits, dtype=cp.int32), cp.int32(len(qubits)), outcomes))
    return to_host(outcomes)
