"""When to exchange global and local qubits, and which ones, for a circuit on 2^g ranks.

A gate can only run on local qubits. Before a gate with targets on rank bits, an exchange swaps
each such (global) qubit with a local qubit outside the gate. The layout then stays as it is:
nothing is swapped back after the gate or at the end, so no exchange is ever undone without a
gate needing it.

Which local qubit goes to the rank bit is the choice that matters. An exchange covers the gates
up to the next one that touches a global qubit (its run). The partner chosen is, in this order:
1. the one that breaks fewest gates of the run: a gate on logically contiguous qubits that the
   new layout puts on non-contiguous physical bits needs a transposed copy of the whole slice
   (twice the memory, two extra passes), which costs more than an exchange;
2. the one that makes the run longest: Belady's furthest-next-use rule applied to the whole
   global set, the fewest exchanges for one global qubit, and swapped-out qubits kept away as
   long as possible for more;
3. the higher physical bit (longer contiguous pieces to pack for the exchange).
"""
import bisect
from dataclasses import dataclass

from ..errors import SimulationError
from .layout import Layout

#: Gates ahead whose contiguity a partner choice inspects (keeps planning linear in the circuit).
CONTIGUITY_WINDOW = 64


@dataclass(frozen=True)
class Exchange:
    """Swap the data of physical bits: pairs of (global bit, local bit)."""

    pairs: tuple
    before_gate: int


@dataclass(frozen=True)
class GateStep:
    """Run gate `gate_index` of the circuit on the local slice, on these physical bits
    (physical_targets[j] holds the gate's targets[j])."""

    gate_index: int
    physical_targets: tuple


@dataclass(frozen=True)
class Schedule:
    """Steps in execution order, with the layouts before the first and after the last."""

    steps: tuple
    initial: Layout
    final: Layout

    @property
    def exchanges(self) -> list:
        return [step for step in self.steps if isinstance(step, Exchange)]

    @property
    def qubit_swaps(self) -> int:
        return sum(len(step.pairs) for step in self.exchanges)

    def gate_steps(self) -> list:
        return [step for step in self.steps if isinstance(step, GateStep)]


def plan_schedule(gate_targets, n_qubits: int, n_global: int) -> Schedule:
    """The schedule of a circuit given as its gates' target tuples (logical qubits).

    Raises SimulationError when a gate has more targets than there are local qubits.
    """
    initial = Layout.identity(n_qubits, n_global)
    gate_targets = [tuple(int(q) for q in targets) for targets in gate_targets]
    _check_gates_fit(gate_targets, initial)
    future = _Future(gate_targets, n_qubits)
    layout, steps = initial, []
    for index, targets in enumerate(gate_targets):
        needed = [q for q in targets if layout.is_global(q)]
        if needed:
            pairs = _choose_pairs(index, needed, layout, future)
            layout = layout.swapped(pairs)
            steps.append(Exchange(pairs, index))
        steps.append(GateStep(index, tuple(layout.physical_of[q] for q in targets)))
    return Schedule(tuple(steps), initial, layout)


def _check_gates_fit(gate_targets, layout: Layout) -> None:
    for index, targets in enumerate(gate_targets):
        if len(targets) > layout.n_local:
            raise SimulationError(
                f"gate {index} acts on {len(targets)} qubits, but with {1 << layout.n_global} ranks only "
                f"{layout.n_local} of the {layout.n_qubits} qubits are local to a rank; use at most "
                f"{1 << max(0, layout.n_qubits - len(targets))} ranks (GPUs)")


class _Future:
    """The gates' targets, and for each qubit the sorted indices of the gates that use it."""

    def __init__(self, gate_targets, n_qubits: int):
        self.targets = gate_targets
        self.uses = [[] for _ in range(n_qubits)]
        for index, targets in enumerate(gate_targets):
            for q in targets:
                self.uses[q].append(index)

    def run_end(self, start: int, qubits) -> int:
        """Index of the first gate at or after `start` that uses one of `qubits` (the number of
        gates when none does)."""
        end = len(self.targets)
        for q in qubits:
            position = bisect.bisect_left(self.uses[q], start)
            if position < len(self.uses[q]):
                end = min(end, self.uses[q][position])
        return end


def _choose_pairs(index: int, needed: list, layout: Layout, future: _Future) -> tuple:
    """(global bit, local bit) pairs bringing the `needed` logical qubits onto local bits
    before gate `index` (module docstring: fewest broken gates, longest run, higher bit)."""
    targets = set(future.targets[index])
    candidates = [q for q in range(layout.n_qubits) if not layout.is_global(q) and q not in targets]
    pending = sorted(needed, key=lambda q: layout.physical_of[q])
    pairs = []
    for qubit in pending:
        unplaced = set(pending[len(pairs) + 1:])

        def score(partner, qubit=qubit, unplaced=unplaced):
            trial = layout.swapped(pairs + [(layout.physical_of[qubit], layout.physical_of[partner])])
            end = future.run_end(index, set(trial.logical_at[layout.n_local:]) - unplaced)
            return -_broken_gates(future, trial, index, end, unplaced), end, trial.physical_of[qubit]

        partner = max(candidates, key=score)
        candidates.remove(partner)
        pairs.append((layout.physical_of[qubit], layout.physical_of[partner]))
    return tuple(pairs)


def is_contiguous(bits) -> bool:
    return max(bits) - min(bits) == len(bits) - 1


def _broken_gates(future: _Future, layout: Layout, start: int, end: int, unplaced: set) -> int:
    """Gates in [start, min(end, start + CONTIGUITY_WINDOW)) on logically contiguous qubits that
    `layout` puts on non-contiguous physical bits (gates on qubits not yet placed are skipped)."""
    count = 0
    for index in range(start, min(end, start + CONTIGUITY_WINDOW)):
        targets = future.targets[index]
        if unplaced.intersection(targets) or not is_contiguous(targets):
            continue
        count += not is_contiguous([layout.physical_of[q] for q in targets])
    return count
