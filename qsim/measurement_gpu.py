"""GPU kernels of qsim.measurement (qsim/kernels/measurement.cu): the outcome weights in one read
of the state, and collapse (projection or reset with renormalisation) in one pass.

Both compute exactly what the CPU path of qsim.measurement computes (the same fixed-point terms,
summed as integers, whose order does not matter; the same correctly rounded scale), so CPU and
GPU results are the same bits. Device memory besides the state: 2^(k+1) int64 bins and a flag
(workspace_bytes).
"""
from gemm_backend.arrays import cupy_module, to_host
from gemm_backend.kernel_launch import THREADS, persistent_blocks

from .kernel_modules import kernel_function

THREAD_QUBITS = 22  # the weights kernel runs 2^min(N, 22) threads, each summing 2^(N-22) amplitudes
BLOCK_THREAD_BITS = THREADS.bit_length() - 1
COLLAPSE_BLOCKS_PER_SM = 8


def workspace_bytes(max_qubits: int) -> int:
    """Device bytes weight_sums allocates for at most max_qubits measured qubits (bins and flag)."""
    return 8 * ((2 << max_qubits) + 1)


def weight_sums(state, qubits) -> tuple:
    """(whole sums, fraction sums, bad) of the 2^k outcomes of `qubits`, indexed by the outcome of
    the qubits in ascending order (bit i = the i-th lowest of them).

    state: (2^N,) complex128 cupy, C-contiguous; qubits: k distinct indices (k <= N and <= 12).
    whole and fraction: host int64 arrays of length 2^k, in units of 2^-60 and 2^-88, as the CPU
    path's accumulators; bad: True when some part was NaN, Inf or above 2 in magnitude. One
    device allocation (zeroed), one launch and one copy back: a measurement's only round trip."""
    cp = cupy_module()
    n_qubits = int(state.size).bit_length() - 1
    thread_qubits = min(n_qubits, THREAD_QUBITS)
    unmeasured = [q for q in range(n_qubits) if q not in qubits]
    loop_qubits = unmeasured[len(unmeasured) - (n_qubits - thread_qubits):]  # the highest unmeasured
    thread_bits = [q for q in range(n_qubits) if q not in loop_qubits]
    block_unmeasured = sum(1 << b for b in range(BLOCK_THREAD_BITS)
                           if b >= len(thread_bits) or thread_bits[b] not in qubits)
    bins = cp.zeros(workspace_bytes(len(qubits)) // 8, dtype=cp.uint64)  # the bins, then the flag
    threads = 1 << thread_qubits
    kernel_function("measurement.cu", "outcome_weights")(
        (-(-threads // THREADS),), (THREADS,),
        (state, cp.int64(_mask(thread_bits)), cp.int64(_mask(loop_qubits)), cp.int64(1 << len(loop_qubits)),
         cp.int64(threads), cp.int64(_mask(qubits)), cp.uint32(block_unmeasured), bins, bins[-1:]))
    sums = to_host(bins).view("int64")
    return sums[0:-1:2], sums[1:-1:2], bool(sums[-1])


def collapse(state, qubits, outcome: int, scale: float, reset: bool) -> None:
    """In place: keep the amplitudes where qubits[j] reads bit j of outcome, times scale (float64),
    moved to where every measured qubit reads 0 when reset; all others become +0."""
    cp = cupy_module()
    kept = sum(((outcome >> j) & 1) << q for j, q in enumerate(qubits))
    size = int(state.size)
    blocks = persistent_blocks(-(-size // THREADS), COLLAPSE_BLOCKS_PER_SM)
    kernel_function("measurement.cu", "collapse")(
        (blocks,), (THREADS,),
        (state, cp.int64(size), cp.int64(_mask(qubits)), cp.int64(kept), cp.int64(0 if reset else kept),
         cp.float64(scale)))


def _mask(qubits) -> int:
    return sum(1 << q for q in qubits)
