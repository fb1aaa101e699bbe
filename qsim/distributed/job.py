"""`qsim run --gpus P`: what every rank does, and how the ranks are started.

On the GPU each rank is a process of its own (qsim.distributed.launcher); with --device cpu the
ranks are simulated threads of this process (qsim.distributed.communicator), for testing.
"""
from dataclasses import dataclass, field, replace

from circuits import Circuit

from .communicator import run_simulated
from .engine import DistributedSimulator
from .launcher import launch


@dataclass(frozen=True)
class RunRequest:
    """Everything a rank needs to run one circuit and report on it (picklable)."""

    circuit: Circuit
    source: dict
    backend: str = "cublas"
    device: str = "auto"
    backend_options: dict = field(default_factory=dict)
    reference: str = None
    shots: int = None
    seed: int = 0
    progress: bool = None


def run_rank(comm, request: RunRequest) -> dict:
    """One rank's run; every rank returns the same report (the CLI's JSON)."""
    simulator = DistributedSimulator(comm, request.backend, request.device, progress=request.progress,
                                     **request.backend_options)
    result = simulator.run(request.circuit, reference=request.reference)
    report = {"circuit": request.source, **result.to_dict()}
    if request.shots:
        measured = list(request.circuit.measured) or list(range(request.circuit.n_qubits))
        report["counts"] = result.sample_counts(measured, request.shots, request.seed)
    return report


def run_distributed(request: RunRequest, world_size: int, timeout_s: float = None) -> dict:
    """Rank 0's report of a run over world_size ranks: simulated ranks for device 'cpu', else
    one process per GPU."""
    if request.device == "cpu":
        return run_simulated(world_size, run_rank, request)[0]
    return launch(world_size, run_rank, (replace(request, device="gpu"),), timeout_s=timeout_s)
