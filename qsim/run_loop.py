"""The run loop shared by the single-device Simulator and each rank of the distributed engine.

A run is a sequence of steps on one device: GateSteps, which the backend applies to the state
(qsim.apply.apply_plan) with a CUDA-event (GPU) or perf_counter (CPU) time each, and Actions, work
of the engine's own on the state in place (a rank's exchange of qubits, timed on their own
timer; a trajectory's measurement is a GateStep's skip). Before it, warm_up keeps kernel
compilation and per-gate host work out of the timed gates.
"""
import resource
import time
from dataclasses import dataclass, field

import numpy as np

from .apply import apply_plan
from .errors import SimulationError
from .gate_staging import GateStaging
from .gathered_layout import apply_gathered, in_standard_layout, standard_layout

GATE = "gate"  # the timer of the gates
GATHERED = "gathered"  # gate_info's layout of a gate run through qsim.gathered_layout
LAYOUT_COPY = "layout copy"  # the timer of the copies back to the standard layout (gathered runs)
# Gates up to this size are uploaded once before the run (and prepared by the backend then); larger
# ones are uploaded and prepared one step ahead on the GPU (gate_staging.py), when their step comes on the CPU.
PREPARED_MAX_DIM = 64
# Kernels choose their variant by the stride R of the (L, K, R) view; a warm-up block of stride
# min(R, STRIDE_CLASS_LIMIT) takes the same variant (and R = 2^q keeps it a power of two).
STRIDE_CLASS_LIMIT = 64


@dataclass(frozen=True)
class GateStep:
    """One gate. position: its operation's index in the circuit (for messages); plan: its
    qsim.apply.GatePlan; matrix: the gate on the device (prepared_matrices), or None to upload
    plan.matrix when it runs; info: entries its gate_info adds to the backend's last_call_info;
    skip: skip(state) True when the gate must not be applied (a trajectory took care of it)."""

    position: int
    plan: object
    matrix: object = None
    info: dict = field(default_factory=dict)
    skip: object = None


@dataclass(frozen=True)
class Action:
    """Work of the engine on the state, in place: apply(state), timed on the timer `kind`."""

    kind: str
    apply: object


def prepared_matrices(plans, xp) -> list:
    """The matrices of the plans (None entries stay None) up to PREPARED_MAX_DIM on the device."""
    return [xp.asarray(p.matrix) if p is not None and p.k <= PREPARED_MAX_DIM else None for p in plans]


def warm_up(backend, device, plans, matrices) -> float:
    """Keep kernel compilation, library handle creation and per-gate host work out of the
    timed gates: every gate's shape (K and stride class) runs once on a small random block
    with the circuit's own gate, and the backend prepares every gate. Returns the seconds
    spent preparing (reported beside the gate times)."""
    xp = device.xp
    rng = np.random.default_rng(0)
    shapes = {}
    for p, u in zip(plans, matrices):
        if p is None:
            continue
        stride = p.view_shape[2] if p.contiguous else 1 << p.targets[0]  # scattered: the run before the targets
        shapes.setdefault((p.k, min(stride, STRIDE_CLASS_LIMIT)), u if u is not None else xp.asarray(p.matrix))
    for (k, n_right), u in sorted(shapes.items(), key=lambda item: item[0]):
        block = rng.standard_normal((2, k, n_right)) + 1j * rng.standard_normal((2, k, n_right))
        backend.warm_up(u, xp.asarray(block))
    started = time.perf_counter()
    for u in matrices:
        if u is not None:
            backend.prepare(u)
    prepare_seconds = time.perf_counter() - started
    device.synchronize()
    backend.reset_statistics()
    return prepare_seconds


class RunLoop:
    """Runs steps on one device through the backend. After run(): seconds(kind) per timed step
    (GATE for the gates), gate_info and applied_plans (one per applied gate), memory (PeakMemory).
    gathered: run the gates through qsim.gathered_layout where run() gets a spare buffer (the
    backend's GemmBackend.gathers_layout); the state returned and the state every Action and skip
    sees are in the standard layout."""

    def __init__(self, backend, device, progress_bar, operations: int, backend_run: bool = True,
                 gathered: bool = False):
        self.backend, self.device, self.bar = backend, device, progress_bar
        self.backend_run = backend_run  # False inside Simulator.prepared, which holds the backend's run
        self.gathered = gathered
        self.operations = operations  # for messages: "operation p of <operations>"
        self.timers = {GATE: StepTimer(device)}
        self.gate_info = []
        self.applied_plans = []
        self.memory = PeakMemory(device)

    def run(self, steps, state, scratch):
        """The state after every step (scratch: a spare state buffer or None). On the GPU the next
        gate uploaded per step is staged while the device runs the current one (GateStaging)."""
        steps = list(steps)
        first_gate, following = _upcoming_gates(steps)
        layout = standard_layout(state.size.bit_length() - 1) if self.gathered and scratch is not None else None
        staging = GateStaging(self.backend, self.device)
        if self.backend_run:
            self.backend.start_run()
        try:
            staging.stage(first_gate)
            for step, next_gate in zip(steps, following):
                if layout is not None and (isinstance(step, Action) or step.skip is not None):
                    state, scratch, layout = self._standard(state, scratch, layout)
                if isinstance(step, Action):
                    self.time(step.kind, step.apply, state)
                    continue
                if step.skip is None or not step.skip(state):
                    state, scratch, layout = self._apply_gate(step, state, scratch, layout, staging)
                staging.stage(next_gate)  # while the device runs this gate
                self.bar.update(1)
            if layout is not None:
                state, scratch, layout = self._standard(state, scratch, layout)
        finally:
            self.bar.close()
            self.device.synchronize()
            staging.close()
            if self.backend_run:
                self.backend.finish_run()
        return state

    def gate_flops(self, n_qubits: int) -> list:
        """Real flops of each applied gate on a state of n_qubits (8 per complex multiply-add)."""
        return [8.0 * (1 << n_qubits) * plan.k for plan in self.applied_plans]

    def seconds(self, kind: str) -> list:
        """Seconds of each step timed on timer `kind`, in order (none: [])."""
        return self.timers[kind].elapsed() if kind in self.timers else []

    def time(self, kind: str, function, *args):
        timer = self.timers.setdefault(kind, StepTimer(self.device))
        timer.start()
        value = function(*args)
        timer.stop()
        return value

    def _apply_gate(self, step: GateStep, state, scratch, layout, staging: GateStaging):
        """(state, scratch, layout) after the step's gate; layout None: the standard layout, no
        gathering. The gate's matrix: the step's, else the one staged for it, else uploaded now."""
        staged = staging.take(step)
        matrix = step.matrix if staged is None else staged
        if layout is None:
            state, scratch, route = self.time(GATE, apply_gate_plan, self.backend, self.device, step.plan,
                                              matrix, state, scratch, step.position, self.operations)
        else:
            state, scratch, layout = self.time(GATE, apply_gate_gathered, self.backend, self.device, step.plan,
                                               matrix, state, scratch, layout, step.position, self.operations)
            route = GATHERED
        if staged is not None:
            staging.done_with(staged)
        self.memory.sample()
        self.applied_plans.append(step.plan)
        self.gate_info.append(dict(self.backend.last_call_info, **step.info, layout=route))
        return state, scratch, layout

    def _standard(self, state, scratch, layout):
        """The state back in the standard layout, timed on LAYOUT_COPY."""
        state, scratch = self.time(LAYOUT_COPY, in_standard_layout, state, scratch, layout)
        return state, scratch, standard_layout(len(layout))


def _upcoming_gates(steps: list) -> tuple:
    """(the first GateStep, per step the first GateStep after it), None for none."""
    following, upcoming = [], None
    for step in reversed(steps):
        following.append(upcoming)
        if isinstance(step, GateStep):
            upcoming = step
    return upcoming, following[::-1]


def apply_gate_plan(backend, device, plan, matrix, state, scratch, position: int, operations: int) -> tuple:
    """(state, scratch, layout) after the gate of `plan` (qsim.apply.GatePlan; matrix: the gate on
    the device, or None to upload plan.matrix) through the backend; running out of device memory
    is a SimulationError naming operation `position` of `operations`."""
    u = device.xp.asarray(plan.matrix) if matrix is None else matrix
    product = lambda x, out: backend.apply_batched(u, x, out)  # noqa: E731
    scattered = lambda s, targets: backend.apply_scattered(u, s, targets)  # noqa: E731
    try:
        return apply_plan(plan, state, product, scratch, scattered)
    except MemoryError as exc:  # cupy's OutOfMemoryError is one too
        raise _out_of_memory(device, position, operations, exc) from exc


def apply_gate_gathered(backend, device, plan, matrix, state, spare, layout, position: int, operations: int) -> tuple:
    """apply_gate_plan through qsim.gathered_layout: (state, spare, layout) after the gate, the
    state held in `layout` before it."""
    u = device.xp.asarray(plan.matrix) if matrix is None else matrix
    try:
        return apply_gathered(lambda x, out: backend.apply_batched(u, x, out), plan, state, spare, layout)
    except MemoryError as exc:
        raise _out_of_memory(device, position, operations, exc) from exc


def _out_of_memory(device, position: int, operations: int, exc) -> SimulationError:
    return SimulationError(
        f"out of {device.kind} memory at operation {position} of {operations} "
        f"({' '.join(str(exc).split()) or type(exc).__name__}); the run stopped and its half-updated "
        "state is discarded (an initial_state passed in is unchanged); use fewer qubits or a smaller "
        "workspace_bytes")


class StepTimer:
    """Per-step wall time: CUDA events on the GPU (read once at the end), perf_counter on the CPU."""

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
        """Seconds of each step, in order."""
        if not self.device.on_gpu:
            return [b - a for a, b in self.marks]
        self.device.synchronize()
        cp = self.device.xp
        return [cp.cuda.get_elapsed_time(a, b) / 1e3 for a, b in self.marks]


class PeakMemory:
    """The largest memory seen at sample(): bytes held by cupy's pool on the GPU, the process's
    peak resident set on the CPU (measure names which)."""

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
