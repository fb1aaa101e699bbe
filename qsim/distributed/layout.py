"""Which logical qubit sits at which physical bit of a state split over 2^g ranks.

The distributed state is one 2^N vector in physical order, cut into 2^g slices of 2^(N-g)
amplitudes: physical index p lives on rank p >> (N - g) at local offset p & (2^(N-g) - 1). So the
low N - g physical bits are local (a gate on them is an ordinary GEMM on the slice) and the top
g are global (rank bits). Exchanges swap global and local physical bits, so logical qubit q
moves around: `physical_of[q]` says where it is now. Bit physical_of[q] of a physical index is
bit q of the logical (Qiskit-order) index of the same amplitude.
"""
from dataclasses import dataclass

import numpy as np

from ..errors import SimulationError


def global_qubit_count(world_size) -> int:
    """g with 2^g = world_size; SimulationError unless world_size is a power of two >= 1."""
    if isinstance(world_size, bool) or not isinstance(world_size, (int, np.integer)) or world_size < 1:
        raise SimulationError(f"the number of ranks (GPUs) must be a positive integer, got {world_size!r}")
    if world_size & (world_size - 1):
        raise SimulationError(
            f"the number of ranks (GPUs) must be a power of two (the state splits on qubits), got {world_size}; "
            f"use {1 << (int(world_size).bit_length() - 1)}")
    return int(world_size).bit_length() - 1


@dataclass(frozen=True)
class Layout:
    """A permutation of qubits over physical bits. physical_of: tuple, physical_of[q] = the
    physical bit of logical qubit q; n_global: how many top physical bits are rank bits."""

    physical_of: tuple
    n_global: int

    def __post_init__(self):
        if sorted(self.physical_of) != list(range(len(self.physical_of))):
            raise SimulationError(f"a layout must be a permutation of 0..N-1, got {self.physical_of}")
        if not 0 <= self.n_global <= self.n_qubits:
            raise SimulationError(f"{self.n_global} global qubits do not fit in {self.n_qubits}")

    @classmethod
    def identity(cls, n_qubits: int, n_global: int) -> "Layout":
        return cls(tuple(range(n_qubits)), n_global)

    @property
    def n_qubits(self) -> int:
        return len(self.physical_of)

    @property
    def n_local(self) -> int:
        return self.n_qubits - self.n_global

    @property
    def logical_at(self) -> tuple:
        """logical_at[p] = the logical qubit at physical bit p (the inverse permutation)."""
        inverse = [0] * self.n_qubits
        for qubit, bit in enumerate(self.physical_of):
            inverse[bit] = qubit
        return tuple(inverse)

    def is_global(self, qubit: int) -> bool:
        return self.physical_of[qubit] >= self.n_local

    def swapped(self, physical_pairs) -> "Layout":
        """The layout after exchanging the contents of each (bit_a, bit_b) pair of physical bits."""
        logical_at = list(self.logical_at)
        for a, b in physical_pairs:
            logical_at[a], logical_at[b] = logical_at[b], logical_at[a]
        physical_of = [0] * self.n_qubits
        for bit, qubit in enumerate(logical_at):
            physical_of[qubit] = bit
        return Layout(tuple(physical_of), self.n_global)

    def physical_index(self, logical_index: int) -> int:
        """The physical index of the amplitude with basis-state (logical) index logical_index."""
        return sum(((logical_index >> q) & 1) << bit for q, bit in enumerate(self.physical_of))

    def owner(self, logical_index: int) -> tuple:
        """(rank, local offset) of an amplitude."""
        physical = self.physical_index(logical_index)
        return physical >> self.n_local, physical & ((1 << self.n_local) - 1)

    def to_logical_order(self, physical_state: np.ndarray) -> np.ndarray:
        """The full (2^N,) state in logical order, from the slices concatenated in rank order."""
        n = self.n_qubits
        # Tensor axis a of a (2,)*N view is bit N-1-a; logical axis N-1-q is physical axis N-1-physical_of[q].
        axes = [n - 1 - self.physical_of[n - 1 - a] for a in range(n)]
        return np.ascontiguousarray(physical_state.reshape((2,) * n).transpose(axes)).reshape(-1)
