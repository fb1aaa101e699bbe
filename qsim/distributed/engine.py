"""The distributed engine: one rank's part of a circuit run on a state split over 2^g ranks.

Each rank holds 2^(N-g) amplitudes (qsim.distributed.layout). The schedule
(qsim.distributed.schedule) interleaves the circuit's gates with exchanges of global and local
qubits; a gate runs on the rank's slice exactly as the single-device engine runs it on a whole
state (qsim.apply.apply_plan and the backend's apply_batched, on the gate's physical bits), and
an exchange is an all-to-all through the communicator (qsim.distributed.exchange). The
single-device Simulator is used as is for the backend and the device, and its run loop
(qsim.run_loop) runs the rank's steps, the exchanges plugged in as Actions.

    from qsim.distributed import DistributedSimulator, run_simulated
    result = DistributedSimulator(comm, backend="int8-9").run(circuit)      # on every rank
    states = run_simulated(4, lambda comm: DistributedSimulator(comm, device="cpu")
                           .run(circuit).state_vector())                   # 4 ranks, one process
"""
import numpy as np
from tqdm.auto import tqdm

from circuits import Circuit, CircuitError, Gate
from gemm_backend.base import merge_call_infos

from ..apply import plan_gate
from ..errors import SimulationError
from ..reference import apply_reference_gate, reference_bytes
from ..run_loop import GATE, Action, GateStep, RunLoop, prepared_matrices, warm_up
from ..simulator import BYTES_PER_AMPLITUDE, Simulator, transposed_copy_bytes, wants_spare_buffer
from ..state import MEMORY_FRACTION, initial_state_vector
from .communicator import SimulatedCommunicator
from .exchange import DEFAULT_EXCHANGE_BYTES, Exchanger, buffer_amplitudes
from .layout import global_qubit_count
from .memory import RankNeeds, plan_memory
from .result import DistributedResult
from .schedule import Exchange, plan_schedule

REFERENCES = (None, "dd")
DD_WORKSPACE_BYTES = 1 << 30


class DistributedSimulator:
    """Runs circuits on the state split over the ranks of `comm` (call run() on every rank).

    comm: a Communicator (qsim.distributed.communicator / .nccl); None for a single rank.
    backend, device, progress, out_of_place, backend_options: as for qsim.Simulator, per rank
        (progress is shown on rank 0 only).
    exchange_bytes: memory of the two exchange buffers together (larger means fewer, larger
        messages per exchange).
    memory_fraction: share of a device's free memory a rank may plan to use.
    """

    def __init__(self, comm=None, backend: str = "cublas", device: str = "auto", *, progress=None,
                 out_of_place="auto", exchange_bytes: int = DEFAULT_EXCHANGE_BYTES,
                 memory_fraction: float = MEMORY_FRACTION, **backend_options):
        self.comm = SimulatedCommunicator.single() if comm is None else comm
        self.n_global = global_qubit_count(self.comm.world_size)
        if out_of_place not in ("auto", True, False):
            raise SimulationError(f"out_of_place must be 'auto', True or False, got {out_of_place!r}")
        if not 0 < memory_fraction <= 1:
            raise SimulationError(f"memory_fraction must be in (0, 1], got {memory_fraction!r}")
        buffer_amplitudes(exchange_bytes, 1)  # checks the value
        self._local = Simulator(backend, device, progress=False, out_of_place=out_of_place, **backend_options)
        self.backend, self.device = self._local.backend, self._local.device
        if self.comm.needs_gpu and not self.device.on_gpu:
            raise SimulationError(f"{type(self.comm).__name__} moves GPU memory; use device 'gpu' or 'auto'")
        self.progress = progress
        self.out_of_place = out_of_place
        self.exchange_bytes = int(exchange_bytes)
        self.memory_fraction = memory_fraction

    # -- run --------------------------------------------------------------------------------
    def run(self, circuit: Circuit, initial_state=None, *, reference=None) -> DistributedResult:
        """Simulate `circuit` from |0...0> (or from `initial_state`, the whole (2^N,) unit vector,
        given on every rank). reference="dd" also runs the double-double reference with the same
        schedule and sets result.accuracy (qsim.accuracy metrics of the whole state)."""
        n_local = self._check(circuit, reference)
        schedule = plan_schedule([gate.targets for gate in circuit.gates], circuit.n_qubits, self.n_global)
        plans = [plan_gate(n_local, step.physical_targets, circuit.gates[step.gate_index].matrix)
                 for step in schedule.gate_steps()]
        amplitudes = max(buffer_amplitudes(self.exchange_bytes, n_local), self.comm.world_size)
        memory = self._plan_memory(n_local, plans, schedule, amplitudes, reference)
        state = self._initial_slice(circuit.n_qubits, n_local, initial_state)
        exchanger = Exchanger(self.comm, n_local, self.device.xp, amplitudes) if schedule.exchanges else None
        matrices = prepared_matrices(plans, self.device.xp)
        warm_up(self.backend, self.device, plans, matrices)
        if exchanger is not None:
            exchanger.warm_up()
        loop = RunLoop(self.backend, self.device, self._progress_bar(len(plans)), len(circuit.gates))
        scratch = self.device.xp.empty_like(state) if memory["spare_buffer"] else None
        state = loop.run(self._steps(schedule, plans, matrices, exchanger), state, scratch)
        result = self._result(circuit, schedule, state, loop, exchanger, memory)
        if reference == "dd":
            result.accuracy = self._reference_accuracy(circuit, schedule, plans, exchanger, state, initial_state)
        return result

    def _check(self, circuit, reference) -> int:
        """The number of local qubits, after checking the circuit and the options."""
        if not isinstance(circuit, Circuit):
            raise CircuitError(f"run() takes a circuits.Circuit, got {type(circuit).__name__}")
        if reference not in REFERENCES:
            raise SimulationError(f"reference must be None or 'dd', got {reference!r}")
        for position, operation in enumerate(circuit.gates):
            if not isinstance(operation, Gate):
                raise SimulationError(
                    f"operation {position} ({type(operation).__name__}) is not a gate: the distributed engine runs "
                    "circuits of gates only (no mid-circuit measurement or reset)")
        n_local = circuit.n_qubits - self.n_global
        if n_local < 1:
            raise SimulationError(
                f"{circuit.n_qubits} qubits cannot be split over {self.comm.world_size} ranks: {self.n_global} global "
                f"qubits leave none on a rank; use at most {1 << (circuit.n_qubits - 1)} ranks")
        return n_local

    def _plan_memory(self, n_local, plans, schedule, amplitudes, reference) -> dict:
        slice_bytes = BYTES_PER_AMPLITUDE << n_local
        on_gpu = self.device.on_gpu
        needs = RankNeeds(
            slice_bytes=slice_bytes,
            transpose_bytes=transposed_copy_bytes(self.backend, plans, n_local, on_gpu),
            workspace_bytes=self.backend.workspace.reserved(),
            exchange_bytes=2 * BYTES_PER_AMPLITUDE * amplitudes if schedule.exchanges else 0,
            reference_bytes=reference_bytes(n_local, plans, DD_WORKSPACE_BYTES) if reference else 0,
        )
        wants_spare = wants_spare_buffer(self.backend, plans, on_gpu)
        return plan_memory(self.comm, self.device, needs, self.out_of_place, self.memory_fraction, wants_spare)

    def _initial_slice(self, n_qubits: int, n_local: int, initial_state):
        xp = self.device.xp
        if initial_state is None:
            state = xp.zeros(1 << n_local, dtype=xp.complex128)
            if self.comm.rank == 0:
                state[0] = 1.0
            return state
        whole = initial_state_vector(n_qubits, np, initial_state)
        return xp.asarray(whole[self.comm.rank << n_local:(self.comm.rank + 1) << n_local])

    @staticmethod
    def _steps(schedule, plans, matrices, exchanger) -> list:
        """The rank's steps for the run loop: the gates, each on its physical bits, and the exchanges."""
        steps = []
        for step in schedule.steps:
            if isinstance(step, Exchange):
                steps.append(Action("exchange", lambda state, pairs=step.pairs: exchanger.swap_bits([state], pairs)))
            else:
                steps.append(GateStep(step.gate_index, plans[step.gate_index], matrices[step.gate_index]))
        return steps

    def _progress_bar(self, total: int, description: str = None):
        """tqdm on rank 0 (on a terminal unless progress says otherwise); silent elsewhere."""
        hidden = True if self.comm.rank else (None if self.progress is None else not self.progress)
        return tqdm(total=total, unit="gate", desc=description, leave=False, disable=hidden)

    def _result(self, circuit, schedule, state, loop, exchanger, memory) -> DistributedResult:
        """The rank's result, with timings (slowest rank), gate info (merged) and peak memory
        (largest) combined over the ranks."""
        comm = self.comm
        gate_times, gate_info = loop.seconds(GATE), loop.gate_info
        slowest = [float(t) for t in comm.allreduce(gate_times + loop.seconds("exchange"), "max")]
        gate_times, exchange_times = slowest[:len(gate_times)], slowest[len(gate_times):]
        per_rank_info = comm.allgather_object(gate_info)
        merged = [merge_call_infos([infos[i] for infos in per_rank_info]) for i in range(len(gate_info))]
        for info, gate, step in zip(merged, circuit.gates, schedule.gate_steps()):
            info.update(targets=list(gate.targets), physical_targets=list(step.physical_targets))
        exchanges = [{"before_gate": e.before_gate, "pairs": [list(p) for p in e.pairs], "time_s": t,
                      "bytes_sent": exchanger.bytes_per_exchange(e.pairs)}
                     for e, t in zip(schedule.exchanges, exchange_times)]
        return DistributedResult(
            n_qubits=circuit.n_qubits, state=state, backend=self.backend.name, device=self.device.name(),
            gate_times_s=gate_times, gate_info=merged,
            gate_flops=loop.gate_flops(circuit.n_qubits),
            peak_memory_bytes=int(comm.allreduce([loop.memory.peak()], "max")[0]), memory_measure=loop.memory.measure,
            backend_options=self.backend.options, backend_statistics=comm.allgather_object(self.backend.statistics()),
            comm=comm, layout=schedule.final, exchange_times_s=exchange_times, exchanges=exchanges,
            memory_plan=memory, implementation=self.backend.implementation(self.device.on_gpu),
        )

    # -- double-double reference ------------------------------------------------------------
    def _reference_accuracy(self, circuit, schedule, plans, exchanger, state, initial_state) -> dict:
        """Run the circuit in double-double with the same schedule (so the same final layout) and
        compare it with this run's slices."""
        from ..accuracy import accuracy_report

        n_local = circuit.n_qubits - self.n_global
        hi = self._initial_slice(circuit.n_qubits, n_local, initial_state)
        lo = self.device.xp.zeros_like(hi)
        bar = self._progress_bar(len(plans), "dd reference")
        for step in schedule.steps:
            if isinstance(step, Exchange):
                exchanger.swap_bits([hi, lo], step.pairs)
            else:
                apply_reference_gate(plans[step.gate_index], hi, lo, DD_WORKSPACE_BYTES)
                bar.update(1)
        bar.close()
        self.device.synchronize()
        return accuracy_report(state, hi, lo, comm=self.comm)
