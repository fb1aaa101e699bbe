"""Gates on the CPU in place, through cache-sized chunks of the state.

The (2,)*N tensor view of the state is transposed (a view, no copy) so that the target qubits
come last. A chunk fixes the most significant other qubits and holds CHUNK_AMPLITUDES
amplitudes: it is gathered into a small buffer that is reused, multiplied as one
(rows, K) @ U^T GEMM into a second buffer, and scattered back. The buffers stay in the CPU's
cache, so each amplitude crosses main memory once each way, as in any gate; a transposed copy of
the whole state (qsim.apply's route for backends without such a kernel) and the whole-state
result of one large GEMM cross it several times more and allocate a state-sized array per gate.
"""
import itertools

import numpy as np

# Amplitudes per chunk: two buffers of 512 KiB, within the L2 or L3 cache of current x86 cores,
# and few enough chunks at N = 24 (512) that the loop's host work stays under 2% of a gate.
CHUNK_AMPLITUDES = 1 << 15


def apply_in_chunks(u: np.ndarray, state: np.ndarray, targets, chunk_amplitudes: int = CHUNK_AMPLITUDES) -> None:
    """Replace every column of `state` by u times it, in place: a column is the K = 2^d amplitudes
    at the qubits `targets` (ascending; index bit j of u is qubit targets[j]) for one value of the
    other qubits. u: (K, K) complex128; state: flat (2^N,) complex128 numpy array, C-contiguous."""
    n_qubits = state.size.bit_length() - 1
    n_targets = len(targets)
    target_axes = [n_qubits - 1 - t for t in reversed(targets)]  # tensor axis a is qubit N-1-a
    other_axes = [a for a in range(n_qubits) if a not in target_axes]
    moved = state.reshape((2,) * n_qubits).transpose(other_axes + target_axes)
    chunk_qubits = max(n_targets, min(n_qubits, int(chunk_amplitudes).bit_length() - 1))
    chunk_shape = (2,) * chunk_qubits
    gathered = np.empty((1 << (chunk_qubits - n_targets), 1 << n_targets), dtype=np.complex128)
    product = np.empty_like(gathered)
    u_t = u.T
    for index in itertools.product((0, 1), repeat=n_qubits - chunk_qubits):
        np.copyto(gathered.reshape(chunk_shape), moved[index])
        np.matmul(gathered, u_t, out=product)
        moved[index] = product.reshape(chunk_shape)
