"""Shot branching: all shots of a dynamic circuit from one walk over its outcome tree.

A branch is a state, its classical bits and the number of shots that follow it. At a
measurement or reset (groups of at most MAX_JOINT_QUBITS qubits) the branch's shots are split
over the outcomes by a multinomial draw from the exact outcome weights (qsim.measurement's
outcome_weights), and every outcome that got shots continues once, with its share: projected
and renormalised (measurement.collapse). So each shot's classical bits have exactly the
distribution of an independent trajectory, and the walk does at most min(shots, outcomes) state
updates per split where per-shot trajectories do `shots`. Conditioned operations are applied or
skipped per branch (an unrolled while loop's LoopLimit reached with its condition true stops
the run with its error); the gates a branch applies between two measurements, their conditions
known, can be fused again as one run (qsim.gate_runs, run_branches's `fuse`). Save operations
(circuits.Save) read their value once per branch. Final measurements (a tail of unconditioned
measurements) are sampled from the branch's state (qsim.sampling) rather than split.

Branches are walked depth first. A sibling waiting its turn keeps a copy of the state while
`max_states` states (and the device's memory) allow; beyond that it keeps only its outcome
history and is rebuilt when its turn comes by replaying the circuit from |0...0> with those
outcomes forced (a replay costs one pass over the circuit's gates, and no memory).

All randomness comes from one numpy Generator seeded with the run's seed, drawn in the walk's
fixed order, so a seed gives the same shots on the CPU and the GPU.
"""
import time
from dataclasses import dataclass

import numpy as np

from circuits import Gate, LoopLimit, Measure, Reset, Save

from .errors import SimulationError
from .gate_runs import GateRuns
from .measurement import MAX_JOINT_QUBITS, collapse, outcome_weights
from .sampling import sample_outcomes
from .save_values import combine, read_save
from .state import initial_state_vector


@dataclass
class _Branch:
    position: int  # the next operation to run
    state: object  # the (2^N,) device state, or None: rebuild it by replaying `history`
    bits: int
    shots: int
    history: tuple  # outcome drawn at every measurement or reset done, in order
    saves: tuple  # (label, value, bits at the save) of every save done


@dataclass
class BranchRun:
    """What run_branches returns.

    memory: (shots,) Python ints, the classical bits of each shot (bit c = classical bit c), in
        shot order. saves: {label: value combined over shots} (qsim.save_values.combine).
    final_state: the state of the branch that the last shot followed (host complex128).
    branches: leaves of the walk; replays: branches rebuilt from their history; splits:
        measurements or resets that split a branch; wall_s: seconds of the walk.
    """

    memory: list
    saves: dict
    final_state: np.ndarray
    branches: int
    replays: int
    splits: int
    wall_s: float


def run_branches(simulator, circuit, shots: int, seed: int, *, max_states: int = None,
                 keep_final_state: bool = False, fuse=None) -> BranchRun:
    """Run `circuit` (a circuits.Circuit, dynamic or with saves) for `shots` shots on `simulator`
    (a qsim.Simulator) by shot branching (see the module docstring). max_states: most states
    alive at once (None: as many as fit in the device's memory beside the run's plan). fuse:
    Circuit -> Circuit, fusion for the gates a branch applies between two measurements, its
    conditions resolved (qsim.gate_runs; None: the circuit's gates as they are)."""
    started = time.perf_counter()
    operations = _split_groups(circuit.gates)
    circuit = type(circuit)(circuit.n_qubits, operations, n_clbits=circuit.n_clbits,
                            clbit_registers=circuit.clbit_registers)
    _check_saves(operations)
    with simulator.prepared(circuit) as prepared:
        walk = _Walk(GateRuns(simulator, prepared, fuse), np.random.default_rng(seed),
                     _state_limit(simulator, prepared, max_states))
        leaves = walk.run(shots, keep_final_state)
    memory, shots_of_leaf = _shot_order(leaves, walk.last_leaf, walk.rng)
    deterministic = walk.splits == 0  # as Aer: a circuit with no random split saves its values once
    records = {}
    for leaf_index, (_, saves) in enumerate(leaves):
        indices = [0] if deterministic else shots_of_leaf[leaf_index]
        for label, value, bits in saves:
            records.setdefault(label, []).append((value, bits, len(indices), indices))
    by_label = {op.label: op for op in operations if isinstance(op, Save)}
    saves = {label: combine(by_label[label], group, 1 if deterministic else shots, hex)
             for label, group in records.items()}
    return BranchRun(memory, saves, walk.final_state, len(leaves), walk.replays, walk.splits,
                     time.perf_counter() - started)


class _Walk:
    """The depth-first walk over branches of one prepared circuit."""

    def __init__(self, runs: GateRuns, rng, max_states: int):
        self.runs, self.rng, self.max_states = runs, rng, max_states
        self.simulator, self.prepared = runs.simulator, runs.prepared
        self.operations = runs.operations
        self.tail = _final_measurements_start(self.operations)
        self.scratch = None
        self.live_states = 0
        self.replays = self.splits = 0
        self.last_leaf, self.final_state = None, None
        self.single_labels = frozenset(op.label for op in self.operations if isinstance(op, Save)
                                       and op.subtype == "single")

    def run(self, shots: int, keep_final_state: bool) -> list:
        """[(((bits, count), ...), saves), ...] per leaf, in walk order. The leaf that the run's
        last shot follows is drawn as the walk goes (reservoir sampling: leaf L with probability
        count_L / shots); only it keeps its 'single' save values and, if asked, its final state
        (self.last_leaf, self.final_state)."""
        xp = self.simulator.device.xp
        self.scratch = xp.empty(1 << self.prepared.circuit.n_qubits, dtype=xp.complex128) \
            if self.prepared.plan["spare_buffer"] else None
        stack = [_Branch(0, initial_state_vector(self.prepared.circuit.n_qubits, xp), 0, shots, (), ())]
        self.live_states = 1
        leaves, seen = [], 0
        while stack:
            branch = stack.pop()
            if branch.state is None:
                self.replays += 1
                self.live_states += 1
                branch = self._replay(branch)
            outcomes, saves, state = self._advance(branch, stack)
            self.live_states -= 1
            count = sum(c for _, c in outcomes)
            seen += count
            if self.rng.integers(seen) < count:
                if self.last_leaf is not None:
                    leaves[self.last_leaf] = (leaves[self.last_leaf][0], _without_single(leaves[self.last_leaf][1], self.single_labels))
                self.last_leaf = len(leaves)
                self.final_state = _host(state) if keep_final_state else None
            else:
                saves = _without_single(saves, self.single_labels)
            leaves.append((outcomes, saves))
        return leaves

    def _replay(self, branch: _Branch) -> _Branch:
        """The branch with its state rebuilt: the operations before branch.position run again from
        |0...0> with the recorded outcomes forced and without saving anything."""
        xp = self.simulator.device.xp
        state = initial_state_vector(self.prepared.circuit.n_qubits, xp)
        forced, bits, position = list(branch.history), 0, 0
        while position < branch.position:
            state, position, operation = self._step(position, bits, state)
            if isinstance(operation, (Measure, Reset)):  # a LoopLimit here did not fire the first time
                outcome = forced.pop(0)
                weights = outcome_weights(state, operation.qubits)
                bits = _collapse(state, operation, outcome, weights[outcome], bits)
        return _Branch(branch.position, state, bits, branch.shots, branch.history, branch.saves)

    def _advance(self, branch: _Branch, stack: list) -> tuple:
        """Run `branch` to its end, pushing the siblings born at its splits onto `stack`."""
        state, bits, shots, history, saves = branch.state, branch.bits, branch.shots, branch.history, branch.saves
        position = branch.position
        while position < len(self.operations):
            if position == self.tail:
                return self._sample_tail(state, bits, shots), saves, state
            state, position, operation = self._step(position, bits, state)
            if operation is None:
                continue
            if isinstance(operation, Save):
                saves += ((operation.label, read_save(operation, state), bits),)
                continue
            if isinstance(operation, LoopLimit):
                raise SimulationError(operation.message())
            weights = outcome_weights(state, operation.qubits)
            counts = self.rng.multinomial(shots, _probabilities(weights))
            taken = [int(o) for o in np.flatnonzero(counts)]
            self.splits += len(taken) > 1
            for outcome in taken[:-1]:
                sibling = self._copy(state)
                sibling_bits = bits if sibling is None else _collapse(sibling, operation, outcome, weights[outcome], bits)
                stack.append(_Branch(position, sibling, sibling_bits if sibling is not None else 0,
                                     int(counts[outcome]), history + (outcome,), saves))
            outcome = taken[-1]
            bits = _collapse(state, operation, outcome, weights[outcome], bits)
            shots, history = int(counts[outcome]), history + (outcome,)
        return ((bits, shots),), saves, state

    def _step(self, position: int, bits: int, state) -> tuple:
        """(state, next position, operation) after one step at `position` with classical bits
        `bits`: a run of gates applied, or an operation whose condition fails skipped (operation
        None both times), else the operation there, for the caller to carry out."""
        operation = self.operations[position]
        if isinstance(operation, Gate):
            state, self.scratch = self.runs.apply(position, bits, state, self.scratch)
            return state, self.runs.end(position), None
        if operation.condition is not None and not operation.condition.holds(bits):
            return state, position + 1, None
        return state, position + 1, operation

    def _copy(self, state):
        """A copy of `state` for a waiting sibling, or None when max_states are alive."""
        if self.live_states >= self.max_states:
            return None
        self.live_states += 1
        return state.copy()

    def _sample_tail(self, state, bits: int, shots: int) -> tuple:
        """((bits, count), ...) of the final measurements sampled `shots` times."""
        tail = self.operations[self.tail:]
        qubits = sorted({q for op in tail for q in op.qubits})
        outcomes = sample_outcomes(state, qubits, shots, int(self.rng.integers(2**62)))
        values, counts = np.unique(outcomes, return_counts=True)
        column = {q: j for j, q in enumerate(qubits)}
        result = []
        for value, count in zip(values.tolist(), counts.tolist()):
            shot_bits = bits
            for op in tail:
                for q, c in zip(op.qubits, op.clbits):
                    shot_bits = (shot_bits & ~(1 << c)) | (((value >> column[q]) & 1) << c)
            result.append((shot_bits, count))
        return tuple(result)


def _collapse(state, operation, outcome: int, weight: int, bits: int) -> int:
    """Project `state` (in place) on `outcome` of the measurement or reset (one pass on the GPU);
    the new bits."""
    collapse(state, operation.qubits, outcome, weight, reset=isinstance(operation, Reset))
    if isinstance(operation, Reset):
        return bits
    for j, clbit in enumerate(operation.clbits):
        bits = (bits & ~(1 << clbit)) | (((outcome >> j) & 1) << clbit)
    return bits


def _probabilities(weights: list) -> np.ndarray:
    total = sum(weights)
    if total <= 0:
        raise SimulationError("cannot draw a measurement outcome: the state is zero")
    probabilities = np.array([w / total for w in weights])
    return probabilities / probabilities.sum()


def _final_measurements_start(operations) -> int:
    """Index of the first of the trailing unconditioned measurements (len when there are none)."""
    start = len(operations)
    while start > 0 and isinstance(operations[start - 1], Measure) and operations[start - 1].condition is None:
        start -= 1
    return start


def _split_groups(operations) -> list:
    """Measurements and resets of more than MAX_JOINT_QUBITS qubits as consecutive groups."""
    split = []
    for op in operations:
        if isinstance(op, (Measure, Reset)) and len(op.qubits) > MAX_JOINT_QUBITS:
            for start in range(0, len(op.qubits), MAX_JOINT_QUBITS):
                part = slice(start, start + MAX_JOINT_QUBITS)
                split.append(Measure(op.qubits[part], op.clbits[part], op.condition, op.name)
                             if isinstance(op, Measure) else Reset(op.qubits[part], op.condition, op.name))
        else:
            split.append(op)
    return split


def _check_saves(operations) -> None:
    """Saves sharing a label must save the same kind the same way (else their values cannot merge)."""
    seen = {}
    for op in operations:
        if isinstance(op, Save):
            first = seen.setdefault(op.label, op)
            if (first.kind, first.subtype) != (op.kind, op.subtype):
                raise SimulationError(f"two saves use the label {op.label!r} for different data ({first.name} "
                                      f"{first.subtype}, {op.name} {op.subtype}); give each its own label")


def _state_limit(simulator, prepared, max_states) -> int:
    """Most states alive at once: max_states, and what the device's free memory holds."""
    state_bytes = prepared.plan["state_bytes"]
    spare = prepared.plan["available_bytes"] - prepared.plan["planned_bytes"]
    fits = 1 + max(0, spare // state_bytes)
    return int(fits if max_states is None else max(1, min(max_states, fits)))


def _shot_order(leaves: list, last_leaf: int, rng) -> tuple:
    """(memory per shot, {leaf: its shots' positions}): one shot of `last_leaf` last, the others
    before it in a uniform random order (with last_leaf drawn with probability count / shots,
    the whole order is uniform)."""
    leaf_of_shot, memory = [], []
    for leaf_index, (outcomes, _) in enumerate(leaves):
        for bits, count in outcomes:
            leaf_of_shot += [leaf_index] * count
            memory += [bits] * count
    last = leaf_of_shot.index(last_leaf) + int(rng.integers(leaf_of_shot.count(last_leaf)))
    rest = [i for i in range(len(memory)) if i != last]
    order = [rest[i] for i in rng.permutation(len(rest))] + [last]
    memory = [memory[i] for i in order]
    positions = {}
    for position, i in enumerate(order):
        positions.setdefault(leaf_of_shot[i], []).append(position)
    return memory, positions


def _without_single(saves: tuple, labels: frozenset) -> tuple:
    """The saves of a leaf whose shots are not the last: plain 'single' values are dropped (only
    the last shot's is reported), which frees the memory of unshared ones."""
    return tuple(entry for entry in saves if entry[0] not in labels)


def _host(state):
    from gemm_backend.arrays import to_host

    return to_host(state)
