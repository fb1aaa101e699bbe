"""A Qiskit BackendV2 that runs circuits on this simulator.

    from qsim.qiskit import QsimBackend
    counts = QsimBackend(device="cpu").run(qc, shots=1000, seed_simulator=7).result().get_counts()

Each circuit goes through circuits.from_qiskit, circuits.fuse and qsim.Simulator. A circuit
whose only measurements are final runs once and its measured classical bits are sampled with
qsim.sampling. A dynamic circuit (mid-circuit measurement, reset, if/else) or one with Aer's save
instructions runs by shot branching (qsim.branching: each measurement outcome continues once with
its share of the shots; a branch's gates between measurements are fused again with its
conditions resolved, qsim.gate_runs). Saved values come back under their labels in the types Aer uses
(result.data()[label], result.get_statevector()); without qiskit-aer, this module adds the
save_* methods to QuantumCircuit (qsim.qiskit_save). Run options, Aer's spellings included, are
listed in qsim.qiskit_options. Counts and memory use Qiskit's hex format over all of the
circuit's classical bits (bits never written read 0), so get_counts prints them as Qiskit does.
The target accepts every standard gate, reset, control flow (while loops unrolled to
max_while_iterations per shot), box, UnitaryGate,
initialize and the save instructions on any qubits; it also works under
qiskit.primitives.BackendSamplerV2. This module imports qiskit at import time; nothing else in
qsim imports it.
"""
import datetime
import time
import uuid

import numpy as np
from qiskit.circuit import BoxOp, ForLoopOp, IfElseOp, QuantumCircuit, SwitchCaseOp, WhileLoopOp
from qiskit.circuit.library import Initialize, StatePreparation, UnitaryGate, get_standard_gate_name_mapping
from qiskit.providers import BackendV2, JobStatus, JobV1, Options
from qiskit.quantum_info import Statevector
from qiskit.result import Result as QiskitResult
from qiskit.result.models import ExperimentResult, ExperimentResultData
from qiskit.transpiler import Target

from circuits.qiskit_import import from_qiskit_with_clbits

from .branching import run_branches
from .errors import SimulationError
from .fusion import fuse_for_backend
from .qiskit_options import SEED_LIMIT, bound_circuits, checked_settings, default_options, refuse_unknown
from .qiskit_save import SAVE_INSTRUCTION_NAMES, SaveInstruction, install_circuit_methods, qiskit_value
from .sampling import sample_outcomes
from .simulator import BYTES_PER_AMPLITUDE, Simulator
from .state import MEMORY_FRACTION

install_circuit_methods()


class QsimBackend(BackendV2):
    """Qiskit backend for the GEMM state-vector simulator.

    Options (defaults can be changed in the constructor or with set_options; the table is in
    qsim.qiskit_options): shots, seed_simulator (circuit i of a run uses seed_simulator + i),
    backend (GEMM registry name), backend_options, device, fusion_max_qubits, memory, statevector
    (the final state as a qiskit Statevector), method, precision, max_parallel_threads,
    max_branch_states, max_while_iterations; run also takes parameter_binds. Each result's metadata says what ran
    (fusion, backend, device, branches of a dynamic circuit).
    """

    def __init__(self, **defaults):
        super().__init__(name="qsim", description="GEMM state-vector simulator with emulated FP64 backends",
                         backend_version="0.1.0")
        self.set_options(**defaults)
        self._target = _permissive_target()

    @classmethod
    def _default_options(cls) -> Options:
        return Options(**default_options())

    def set_options(self, **fields) -> None:
        refuse_unknown(fields, default_options(), "QsimBackend")
        checked_settings({**self.options.__dict__, **fields})
        super().set_options(**fields)

    @property
    def target(self) -> Target:
        return self._target

    @property
    def max_circuits(self):
        return None

    @property
    def num_qubits(self) -> int:
        """The most qubits whose state fits in the device's free memory now (16 bytes per
        amplitude, the run's memory fraction); the transpiler target keeps any width."""
        simulator = Simulator(device=self.options.device, progress=False)
        budget = simulator.device.free_bytes() * MEMORY_FRACTION
        return max(1, int(budget // BYTES_PER_AMPLITUDE).bit_length() - 1)

    def run(self, run_input, **options) -> "QsimJob":
        """Simulate a QuantumCircuit or a list of them; returns a finished QsimJob."""
        if isinstance(run_input, QuantumCircuit):
            circuits = [run_input]
        elif isinstance(run_input, (list, tuple)):
            circuits = list(run_input)
        else:
            raise SimulationError(f"run takes a QuantumCircuit or a list of them, got {type(run_input).__name__}")
        if not circuits:
            raise SimulationError("run got an empty list of circuits; give at least one QuantumCircuit")
        for position, qc in enumerate(circuits):
            if not isinstance(qc, QuantumCircuit):
                raise SimulationError(f"run input {position} is a {type(qc).__name__}, not a QuantumCircuit")
        started = time.perf_counter()
        binds = options.pop("parameter_binds", None)
        settings = self._settings(options)
        experiments = bound_circuits(circuits, binds)
        simulator = Simulator(backend=settings["backend"], device=settings["device"], progress=False,
                              **(settings["backend_options"] or {}))
        base_seed = settings["seed_simulator"]
        if base_seed is None:
            base_seed = int(np.random.SeedSequence().entropy % SEED_LIMIT)
        results = [_run_circuit(simulator, qc, settings, base_seed + i) for i, (_, qc) in enumerate(experiments)]
        job_id = str(uuid.uuid4())
        result = QiskitResult(backend_name=self.name, backend_version=self.backend_version, job_id=job_id,
                              success=True, results=results, status="COMPLETED",
                              date=datetime.datetime.now().isoformat(), time_taken=time.perf_counter() - started)
        return QsimJob(self, job_id, result)

    def _settings(self, options: dict) -> dict:
        defaults = dict(self.options.__dict__)
        refuse_unknown(options, list(defaults) + ["parameter_binds"], "QsimBackend.run")
        return checked_settings({**defaults, **options})


class QsimJob(JobV1):
    """A job that ran synchronously inside QsimBackend.run."""

    _async = False

    def __init__(self, backend, job_id: str, result):
        super().__init__(backend, job_id)
        self._result = result

    def submit(self):
        raise SimulationError("QsimJob runs in QsimBackend.run; there is nothing to submit")

    def result(self, timeout=None):
        return self._result

    def status(self):
        return JobStatus.DONE


def _permissive_target() -> Target:
    """Every standard gate (measure and reset included), if_else, for_loop, while_loop, switch_case, box,
    UnitaryGate, initialize, state preparation and Aer's save instructions of any width, ideal on
    all qubits (so transpile keeps them). num_qubits=None lets the transpiler keep the circuit's
    own width."""
    target = Target(description="qsim: standard gates, unitaries, control flow and saves on any qubits",
                    num_qubits=None)
    for name, operation in get_standard_gate_name_mapping().items():
        target.add_instruction(operation, properties=None, name=name)
    for operation, name in ((UnitaryGate, "unitary"), (IfElseOp, "if_else"), (ForLoopOp, "for_loop"),
                            (WhileLoopOp, "while_loop"), (SwitchCaseOp, "switch_case"), (BoxOp, "box"), (Initialize, "initialize"),
                            (StatePreparation, "state_preparation")):
        target.add_instruction(operation, name=name)
    for name in SAVE_INSTRUCTION_NAMES:
        target.add_instruction(SaveInstruction, name=name)
    return target


def _run_circuit(simulator: Simulator, qc: QuantumCircuit, settings: dict, seed: int) -> ExperimentResult:
    """One experiment; time_taken is its wall time (import, fusion, planning, run, sampling)."""
    started = time.perf_counter()
    circuit, clbits = from_qiskit_with_clbits(qc, max_while_iterations=settings["max_while_iterations"])
    fused, fusion = fuse_for_backend(circuit, settings["fusion_max_qubits"], simulator.backend,
                                     simulator.device.on_gpu)
    shots = int(settings["shots"])
    data, metadata = {}, {}
    if circuit.is_dynamic:
        def fuse_run(gates):  # a branch's gates between measurements, fused as the whole circuit was
            return fuse_for_backend(gates, settings["fusion_max_qubits"], simulator.backend, simulator.device.on_gpu)[0]

        branched = run_branches(simulator, fused, shots, seed, max_states=settings["max_branch_states"],
                                keep_final_state=settings["statevector"], fuse=fuse_run)
        memory = np.array([hex(bits) for bits in branched.memory], dtype=object)
        final_state, run = branched.final_state, None
        data.update({label: qiskit_value(_kind(fused, label), value, qc.num_qubits)
                     for label, value in branched.saves.items() if value is not None})
        metadata.update(branches=branched.branches, branch_splits=branched.splits, branch_replays=branched.replays)
    else:
        run = simulator.run(fused)
        memory = _clbit_memory(run.state, circuit.measured, clbits, shots, seed) if qc.num_clbits else None
        final_state = run.state_vector() if settings["statevector"] else None
    if qc.num_clbits:
        values, counts = np.unique(memory, return_counts=True)
        data["counts"] = {str(value): int(count) for value, count in zip(values, counts)}
        if settings["memory"]:
            data["memory"] = memory.tolist()
    if settings["statevector"]:
        data["statevector"] = Statevector(final_state, dims=(2,) * qc.num_qubits)
    header = {"name": qc.name, "memory_slots": qc.num_clbits, "n_qubits": qc.num_qubits,
              "metadata": qc.metadata}
    if sum(register.size for register in qc.cregs) == qc.num_clbits:
        header["creg_sizes"] = [[register.name, register.size] for register in qc.cregs]
    return ExperimentResult(
        shots=shots, success=True, data=ExperimentResultData(**data), header=header, status="DONE",
        seed_simulator=seed, time_taken=time.perf_counter() - started,
        metadata={"gates": len(circuit), "fused_gates": len(fused), "fusion": fusion, "backend": simulator.backend.name,
                  "device": simulator.device.name(), "backend_statistics": simulator.backend.statistics(),
                  "gate_time_s": run.total_time_s if run is not None else None, "method": "statevector", **metadata},
    )


def _kind(circuit, label: str) -> str:
    return next(op.kind for op in circuit.gates if getattr(op, "label", None) == label)


def _clbit_memory(state, measured: tuple, clbits: tuple, shots: int, seed: int) -> np.ndarray:
    """(shots,) hex strings over all classical bits: outcome bit j goes to classical bit clbits[j]."""
    if not measured:
        return np.full(shots, "0x0", dtype=object)
    outcomes = sample_outcomes(state, measured, shots, seed)
    values, inverse = np.unique(outcomes, return_inverse=True)
    # Python ints: classical bit indices may exceed 63.
    as_hex = np.array([hex(sum(((int(v) >> j) & 1) << clbit for j, clbit in enumerate(clbits))) for v in values],
                      dtype=object)
    return as_hex[inverse.reshape(-1)]
