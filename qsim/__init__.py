"""GPU state-vector simulator whose gates run as GEMMs on pluggable (emulated) FP64 backends.

    from circuits import brickwork
    from qsim import Simulator
    result = Simulator(backend="cublas", device="auto").run(brickwork(20, 5, 4, seed=1))
"""
from .errors import SimulationError
from .result import Result
from .simulator import Simulator, SimulatorOptions

__all__ = ["Result", "SimulationError", "Simulator", "SimulatorOptions"]
