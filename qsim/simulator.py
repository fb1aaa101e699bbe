"""The state-vector engine: runs a Circuit gate by gate through a GEMM backend."""
import contextlib
import functools
from dataclasses import dataclass, field

from tqdm.auto import tqdm

import gemm_backend
from circuits import Circuit, CircuitError, Gate, Save

from .apply import plan_gate, transposed_chunk_bytes
from .device import resolve_device
from .errors import SimulationError
from .measurement import measurement_workspace_bytes
from .result import Result
from .run_loop import GATE, GateStep, RunLoop, apply_gate_plan, prepared_matrices, warm_up
from .state import MEMORY_FRACTION, initial_state_vector
from .trajectory import Trajectory

BYTES_PER_AMPLITUDE = 16
GIB = float(1 << 30)


@dataclass
class SimulatorOptions:
    """Everything that configures a run.

    backend: registry name (`qsim backends`); backend_options: its keyword options.
    device: "auto" (GPU if cupy sees one), "cpu" or "gpu".
    progress: tqdm bar; None shows it only on a terminal.
    out_of_place: "auto" keeps a second state buffer for backends that cannot work in place
        when it fits in memory; True requires it, False never allocates it (N = 32 on 141 GB).
    memory_fraction: share of free device memory a run may plan to use.
    """

    backend: str = "cublas"
    device: str = "auto"
    backend_options: dict = field(default_factory=dict)
    progress: bool = None
    out_of_place: object = "auto"
    memory_fraction: float = MEMORY_FRACTION


@dataclass
class PreparedRun:
    """What Simulator.run builds once per circuit: the memory plan (with one GatePlan per
    operation, None for non-gates), the gates' device matrices (None above the run loop's
    PREPARED_MAX_DIM) and the seconds the backend spent preparing the gates."""

    circuit: Circuit
    plan: dict
    matrices: list
    prepare_time_s: float


class Simulator:
    """Python entry point: `Simulator(backend="cublas", device="auto").run(circuit) -> Result`."""

    def __init__(self, backend: str = "cublas", device: str = "auto", *, progress=None,
                 out_of_place="auto", **backend_options):
        if progress is not None and not isinstance(progress, bool):
            raise SimulationError(f"progress must be True, False or None (only on a terminal), got {progress!r}")
        if not (out_of_place == "auto" or isinstance(out_of_place, bool)):
            raise SimulationError(f"out_of_place must be 'auto', True or False, got {out_of_place!r}")
        self.options = SimulatorOptions(backend, device, backend_options, progress, out_of_place)
        self.device = resolve_device(device)
        self.backend = gemm_backend.get(backend, **backend_options)

    # -- memory ---------------------------------------------------------------------------
    def memory_plan(self, circuit: Circuit) -> dict:
        """Bytes the run needs, decided before anything is allocated. Raises SimulationError
        when even the in-place plan does not fit."""
        state_bytes = BYTES_PER_AMPLITUDE << circuit.n_qubits
        # One plan per operation, None for measurements and resets (qsim.trajectory's).
        plans = [plan_gate(circuit.n_qubits, g.targets, g.matrix) if isinstance(g, Gate) else None
                 for g in circuit.gates]
        gate_plans = [p for p in plans if p is not None]
        copy_bytes = transposed_copy_bytes(self.backend, gate_plans, circuit.n_qubits, self.device.on_gpu)
        on_gpu = self.device.on_gpu
        measuring = measurement_workspace_bytes(circuit.n_qubits, on_gpu=on_gpu) if circuit.is_dynamic else 0
        workspace = self.backend.workspace.reserved() + measuring
        base = state_bytes + copy_bytes + workspace
        budget = self._require_memory(circuit.n_qubits, copy_bytes, workspace)
        # A backend that gathers (qsim.gathered_layout) needs no transposed copy beside a spare buffer.
        gathers = self.backend.gathers_layout(on_gpu)
        spare_base = base - copy_bytes if gathers else base
        wants_spare = gathers or wants_spare_buffer(self.backend, gate_plans, on_gpu)
        mode = self.options.out_of_place
        fits_spare = spare_base + state_bytes <= budget
        if mode is True and not fits_spare:
            raise SimulationError(
                f"out_of_place=True needs a second {state_bytes / GIB:.2f} GiB state buffer that does not fit"
                f" ({budget / GIB:.2f} GiB available); use out_of_place='auto' to apply gates in place"
            )
        spare = bool(mode is True or (mode == "auto" and wants_spare and fits_spare))
        return {"state_bytes": state_bytes, "spare_buffer": spare, "copy_bytes": copy_bytes,
                "planned_bytes": spare_base + state_bytes if spare else base,
                "available_bytes": budget, "plans": plans}

    def check_fits(self, n_qubits: int) -> None:
        """Raise SimulationError when even a circuit of n_qubits without transposed gates would not
        fit (the state and the backend's workspace): a check before a large circuit is built."""
        self._require_memory(n_qubits, 0, self.backend.workspace.reserved())

    def _require_memory(self, n_qubits: int, copy_bytes: int, workspace: int) -> int:
        """The byte budget of a run; SimulationError when the state, the transposed copy and the
        workspace exceed it."""
        state_bytes = BYTES_PER_AMPLITUDE << n_qubits
        base = state_bytes + copy_bytes + workspace
        budget = int(self.device.free_bytes() * self.options.memory_fraction)
        if base > budget:
            raise SimulationError(
                f"{n_qubits} qubits need {base / GIB:.2f} GiB on the {self.device.kind} "
                f"(state {state_bytes / GIB:.2f} GiB"
                f"{f' + {copy_bytes / GIB:.2f} GiB transposed copy for non-contiguous gates' if copy_bytes else ''}"
                f" + {workspace / GIB:.2f} GiB backend workspace), but only {budget / GIB:.2f} GiB is "
                "available; use fewer qubits, a smaller workspace_bytes, or a larger device"
            )
        return budget

    # -- run ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def prepared(self, circuit: Circuit):
        """Plan, upload and warm up `circuit` once for many runs (trajectories, branches): yields a
        PreparedRun to pass to run(..., prepared=) and apply_planned, inside one backend run (whose
        deferred error checks are raised on leaving the block)."""
        prepared = self._prepare(circuit)
        self.backend.start_run()
        try:
            yield prepared
        finally:
            self.device.synchronize()
            self.backend.finish_run()

    def _prepare(self, circuit: Circuit) -> PreparedRun:
        if not isinstance(circuit, Circuit):
            raise CircuitError(f"run() takes a circuits.Circuit, got {type(circuit).__name__}")
        plan = self.memory_plan(circuit)
        matrices = prepared_matrices(plan["plans"], self.device.xp)
        return PreparedRun(circuit, plan, matrices, warm_up(self.backend, self.device, plan["plans"], matrices))

    def apply_planned(self, prepared: PreparedRun, plan, matrix, position: int, state, scratch) -> tuple:
        """Apply a planned gate (qsim.apply.GatePlan, of the prepared circuit or built from its
        gates; matrix: its device copy, or None to upload plan.matrix) to `state` (the engine's
        (2^N,) complex128 buffer); scratch: the spare buffer or None; position names the
        operation it stands for in messages. Returns (state, scratch, layout): an out-of-place
        product swaps the two buffers."""
        return apply_gate_plan(self.backend, self.device, plan, matrix, state, scratch,
                               position=position, operations=len(prepared.circuit.gates))

    def run(self, circuit: Circuit, initial_state=None, *, seed=None, prepared: PreparedRun = None) -> Result:
        """Simulate `circuit` from |0...0> or from `initial_state` ((2^N,) complex, unit norm).
        A dynamic circuit runs as one quantum trajectory (qsim.trajectory) drawn with `seed`
        (None: a fresh one, reported in Result.trajectory). prepared: from `with
        simulator.prepared(circuit)`, to skip planning and warm-up (a batch of trajectories).
        Save operations (circuits.Save) are refused: qsim.branching runs them."""
        if isinstance(circuit, Circuit) and any(isinstance(op, Save) for op in circuit.gates):
            raise SimulationError("the circuit holds save operations (circuits.Save); run it through "
                                  "qsim.qiskit.QsimBackend or qsim.branching.run_branches, which honour them")
        own_run = prepared is None
        if own_run:
            prepared = self._prepare(circuit)
        elif prepared.circuit is not circuit:
            raise SimulationError("run(prepared=...) got the PreparedRun of another circuit")
        xp = self.device.xp
        state = initial_state_vector(circuit.n_qubits, xp, initial_state)
        scratch = xp.empty_like(state) if prepared.plan["spare_buffer"] else None
        trajectory = Trajectory.start(circuit, self.device, seed)
        steps = [GateStep(position, gate_plan, u, {} if gate_plan is None else {"targets": list(gate.targets)},
                          None if trajectory is None else functools.partial(trajectory.handles, gate))
                 for position, (gate, gate_plan, u) in enumerate(zip(circuit.gates, prepared.plan["plans"],
                                                                     prepared.matrices))]
        bar = tqdm(total=len(circuit.gates), unit="gate", disable=self._progress_disabled(), leave=False)
        loop = RunLoop(self.backend, self.device, bar, len(circuit.gates), backend_run=own_run,
                       gathered=self.backend.gathers_layout(self.device.on_gpu))
        state = loop.run(steps, state, scratch)
        return Result(
            n_qubits=circuit.n_qubits, state=state, backend=self.backend.name, device=self.device.name(),
            gate_times_s=loop.seconds(GATE), gate_info=loop.gate_info, gate_flops=loop.gate_flops(circuit.n_qubits),
            peak_memory_bytes=loop.memory.peak(), memory_measure=loop.memory.measure,
            backend_options=self.backend.options, backend_statistics=self.backend.statistics(),
            prepare_time_s=prepared.prepare_time_s if own_run else 0.0, copy_bandwidth_Bps=self.device.copy_bandwidth(),
            trajectory=trajectory.record() if trajectory is not None else None,
            implementation=self.backend.implementation(self.device.on_gpu),
        )

    def _progress_disabled(self):
        progress = self.options.progress
        return None if progress is None else not progress


def transposed_copy_bytes(backend, plans, n_qubits: int, on_gpu: bool) -> int:
    """Bytes of the transposed copy's chunk (qsim.apply) when a gate of `plans` is on non-contiguous
    targets that the backend does not take in place, else 0."""
    transposes = any(not p.contiguous and not backend.takes_scattered(p.k, on_gpu) for p in plans)
    return transposed_chunk_bytes(n_qubits) if transposes else 0


def wants_spare_buffer(backend, plans, on_gpu: bool) -> bool:
    """Whether a second state buffer would help: a gate on contiguous targets that the backend
    does not apply in place."""
    return any(p.contiguous and not backend.works_in_place(p.k, on_gpu) for p in plans)
