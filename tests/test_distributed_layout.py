"""Layout: the qubit permutation of a split state, checked against explicit index arithmetic."""
import itertools

import numpy as np
import pytest

from qsim import SimulationError
from qsim.distributed.layout import Layout, global_qubit_count


def permuted_index(logical_index, physical_of):
    """Independent reference: build the physical index bit by bit from a bit string."""
    bits = [(logical_index >> q) & 1 for q in range(len(physical_of))]
    physical = [0] * len(physical_of)
    for q, bit in enumerate(bits):
        physical[physical_of[q]] = bit
    return int("".join(str(b) for b in reversed(physical)), 2)


@pytest.mark.parametrize("physical_of", [(0, 1, 2, 3), (3, 1, 0, 2), (1, 2, 3, 0), (2, 3, 0, 1)])
def test_physical_index_owner_and_logical_order(physical_of):
    layout = Layout(physical_of, n_global=2)
    physical_state = np.arange(16) * (1 + 1j)  # amplitude value = its physical index
    logical_state = layout.to_logical_order(physical_state)
    for index in range(16):
        physical = permuted_index(index, physical_of)
        assert layout.physical_index(index) == physical
        assert layout.owner(index) == (physical >> 2, physical & 3)
        assert logical_state[index] == physical_state[physical]


def test_identity_and_inverse():
    layout = Layout.identity(5, 2)
    assert layout.n_local == 3 and layout.logical_at == (0, 1, 2, 3, 4)
    assert [layout.is_global(q) for q in range(5)] == [False, False, False, True, True]
    assert np.array_equal(layout.to_logical_order(np.arange(32.0)), np.arange(32.0))


def test_swapped_exchanges_the_contents_of_physical_bits():
    layout = Layout.identity(5, 1).swapped([(4, 1)])  # qubit 4 now on bit 1, qubit 1 on bit 4
    assert layout.physical_of == (0, 4, 2, 3, 1)
    assert layout.is_global(1) and not layout.is_global(4)
    back = layout.swapped([(4, 1)])
    assert back == Layout.identity(5, 1)
    for pairs in itertools.permutations([(4, 0), (3, 2)]):
        two = Layout.identity(5, 2).swapped(pairs)
        assert two.physical_of == (4, 1, 3, 2, 0)
        assert {two.logical_at[b] for b in (3, 4)} == {0, 2}


@pytest.mark.parametrize("size, g", [(1, 0), (2, 1), (4, 2), (8, 3), (64, 6)])
def test_global_qubit_count(size, g):
    assert global_qubit_count(size) == g


@pytest.mark.parametrize("size, message", [(3, "power of two.*use 2"), (6, "use 4"), (0, "positive"), (-2, "positive"),
                                           (2.0, "positive integer"), (True, "positive integer")])
def test_world_size_must_be_a_power_of_two(size, message):
    with pytest.raises(SimulationError, match=message):
        global_qubit_count(size)


def test_bad_layouts_are_refused():
    with pytest.raises(SimulationError, match="permutation"):
        Layout((0, 0, 1), 1)
    with pytest.raises(SimulationError, match="do not fit"):
        Layout((0, 1), 3)
