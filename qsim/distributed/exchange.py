"""Swapping global (rank) bits with local bits of a distributed state: an all-to-all of slices.

Exchanging global bits G_1..G_k with local bits l_1..l_k moves the amplitude at rank r, local
offset i to the rank whose bits G_j are i's bits l_j, at the offset whose bits l_j are r's bits
G_j. So a rank splits its slice into 2^k parts by the values v of its bits l_j: part v goes to
the peer whose G bits are v, and is replaced by that peer's part holding this rank's G bits.
The part matching the rank's own G bits stays; 1 - 2^-k of the slice moves (half for k = 1).
Parts are strided views; they are packed into a send buffer chunk by chunk (a chunk that is
contiguous is sent as it is), exchanged through the communicator in one grouped send/receive per
chunk, and unpacked from a receive buffer, so the extra memory is the two buffers, whatever the
slice size.
"""
import itertools
import math

import numpy as np

from ..errors import SimulationError

DEFAULT_EXCHANGE_BYTES = 1 << 30  # send plus receive buffer


def buffer_amplitudes(exchange_bytes: int, n_local: int, itemsize: int = 16) -> int:
    """Amplitudes in each of the two buffers: a power of two, at most half the slice (a k = 1
    exchange moves half), at least 1."""
    if isinstance(exchange_bytes, bool) or not isinstance(exchange_bytes, (int, np.integer)) or exchange_bytes <= 0:
        raise SimulationError(f"exchange_bytes must be a positive integer (bytes), got {exchange_bytes!r}")
    fit = max(1, int(exchange_bytes) // (2 * itemsize))
    return min(1 << (fit.bit_length() - 1), 1 << max(0, n_local - 1))


class Exchanger:
    """Performs the exchanges of one rank. comm: a Communicator; n_local: local qubits; xp: the
    array module of the state; amplitudes: size of each buffer (buffer_amplitudes)."""

    def __init__(self, comm, n_local: int, xp, amplitudes: int, dtype=np.complex128):
        self.comm = comm
        self.n_local = n_local
        self.send = xp.empty(amplitudes, dtype=dtype)
        self.recv = xp.empty(amplitudes, dtype=dtype)

    def bytes_per_exchange(self, pairs) -> int:
        """Bytes one rank sends (and receives) to exchange these pairs in one state array."""
        return int(exchange_fraction(pairs) * self.send.itemsize * (1 << self.n_local))

    def warm_up(self) -> None:
        """One tiny exchange with every other rank, so that the transport's connection set-up
        (NCCL builds its peer channels on first use) stays out of the timed exchanges."""
        peers = [peer for peer in range(self.comm.world_size) if peer != self.comm.rank]
        self.comm.exchange([(peer, self.send[j:j + 1]) for j, peer in enumerate(peers)],
                           [(peer, self.recv[j:j + 1]) for j, peer in enumerate(peers)])

    def swap_bits(self, slices, pairs) -> None:
        """Exchange the (global bit, local bit) pairs, in place, in every array of `slices`
        (flat (2^n_local,) slices of one distributed state, e.g. the hi and lo words)."""
        rank_bits = [global_bit - self.n_local for global_bit, _ in pairs]
        local_bits = [local_bit for _, local_bit in pairs]
        n_global = self.comm.world_size.bit_length() - 1
        if (not pairs or len(set(rank_bits)) < len(pairs) or len(set(local_bits)) < len(pairs)
                or not all(0 <= b < n_global for b in rank_bits) or not all(0 <= b < self.n_local for b in local_bits)):
            raise SimulationError(f"exchange pairs {pairs} must be distinct (global bit, local bit) pairs")
        own = tuple((self.comm.rank >> bit) & 1 for bit in rank_bits)
        peers = [(values, _with_bits(self.comm.rank, rank_bits, values))
                 for values in itertools.product((0, 1), repeat=len(pairs)) if values != own]
        per_peer = self.send.size // len(peers)
        chunk_bits = min(self.n_local - len(pairs), per_peer.bit_length() - 1)
        for flat in slices:
            parts = {values: _PartView(flat, self.n_local, dict(zip(local_bits, values)), chunk_bits)
                     for values, _ in peers}
            for outer in np.ndindex(*next(iter(parts.values())).outer_shape):
                self._exchange_chunk([(parts[values].chunk(outer), peer) for values, peer in peers])

    def _exchange_chunk(self, chunks) -> None:
        """Send each (chunk, peer) to its peer and replace it by what that peer sends back. A
        contiguous chunk is sent straight from the state (it is overwritten only after the
        grouped send/receive has completed); a strided one is packed first."""
        size = chunks[0][0].size
        sends, recvs = [], []
        for j, (chunk, peer) in enumerate(chunks):
            segment = slice(j * size, (j + 1) * size)
            if chunk.flags.c_contiguous:
                sends.append((peer, chunk.reshape(-1)))
            else:
                self.send[segment].reshape(chunk.shape)[...] = chunk
                sends.append((peer, self.send[segment]))
            recvs.append((peer, self.recv[segment]))
        self.comm.exchange(sends, recvs)
        for j, (chunk, _) in enumerate(chunks):
            chunk[...] = self.recv[j * size:(j + 1) * size].reshape(chunk.shape)


def _with_bits(value: int, bits, values) -> int:
    for bit, bit_value in zip(bits, values):
        value = (value & ~(1 << bit)) | (bit_value << bit)
    return value


class _PartView:
    """The amplitudes of a flat (2^n,) slice whose bits `fixed` ({bit: value}) have the given
    values, in order of their remaining bits, cut into chunks of 2^chunk_bits amplitudes (the
    lowest chunk_bits remaining bits vary inside a chunk).

    Built by one reshape of the contiguous slice into dimensions that split at every fixed bit
    and at the chunk boundary, then integer indexing: every chunk is a view (no copy), with at
    most len(fixed) + 1 dimensions.
    """

    def __init__(self, flat, n_bits: int, fixed: dict, chunk_bits: int):
        free = [bit for bit in range(n_bits) if bit not in fixed]
        boundary = free[chunk_bits] if chunk_bits < len(free) else n_bits  # lowest bit outside a chunk
        dims, index = [], []
        self._outer_dims = 0
        run = 0  # free bits collected above `bit`, not yet made a dimension

        def close_run(lowest_bit):
            nonlocal run
            if run:
                dims.append(1 << run)
                index.append(slice(None))
                self._outer_dims += lowest_bit >= boundary
            run = 0

        for bit in range(n_bits - 1, -1, -1):
            if bit in fixed:
                close_run(bit + 1)
                dims.append(2)
                index.append(fixed[bit])
                continue
            if bit == boundary - 1:
                close_run(boundary)
            run += 1
        close_run(0)
        self.view = flat.reshape(dims)[tuple(index)]
        self.outer_shape = self.view.shape[:self._outer_dims]

    def chunk(self, outer_index: tuple):
        return self.view[outer_index + (Ellipsis,)]  # a view even when a chunk is one amplitude


def exchange_fraction(pairs) -> float:
    """Share of a slice that one exchange of these pairs sends (and receives)."""
    return 1.0 - math.ldexp(1.0, -len(pairs))
