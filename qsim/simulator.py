"""The state-vector engine: runs a Circuit gate by gate through a GEMM backend."""
import contextlib
import resource
import time
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

import gemm_backend
from circuits import Circuit, CircuitError, Gate, Save

from .apply import apply_plan, plan_gate, transposed_chunk_bytes
from .device import resolve_device
from .errors import SimulationError
from .measurement import measurement_workspace_bytes
from .result import Result
from .state import MEMORY_FRACTION, initial_state_vector
from .trajectory import Trajectory

BYTES_PER_AMPLITUDE = 16
GIB = float(1 << 30)
# Gates up to this size are uploaded once before the run (and prepared by the backend then).
PREPARED_MAX_DIM = 64
# Kernels choose their variant by the stride R of the (L, K, R) view; a warm-up block of stride
# min(R, STRIDE_CLASS_LIMIT) takes the same variant (and R = 2^q keeps it a power of two).
STRIDE_CLASS_LIMIT = 64


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
    operation, None for non-gates), the gates' device matrices (None above PREPARED_MAX_DIM)
    and the seconds the backend spent preparing the gates."""

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
        transposes = any(not p.contiguous and not self.backend.takes_scattered(p.k, self.device.on_gpu)
                         for p in gate_plans)
        copy_bytes = transposed_chunk_bytes(circuit.n_qubits) if transposes else 0
        workspace = self.backend.reserved_workspace_bytes() + (measurement_workspace_bytes(circuit.n_qubits)
                                                               if circuit.is_dynamic else 0)
        base = state_bytes + copy_bytes + workspace
        budget = self._require_memory(circuit.n_qubits, copy_bytes, workspace)
        wants_spare = any(
            p.contiguous and not self.backend.works_in_place(p.k, self.device.on_gpu) for p in gate_plans
        )
        mode = self.options.out_of_place
        fits_spare = base + state_bytes <= budget
        if mode is True and not fits_spare:
            raise SimulationError(
                f"out_of_place=True needs a second {state_bytes / GIB:.2f} GiB state buffer that does not fit"
                f" ({budget / GIB:.2f} GiB available); use out_of_place='auto' to apply gates in place"
            )
        spare = bool(mode is True or (mode == "auto" and wants_spare and fits_spare))
        return {"state_bytes": state_bytes, "spare_buffer": spare, "planned_bytes": base + spare * state_bytes,
                "available_bytes": budget, "plans": plans}

    def check_fits(self, n_qubits: int) -> None:
        """Raise SimulationError when even a circuit of n_qubits without transposed gates would not
        fit (the state and the backend's workspace): a check before a large circuit is built."""
        self._require_memory(n_qubits, 0, self.backend.reserved_workspace_bytes())

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
        PreparedRun to pass to run(..., prepared=) and apply_gate, inside one backend run (whose
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
        matrices = [self.device.xp.asarray(p.matrix) if p is not None and p.k <= PREPARED_MAX_DIM else None
                    for p in plan["plans"]]
        return PreparedRun(circuit, plan, matrices, self._warm_up(plan["plans"], matrices))

    def apply_gate(self, prepared: PreparedRun, position: int, state, scratch) -> tuple:
        """Apply gate `position` of the prepared circuit to `state` (the engine's (2^N,)
        complex128 buffer); scratch: the spare buffer or None. Returns (state, scratch, layout):
        an out-of-place product swaps the two buffers."""
        gate_plan, u = prepared.plan["plans"][position], prepared.matrices[position]
        u = self.device.xp.asarray(gate_plan.matrix) if u is None else u
        product = lambda x, out: self.backend.apply_batched(u, x, out)  # noqa: E731
        scattered = lambda s, targets: self.backend.apply_scattered(u, s, targets)  # noqa: E731
        try:
            return apply_plan(gate_plan, state, product, scratch, scattered)
        except MemoryError as exc:  # cupy's OutOfMemoryError is one too
            raise SimulationError(
                f"out of {self.device.kind} memory at operation {position} of {len(prepared.circuit.gates)} "
                f"({' '.join(str(exc).split()) or type(exc).__name__}); the run stopped and its half-updated "
                "state is discarded (an initial_state passed in is unchanged); use fewer qubits or a smaller "
                "workspace_bytes") from exc

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
        timer = _GateTimer(self.device)
        memory = _PeakMemory(self.device)
        gate_info, gate_flops = [], []
        bar = tqdm(total=len(circuit.gates), unit="gate", disable=self._progress_disabled(), leave=False)
        if own_run:
            self.backend.start_run()
        try:
            for position, (gate, gate_plan) in enumerate(zip(circuit.gates, prepared.plan["plans"])):
                if trajectory is not None and trajectory.handles(gate, state):
                    bar.update(1)
                    continue
                timer.start()
                state, scratch, layout = self.apply_gate(prepared, position, state, scratch)
                timer.stop()
                memory.sample()
                gate_info.append(dict(self.backend.last_call_info, targets=list(gate.targets), layout=layout))
                gate_flops.append(8.0 * (1 << circuit.n_qubits) * gate_plan.k)
                bar.update(1)
        finally:
            bar.close()
            self.device.synchronize()
            if own_run:
                self.backend.finish_run()
        return Result(
            n_qubits=circuit.n_qubits, state=state, backend=self.backend.name, device=self.device.name(),
            gate_times_s=timer.elapsed(), gate_info=gate_info, gate_flops=gate_flops,
            peak_memory_bytes=memory.peak(), memory_measure=memory.measure,
            backend_options=self.backend.options, backend_statistics=self.backend.statistics(),
            prepare_time_s=prepared.prepare_time_s if own_run else 0.0,
            copy_bandwidth_Bps=self.device.copy_bandwidth(),
            trajectory=trajectory.record() if trajectory is not None else None,
            implementation=self.backend.implementation(self.device.on_gpu),
        )

    def _progress_disabled(self):
        progress = self.options.progress
        return None if progress is None else not progress

    def _warm_up(self, plans, matrices) -> float:
        """Keep kernel compilation, library handle creation and per-gate host work out of the
        timed gates: every gate's shape (K and stride class) runs once on a small random block
        with the circuit's own gate, and the backend prepares every gate. Returns the seconds
        spent preparing (reported beside the gate times)."""
        xp = self.device.xp
        rng = np.random.default_rng(0)
        shapes = {}
        for p, u in zip(plans, matrices):
            if p is None:
                continue
            stride = p.view_shape[2] if p.contiguous else 1 << p.targets[0]  # scattered: the run before the targets
            shapes.setdefault((p.k, _stride_class(stride)), u if u is not None else xp.asarray(p.matrix))
        for (k, n_right), u in sorted(shapes.items(), key=lambda item: item[0]):
            block = rng.standard_normal((2, k, n_right)) + 1j * rng.standard_normal((2, k, n_right))
            self.backend.warm_up(u, xp.asarray(block))
        started = time.perf_counter()
        for u in matrices:
            if u is not None:
                self.backend.prepare(u)
        prepare_seconds = time.perf_counter() - started
        self.device.synchronize()
        self.backend.reset_statistics()
        return prepare_seconds


def _stride_class(n_right: int) -> int:
    return min(n_right, STRIDE_CLASS_LIMIT)


class _GateTimer:
    """Per-gate wall time: CUDA events on the GPU (read once at the end), perf_counter on the CPU."""

    def __init__(self, device):
        self.device = device
        self.marks = []

    def start(self):
        self.marks.append([self._mark(), None])

    def stop(self):
        self.marks[-1][1] = self._mark()

    def _mark(self):
        if self.device.on_gpu:
            event = self.device.xp.cuda.Event()
            event.record()
            return event
        return time.perf_counter()

    def elapsed(self) -> list:
        if not self.device.on_gpu:
            return [b - a for a, b in self.marks]
        self.device.synchronize()
        cp = self.device.xp
        return [cp.cuda.get_elapsed_time(a, b) / 1e3 for a, b in self.marks]


class _PeakMemory:
    def __init__(self, device):
        self.device = device
        self.measure = "cupy memory pool (bytes held)" if device.on_gpu else "process peak RSS"
        self._peak = 0
        self.sample()

    def sample(self):
        if self.device.on_gpu:
            self._peak = max(self._peak, self.device.xp.get_default_memory_pool().total_bytes())
        else:
            self._peak = max(self._peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)

    def peak(self) -> int:
        return int(self._peak)
