"""A state vector split over several GPUs (or simulated ranks): layout, schedule, exchanges,
communicators, the distributed engine and the multi-process launcher.

    from qsim.distributed import DistributedSimulator, run_simulated
    result = DistributedSimulator(comm, backend="cublas").run(circuit)   # on every rank of a job
    qsim run --qubits 34 --gpus 4 ...                                     # one process per GPU
"""
from .communicator import Communicator, PeerLostError, SimulatedCommunicator, run_simulated
from .engine import DistributedSimulator
from .layout import Layout, global_qubit_count
from .result import DistributedResult
from .schedule import Exchange, GateStep, Schedule, plan_schedule

__all__ = ["Communicator", "DistributedResult", "DistributedSimulator", "Exchange", "GateStep", "Layout",
           "PeerLostError", "Schedule", "SimulatedCommunicator", "global_qubit_count", "plan_schedule",
           "run_simulated"]
