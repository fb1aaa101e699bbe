"""Turning a gate on chosen qubits into a batched GEMM on a view of the state.

A gate on contiguous targets q..q+d-1 is X[l] <- U @ X[l] on the (L, 2^d, R) view with
R = 2^q and L = 2^(N-q-d): no data moves except through the GEMM. Unsorted targets only
permute the matrix. Non-contiguous targets go to the backend's in-place kernels, which address
any target bits (GemmBackend.apply_scattered); where none takes the gate (and always on the CPU,
the specification), through chunks of a transposed copy of the state: each chunk fixes the
leading non-target qubits, holds at most TRANSPOSE_CHUNK_BYTES and is copied out, multiplied
and copied back, so no second state-sized buffer is needed. (On the CPU, backends that gather
take qsim.gathered_layout's route instead where a spare buffer fits.)
"""
import itertools
from dataclasses import dataclass

import numpy as np

from gemm_backend.arrays import array_module

BYTES_PER_AMPLITUDE = 16
TRANSPOSE_CHUNK_BYTES = 512 << 20
# How a gate reached its kernel (reported per gate): a view of the state, the kernel's own
# addressing of scattered targets, or chunks of a transposed copy.
CONTIGUOUS, SCATTERED, TRANSPOSED = "contiguous", "scattered", "transposed"


@dataclass(frozen=True)
class GatePlan:
    """How one gate is applied.

    matrix: (K, K) complex128 with index bit j = qubit targets[j], targets sorted ascending.
    axes_order: for non-contiguous targets, the transpose of the (2,)*N tensor view that puts the
        targets last (most significant first), so that the copy is an (L, K, 1) view; None otherwise.
    """

    n_qubits: int
    targets: tuple
    matrix: np.ndarray
    axes_order: tuple = None

    @property
    def k(self) -> int:
        return self.matrix.shape[0]

    @property
    def contiguous(self) -> bool:
        return self.axes_order is None

    @property
    def view_shape(self) -> tuple:
        """(L, K, R) of the contiguous view (of the state, or of the transposed copy)."""
        if self.axes_order is not None:
            return (1 << (self.n_qubits - len(self.targets)), self.k, 1)
        low = self.targets[0]
        return (1 << (self.n_qubits - low - len(self.targets)), self.k, 1 << low)


def sorted_target_matrix(targets, matrix) -> tuple:
    """(sorted targets, matrix re-indexed so that index bit j is qubit sorted_targets[j])."""
    order = np.argsort(targets, kind="stable")
    sorted_targets = tuple(int(targets[i]) for i in order)
    if list(order) == list(range(len(targets))):
        return sorted_targets, np.asarray(matrix, dtype=np.complex128)
    dim = 1 << len(targets)
    indices = np.arange(dim)
    # index a (sorted convention) has bit i = qubit sorted_targets[i] = targets[order[i]]:
    # move it to bit order[i] to get the original-convention index.
    original = np.zeros(dim, dtype=np.int64)
    for i, j in enumerate(order):
        original |= ((indices >> i) & 1) << int(j)
    return sorted_targets, np.asarray(matrix, dtype=np.complex128)[np.ix_(original, original)]


def targets_are_contiguous(targets) -> bool:
    """Whether the qubits `targets` (any order) are a run q, q + 1, ...: the gate's columns are
    then an (L, K, R) view of the state."""
    return max(targets) - min(targets) == len(targets) - 1


def plan_gate(n_qubits: int, targets, matrix) -> GatePlan:
    targets, matrix = sorted_target_matrix(list(targets), matrix)
    axes_order = None
    if not targets_are_contiguous(targets):
        # Tensor axis a of the (2,)*N view is qubit N-1-a.
        target_axes = [n_qubits - 1 - t for t in reversed(targets)]
        other_axes = [a for a in range(n_qubits) if a not in target_axes]
        axes_order = tuple(other_axes + target_axes)
    return GatePlan(n_qubits, targets, matrix, axes_order)


def transposed_chunk_bytes(n_qubits: int) -> int:
    """Bytes of one chunk of the transposed copy for an n-qubit state."""
    return min(BYTES_PER_AMPLITUDE << n_qubits, TRANSPOSE_CHUNK_BYTES)


def apply_plan(plan: GatePlan, state, product, scratch=None, scattered=None):
    """Apply a planned gate to a flat state.

    product(x, out) must set out[l] = U @ x[l] on (L, K, R) views (out may be x).
    scattered(state, targets), when given, applies the gate in place at non-contiguous targets and
    returns True, or returns False having done nothing (GemmBackend.apply_scattered).
    scratch: an optional flat buffer of the state's size; when given (and targets are
    contiguous), the product goes there out of place and scratch becomes the state.
    Returns (new_state, new_scratch, layout), layout one of CONTIGUOUS, SCATTERED, TRANSPOSED.
    """
    if plan.contiguous:
        x = state.reshape(plan.view_shape)
        if scratch is None:
            product(x, x)
            return state, None, CONTIGUOUS
        product(x, scratch.reshape(plan.view_shape))
        return scratch, state, CONTIGUOUS
    if scattered is not None and scattered(state, plan.targets):
        return state, scratch, SCATTERED
    _apply_transposed(plan, (state,), lambda block: product(block, block),
                      transposed_chunk_bytes(plan.n_qubits) // BYTES_PER_AMPLITUDE)
    return state, scratch, TRANSPOSED


def apply_plan_pair(plan: GatePlan, hi, lo, product, max_chunk_amplitudes: int) -> None:
    """Apply a planned gate in place to a state held as two flat arrays (a double-double pair).

    product(x_hi, x_lo) must set x[l] <- U @ x[l] in place on two (L, K, R) views.
    Contiguous targets use views of the state itself; non-contiguous targets chunks of the
    transposed state of at most max_chunk_amplitudes amplitudes per array.
    """
    if plan.contiguous:
        shape = plan.view_shape
        product(hi.reshape(shape), lo.reshape(shape))
        return
    _apply_transposed(plan, (hi, lo), product, max_chunk_amplitudes)


def _apply_transposed(plan: GatePlan, arrays, product, max_chunk_amplitudes: int) -> None:
    """product(*blocks) on (L', K, 1) contiguous copies of the transposed state (targets last),
    chunk by chunk: each chunk fixes the leading (most significant) non-target qubits, holds at
    most max_chunk_amplitudes amplitudes per array, and is copied back after the product."""
    xp = array_module(arrays[0])
    n_qubits, n_targets = plan.n_qubits, len(plan.targets)
    moved = [x.reshape((2,) * n_qubits).transpose(plan.axes_order) for x in arrays]
    chunk_qubits = max(n_targets, min(n_qubits, int(max_chunk_amplitudes).bit_length() - 1))
    n_fixed = n_qubits - chunk_qubits
    chunk_shape = (1 << (chunk_qubits - n_targets), 1 << n_targets, 1)
    for index in itertools.product((0, 1), repeat=n_fixed):
        blocks = [xp.ascontiguousarray(m[index]).reshape(chunk_shape) for m in moved]
        product(*blocks)
        for m, block in zip(moved, blocks):
            m[index] = block.reshape((2,) * chunk_qubits)
