"""A Qiskit BackendV2 that runs circuits on this simulator.

    from qsim.qiskit import QsimBackend
    counts = QsimBackend(device="cpu").run(qc, shots=1000, seed_simulator=7).result().get_counts()

Each circuit goes through circuits.from_qiskit, circuits.fuse and qsim.Simulator. A circuit
whose only measurements are final runs once and its measured classical bits are sampled with
qsim.sampling. A dynamic circuit (mid-circuit measurement, reset, if/else) runs one quantum
trajectory per shot (qsim.trajectory; shot i seeded with trajectory_seed(seed, i)) and each shot's
classical bits are that trajectory's. Counts and memory use Qiskit's hex format over all of the
circuit's classical bits (bits never written read 0), so get_counts prints them as Qiskit does.
The target accepts every standard gate, reset, if_else, box and UnitaryGate on any qubits; it
also works under qiskit.primitives.BackendSamplerV2. This module imports qiskit at import time;
nothing else in qsim imports it.
"""
import datetime
import uuid

import numpy as np
from qiskit.circuit import BoxOp, IfElseOp, QuantumCircuit
from qiskit.circuit.library import UnitaryGate, get_standard_gate_name_mapping
from qiskit.providers import BackendV2, JobStatus, JobV1, Options
from qiskit.result import Result as QiskitResult
from qiskit.result.models import ExperimentResult, ExperimentResultData
from qiskit.transpiler import Target

from circuits import CircuitError
from circuits.qiskit_import import from_qiskit_with_clbits

from .errors import SimulationError
from .fusion import AUTO, fuse_for_backend, fusion_setting
from .sampling import sample_outcomes
from .simulator import Simulator
from .trajectory import run_trajectories

_SEED_LIMIT = 2**62  # seeds stay below it so that seed + circuit index fits in an int64


class QsimBackend(BackendV2):
    """Qiskit backend for the GEMM state-vector simulator.

    Run options (defaults can be changed in the constructor or with set_options):
        shots: samples per circuit (>= 1).
        seed_simulator: int seed; circuit i of a run uses seed_simulator + i. None draws a fresh
            seed from the OS, reported in each experiment result as `seed_simulator`.
        backend: GEMM backend registry name ("cublas", "int8-auto", "fp16x2", ...).
        backend_options: dict of that backend's keyword options.
        device: "auto", "cpu" or "gpu".
        fusion_max_qubits: fuse gates into blocks of at most this many qubits; 0 turns fusion off;
            "auto" (the default) takes the size the backend's cost model says is fastest
            (qsim.fusion). Each result's metadata["fusion"] says what was done.
        memory: also return each shot's outcome (hex strings, shot order).
        statevector: also return the final state (numpy complex128, Qiskit's qubit order); for a
            dynamic circuit, that of the last shot's trajectory.
    """

    def __init__(self, **defaults):
        super().__init__(name="qsim", description="GEMM state-vector simulator with emulated FP64 backends",
                         backend_version="0.1.0")
        self.set_options(**defaults)
        self._target = _permissive_target()

    @classmethod
    def _default_options(cls) -> Options:
        return Options(shots=1024, seed_simulator=None, backend="cublas", backend_options=None, device="auto",
                       fusion_max_qubits=AUTO, memory=False, statevector=False)

    def set_options(self, **fields) -> None:
        unknown = sorted(set(fields) - set(self._default_options().__dict__))
        if unknown:
            raise SimulationError(f"QsimBackend has no option {', '.join(unknown)}; "
                                  f"it takes {', '.join(sorted(self._default_options().__dict__))}")
        _check_settings({**self.options.__dict__, **fields})
        super().set_options(**fields)

    @property
    def target(self) -> Target:
        return self._target

    @property
    def max_circuits(self):
        return None

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
        settings = self._settings(options)
        simulator = Simulator(backend=settings["backend"], device=settings["device"], progress=False,
                              **(settings["backend_options"] or {}))
        base_seed = settings["seed_simulator"]
        if base_seed is None:
            base_seed = int(np.random.SeedSequence().entropy % _SEED_LIMIT)
        experiments = [_run_circuit(simulator, qc, settings, base_seed + i) for i, qc in enumerate(circuits)]
        job_id = str(uuid.uuid4())
        result = QiskitResult(backend_name=self.name, backend_version=self.backend_version, job_id=job_id,
                              success=True, results=experiments, status="COMPLETED",
                              date=datetime.datetime.now().isoformat())
        return QsimJob(self, job_id, result)

    def _settings(self, options: dict) -> dict:
        defaults = dict(self.options.__dict__)
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            raise SimulationError(f"QsimBackend.run takes no option {', '.join(unknown)}; "
                                  f"it takes {', '.join(sorted(defaults))}")
        settings = {**defaults, **options}
        _check_settings(settings)
        return settings


def _check_settings(settings: dict) -> None:
    """Refuse run options of the wrong type or range (a SimulationError naming the option)."""
    _check_int(settings["shots"], "shots", 1)
    try:
        fusion_setting(settings["fusion_max_qubits"], "fusion_max_qubits")
    except CircuitError as exc:
        raise SimulationError(str(exc)) from None
    if settings["seed_simulator"] is not None:
        _check_int(settings["seed_simulator"], "seed_simulator", 0)
        if settings["seed_simulator"] >= _SEED_LIMIT:
            raise SimulationError(f"seed_simulator must be below 2^62, got {settings['seed_simulator']}")
    if settings["backend_options"] is not None and not isinstance(settings["backend_options"], dict):
        raise SimulationError(f"backend_options must be a dict, got {type(settings['backend_options']).__name__}")
    for flag in ("memory", "statevector"):
        if not isinstance(settings[flag], (bool, np.bool_)):
            raise SimulationError(f"{flag} must be True or False, got {settings[flag]!r}")


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
    """Every standard gate (measure and reset included), if_else, box and UnitaryGate of any
    width, ideal on all qubits. num_qubits=None lets the transpiler keep the circuit's own width."""
    target = Target(description="qsim: standard gates, unitaries and if/else on any qubits", num_qubits=None)
    for name, operation in get_standard_gate_name_mapping().items():
        target.add_instruction(operation, properties=None, name=name)
    target.add_instruction(UnitaryGate, name="unitary")
    target.add_instruction(IfElseOp, name="if_else")
    target.add_instruction(BoxOp, name="box")
    return target


def _run_circuit(simulator: Simulator, qc: QuantumCircuit, settings: dict, seed: int) -> ExperimentResult:
    circuit, clbits = from_qiskit_with_clbits(qc)
    fused, fusion = fuse_for_backend(circuit, settings["fusion_max_qubits"], simulator.backend,
                                     simulator.device.on_gpu)
    shots = int(settings["shots"])
    if circuit.is_dynamic:
        records, run = run_trajectories(simulator, fused, shots, seed, progress=False)
        memory = np.array([record["clbits_hex"] for record in records], dtype=object)
        time_taken = sum(record["time_s"] for record in records)
    else:
        run = simulator.run(fused)
        memory = _clbit_memory(run.state, circuit.measured, clbits, shots, seed) if qc.num_clbits else None
        time_taken = run.total_time_s
    data = {}
    if qc.num_clbits:
        values, counts = np.unique(memory, return_counts=True)
        data["counts"] = {str(value): int(count) for value, count in zip(values, counts)}
        if settings["memory"]:
            data["memory"] = memory.tolist()
    if settings["statevector"]:
        data["statevector"] = run.state_vector()
    header = {"name": qc.name, "memory_slots": qc.num_clbits, "n_qubits": qc.num_qubits,
              "metadata": qc.metadata}
    if sum(register.size for register in qc.cregs) == qc.num_clbits:
        header["creg_sizes"] = [[register.name, register.size] for register in qc.cregs]
    return ExperimentResult(
        shots=shots, success=True, data=ExperimentResultData(**data), header=header, status="DONE",
        seed_simulator=seed, time_taken=time_taken,
        metadata={"gates": len(circuit), "fused_gates": len(fused), "fusion": fusion, "backend": run.backend,
                  "device": run.device, "backend_statistics": run.backend_statistics,
                  "trajectories": shots if circuit.is_dynamic else 0},
    )


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


def _check_int(value, what: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SimulationError(f"{what} must be an integer >= {minimum}, got {value!r}")
