"""Schedule: exchanges only where a gate needs them, never undone needlessly, as few as possible,
and gates kept on contiguous physical bits."""
import itertools

import numpy as np
import pytest

from circuits.brickwork import brickwork_layer_targets
from qsim import SimulationError
from qsim.distributed.schedule import Exchange, GateStep, is_contiguous, plan_schedule


def replay(schedule, gate_targets):
    """Walk the steps: every gate on local bits as its physical targets say, and the layout after
    each exchange equal to the pairs applied; returns the final layout."""
    layout = schedule.initial
    done = []
    for step in schedule.steps:
        if isinstance(step, Exchange):
            assert all(g >= layout.n_local > l for g, l in step.pairs)
            assert step.before_gate == len(done)
            layout = layout.swapped(step.pairs)
        else:
            assert isinstance(step, GateStep) and step.gate_index == len(done)
            assert step.physical_targets == tuple(layout.physical_of[q] for q in gate_targets[step.gate_index])
            assert max(step.physical_targets) < layout.n_local
            done.append(step.gate_index)
    assert done == list(range(len(gate_targets)))
    assert layout == schedule.final
    return layout


def optimal_swaps_one_global(gate_targets, n_qubits):
    """Fewest exchanges with one global qubit, by dynamic programming over which qubit is global
    (an exchange may happen before any gate and moves one qubit)."""
    infinity = float("inf")
    cost = {q: (0 if q == n_qubits - 1 else infinity) for q in range(n_qubits)}
    for targets in gate_targets:
        best = min(cost.values())
        cost = {q: (infinity if q in targets else min(cost[q], best + 1)) for q in range(n_qubits)}
    return min(cost.values())


def test_no_exchange_when_no_gate_touches_a_global_qubit():
    targets = [(0, 1), (2, 3), (1, 2, 3)]
    schedule = plan_schedule(targets, 6, 2)
    assert schedule.exchanges == [] and schedule.final == schedule.initial
    replay(schedule, targets)


def test_furthest_next_use_partner_needs_one_exchange():
    # qubit 5 is global; qubits 2 and 3 are never used again, 0, 1 and 4 are: one exchange suffices
    targets = [(5,), (0,), (1,), (5,), (4,), (0, 1), (5, 4)]
    schedule = plan_schedule(targets, 6, 1)
    assert len(schedule.exchanges) == 1 and schedule.qubit_swaps == 1
    assert schedule.exchanges[0].pairs[0][1] in (2, 3)
    replay(schedule, targets)


def test_a_swap_is_not_undone_after_the_gate_or_at_the_end():
    targets = [(7, 0), (1, 2), (7,), (3, 4), (7, 0)]
    schedule = plan_schedule(targets, 8, 1)
    assert len(schedule.exchanges) == 1  # a schedule that swaps back after each gate needs 3 or 5
    assert schedule.final.is_global(7) is False
    replay(schedule, targets)


def test_two_global_qubits_needed_at_once_move_in_one_exchange():
    targets = [(6, 7), (0, 1), (6,), (7, 2)]
    schedule = plan_schedule(targets, 8, 2)
    assert len(schedule.exchanges) == 1 and schedule.qubit_swaps == 2
    assert {l for _, l in schedule.exchanges[0].pairs} <= {3, 4, 5}  # never-used partners
    replay(schedule, targets)


@pytest.mark.parametrize("seed", range(40))
def test_exchange_count_is_minimal_with_one_global_qubit(seed):
    """Random gates of one or two non-adjacent qubits (contiguity never matters): the schedule's
    exchange count equals the optimum found by dynamic programming."""
    rng = np.random.default_rng(seed)
    n_qubits = int(rng.integers(4, 8))
    targets = []
    for _ in range(int(rng.integers(5, 30))):
        if rng.random() < 0.5:
            targets.append((int(rng.integers(n_qubits)),))
        else:
            a, b = sorted(rng.choice(n_qubits, size=2, replace=False))
            targets.append((int(a), int(b)) if b - a > 1 else (int(a),))
    schedule = plan_schedule(targets, n_qubits, 1)
    replay(schedule, targets)
    assert len(schedule.exchanges) == optimal_swaps_one_global(targets, n_qubits)


@pytest.mark.parametrize("n_qubits, n_global, gate_size, most", [(32, 1, 5, 9), (33, 2, 5, 9), (14, 3, 5, 9),
                                                                 (14, 3, 2, None), (14, 3, 4, None)])
def test_brickwork_keeps_gates_contiguous(n_qubits, n_global, gate_size, most):
    """No gate is broken up; with 5-qubit gates a global qubit is idle in every other layer, so
    one exchange per layer boundary is enough (9 for 10 layers)."""
    depth = 10
    targets = [t for layer in range(depth) for t in brickwork_layer_targets(n_qubits, gate_size, layer)]
    schedule = plan_schedule(targets, n_qubits, n_global)
    replay(schedule, targets)
    assert all(is_contiguous(step.physical_targets) for step in schedule.gate_steps())
    assert most is None or len(schedule.exchanges) <= most


def test_34_qubits_on_4_ranks_with_5_qubit_gates_need_no_exchange():
    # the odd layers end at qubit 31 and the even ones at 29: qubits 32 and 33 stay idle
    targets = [t for layer in range(10) for t in brickwork_layer_targets(34, 5, layer)]
    assert plan_schedule(targets, 34, 2).exchanges == []


def test_partner_choice_prefers_higher_bits_when_all_else_is_equal():
    schedule = plan_schedule([(4,)], 5, 1)  # every local qubit is unused: the highest local bit wins
    assert schedule.exchanges[0].pairs == ((4, 3),)


def test_gate_wider_than_the_local_qubits_is_refused():
    with pytest.raises(SimulationError, match=r"gate 1 acts on 4 qubits.*only 3 of the 5 .*at most 2 ranks"):
        plan_schedule([(0,), (0, 1, 2, 3)], 5, 2)


def test_every_exchange_set_of_three_global_qubits_replays():
    targets = [tuple(c) for c in itertools.combinations(range(7), 3)]
    schedule = plan_schedule(targets, 7, 3)
    replay(schedule, targets)
    assert schedule.qubit_swaps >= len(schedule.exchanges) > 0
