"""The runs of gates between a dynamic circuit's measurements, as one branch applies them.

A run is a maximal stretch of Gates (between measurements, resets, saves and loop limits). Its
classical bits cannot change inside it, so a branch knows which of its conditioned gates apply
before it starts. GateRuns keeps, for each run and each pattern of its conditions, the gates that
apply, unconditioned, fused again (the `fuse` given: the engine's fusion), planned and on the
device, built the first time a branch needs them. The circuit-wide fusion serves every branch at
once and cannot merge a gate with a conditioned one, nor across it; here a run of small gates
around a conditioned one can become one gate.
"""
from circuits import Circuit, Gate

from .apply import plan_gate
from .run_loop import PREPARED_MAX_DIM
from .simulator import transposed_copy_bytes


class GateRuns:
    """Applies runs of gates of a prepared circuit (Simulator.prepared) to branch states.

    fuse: Circuit -> Circuit, the fusion to apply to a run's gates (None: the circuit's own gates,
    those whose condition holds, in order).
    """

    def __init__(self, simulator, prepared, fuse=None):
        self.simulator, self.prepared, self.fuse = simulator, prepared, fuse
        self.operations = prepared.circuit.gates
        self.ends = _run_ends(self.operations)
        self._built = {}  # (start, conditions that hold) -> ((position, GatePlan, device matrix), ...)

    def end(self, position: int) -> int:
        """The position after the run that starts at `position` (a Gate)."""
        return self.ends[position]

    def apply(self, position: int, bits: int, state, scratch) -> tuple:
        """(state, scratch) after the run starting at `position` for a branch with classical bits
        `bits` (an out-of-place product swaps the two buffers, as in Simulator.apply_planned)."""
        for gate_position, plan, matrix in self.gates(position, bits):
            state, scratch, _ = self.simulator.apply_planned(self.prepared, plan, matrix, gate_position,
                                                             state, scratch)
        return state, scratch

    def gates(self, position: int, bits: int) -> tuple:
        """((position, GatePlan, device matrix or None), ...) that the run starting at `position`
        applies for classical bits `bits`; position: the first operation of the run (messages)."""
        applied = tuple(p for p in range(position, self.ends[position])
                        if self.operations[p].condition is None or self.operations[p].condition.holds(bits))
        key = (position, applied)
        if key not in self._built:
            self._built[key] = self._build(position, applied)
        return self._built[key]

    def _build(self, position: int, applied: tuple) -> tuple:
        own = tuple((p, self.prepared.plan["plans"][p], self.prepared.matrices[p]) for p in applied)
        if self.fuse is None or len(applied) < 2:
            return own
        circuit = self.prepared.circuit
        gates = [Gate(self.operations[p].targets, self.operations[p].matrix, self.operations[p].name)
                 for p in applied]
        fused = self.fuse(Circuit(circuit.n_qubits, gates)).gates
        plans = [plan_gate(circuit.n_qubits, gate.targets, gate.matrix) for gate in fused]
        device = self.simulator.device
        if not self.prepared.plan["copy_bytes"] and transposed_copy_bytes(self.simulator.backend, plans,
                                                                          circuit.n_qubits, device.on_gpu):
            return own  # the fused gates would need a transposed copy that the memory plan has no room for
        matrices = [device.xp.asarray(p.matrix) if p.k <= PREPARED_MAX_DIM else None for p in plans]
        for matrix in matrices:
            if matrix is not None:
                self.simulator.backend.prepare(matrix)
        return tuple((position, plan, matrix) for plan, matrix in zip(plans, matrices))


def _run_ends(operations) -> list:
    """For every position: the position after the run of Gates it starts (itself for a non-gate)."""
    ends = [0] * len(operations)
    end = len(operations)
    for position in range(len(operations) - 1, -1, -1):
        if not isinstance(operations[position], Gate):
            end = position
        ends[position] = end if isinstance(operations[position], Gate) else position
    return ends
