"""Exchanges of global and local bits on simulated ranks, against a bit swap of the whole vector."""
import itertools

import numpy as np
import pytest

from qsim import SimulationError
from qsim.distributed import run_simulated
from qsim.distributed.exchange import Exchanger, _PartView, buffer_amplitudes, exchange_fraction

from .helpers import crandn


def swap_bits_reference(state, pairs):
    """The whole vector with index bits swapped pairwise: new[i] = old[i with each pair swapped]."""
    index = np.arange(state.size)
    source = index.copy()
    for a, b in pairs:
        bit_a, bit_b = (index >> a) & 1, (index >> b) & 1
        source = source & ~((1 << a) | (1 << b)) | (bit_b << a) | (bit_a << b)
    return state[source]


def exchanged(whole, world_size, pairs_list, amplitudes, components=1):
    """Split `whole` over simulated ranks, run the exchanges, and return the reassembled states."""
    n_local = int(whole.size // world_size).bit_length() - 1

    def job(comm):
        size = 1 << n_local
        slices = [whole[comm.rank * size:(comm.rank + 1) * size].copy() * (c + 1) for c in range(components)]
        exchanger = Exchanger(comm, n_local, np, amplitudes)
        for pairs in pairs_list:
            exchanger.swap_bits(slices, pairs)
        return slices

    per_rank = run_simulated(world_size, job)
    return [np.concatenate([slices[c] for slices in per_rank]) for c in range(components)]


@pytest.mark.parametrize("world_size, pairs", [
    (2, [(6, 0)]), (2, [(6, 5)]), (2, [(6, 3)]),
    (4, [(6, 1), (5, 4)]), (4, [(5, 0)]), (4, [(6, 2)]),
    (8, [(6, 0), (5, 2), (4, 3)]), (8, [(4, 1), (6, 0)]), (8, [(5, 3)]),
])
@pytest.mark.parametrize("amplitudes", [8, 64])  # small buffers: many chunks; 64: one chunk per part
def test_exchange_is_a_bit_swap_of_the_whole_state(rng, world_size, pairs, amplitudes):
    whole = crandn(rng, 1 << 7)
    result, twice = exchanged(whole, world_size, [pairs], amplitudes, components=2)
    expected = swap_bits_reference(whole, pairs)
    assert np.array_equal(result, expected)
    assert np.array_equal(twice, 2 * expected)  # every component array moves the same way


def test_a_sequence_of_exchanges_composes(rng):
    whole = crandn(rng, 1 << 8)
    sequence = [[(7, 0)], [(6, 3), (7, 5)], [(7, 0)], [(6, 1)]]
    (result,) = exchanged(whole, 4, sequence, 16)
    expected = whole
    for pairs in sequence:
        expected = swap_bits_reference(expected, pairs)
    assert np.array_equal(result, expected)


@pytest.mark.parametrize("fixed", [{}, {0: 1}, {5: 0}, {1: 1, 4: 0}, {0: 0, 5: 1, 3: 1}])
def test_part_views_are_views_in_index_order(fixed):
    n_bits = 6
    flat = np.arange(1 << n_bits)
    expected = [i for i in range(1 << n_bits) if all((i >> b) & 1 == v for b, v in fixed.items())]
    for chunk_bits in range(n_bits - len(fixed) + 1):
        part = _PartView(flat, n_bits, fixed, chunk_bits)
        chunks = [part.chunk(outer) for outer in np.ndindex(*part.outer_shape)]
        assert all(c.size == 1 << chunk_bits and np.shares_memory(c, flat) for c in chunks)
        assert np.concatenate([c.reshape(-1) for c in chunks]).tolist() == expected


def test_buffer_sizes():
    assert buffer_amplitudes(1 << 30, 40) == 1 << 25  # 512 MiB each
    assert buffer_amplitudes(1 << 30, 10) == 1 << 9  # at most half the slice
    assert buffer_amplitudes(100, 10) == 2 and buffer_amplitudes(1, 3) == 1
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SimulationError, match="exchange_bytes"):
            buffer_amplitudes(bad, 10)
    assert [exchange_fraction(p) for p in ([1], [1, 2], [1, 2, 3])] == [0.5, 0.75, 0.875]


@pytest.mark.parametrize("pairs", [[(1, 3)], [(3, 1), (3, 2)], [(4, 0)], [(3, -1)], []])
def test_pairs_must_be_distinct_global_then_local(pairs):
    def job(comm):
        Exchanger(comm, 3, np, 4).swap_bits([np.zeros(8, complex)], pairs)

    with pytest.raises(SimulationError, match="global bit, local bit"):
        run_simulated(2, job)


def test_exchange_traffic_matches_the_moved_fraction(rng):
    def job(comm):
        exchanger = Exchanger(comm, 4, np, 8)
        return [exchanger.bytes_per_exchange(p) for p in ([(5, 0)], [(5, 0), (4, 1)])]

    assert run_simulated(4, job)[0] == [16 * 8, 16 * 12]


def test_all_pairs_of_bits_on_eight_ranks(rng):
    whole = crandn(rng, 1 << 6)
    for global_bit, local_bit in itertools.product(range(3, 6), range(3)):
        (result,) = exchanged(whole, 8, [[(global_bit, local_bit)]], 4)
        assert np.array_equal(result, swap_bits_reference(whole, [(global_bit, local_bit)]))
