"""Quantum trajectories: dynamic circuits (mid-circuit measurement, reset, classical control)
run one seeded random history at a time.

The engine's run loop hands every operation to Trajectory.handles first: a measurement or reset
is done here (qsim.measurement: exact reduction on the device, a draw from a numpy Generator
seeded with the run's seed, projection and renormalisation in place), an operation whose
condition is false is skipped, and only the gates left go through the GEMM backend. With the
same seed the CPU and the GPU see the same weights and draws, hence the same outcomes, and an
INT8 backend the same final state bit for bit.

run_trajectories runs T of them; trajectory i is seeded with trajectory_seed(seed, i), so any one
of them can be rerun alone with Simulator.run(circuit, seed=record["seed"]).
"""
import math
import time

import numpy as np
from tqdm.auto import tqdm

from circuits import Gate, LoopLimit, Measure, Reset, format_clbits

from .errors import SimulationError
from .measurement import measure
from .run_loop import StepTimer
from .state import squared_norm

SEED_LIMIT = 2**63


def trajectory_seed(seed: int, index: int) -> int:
    """Seed (an int below 2^63) of trajectory `index` of a run seeded `seed` (both >= 0): numpy
    SeedSequence([seed, index]), so trajectories draw independent streams."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SimulationError(f"the seed of a set of trajectories must be an integer >= 0, got {seed!r}")
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1, np.uint64)[0] >> 1)


def fresh_seed() -> int:
    """A seed from the operating system's entropy, for runs not given one."""
    return int(np.random.SeedSequence().entropy % SEED_LIMIT)


class Trajectory:
    """Classical bits and random draws of one run of a dynamic circuit.

    bits: the classical register as an int (bit c = classical bit c). events: one dict per
    measurement or reset done, in order: operation name, qubits, outcome (bit j = qubits[j]) and
    its probability given the state before it.
    """

    @classmethod
    def start(cls, circuit, device, seed=None):
        """A Trajectory for a dynamic circuit (seed None: a fresh one), None for any other (whose
        seed, unused, is still checked: a wrong one is a mistake either way)."""
        if seed is not None:
            _check_seed(seed)
        if not circuit.is_dynamic:
            return None
        return cls(circuit, device, fresh_seed() if seed is None else seed)

    def __init__(self, circuit, device, seed: int):
        _check_seed(seed)
        self.circuit = circuit
        self.device = device
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.bits = 0
        self.events = []
        # CUDA events on the GPU, as the gates' timer: no synchronisation of the device of its own, so
        # the host queues a measurement behind the gates and the next gates behind its collapse; the
        # copy of the outcome weights is a measurement's only wait.
        self._timer = StepTimer(device)

    def handles(self, operation, state) -> bool:
        """True when the trajectory took care of `operation` (it was a measurement or reset, or
        its condition is false), so the engine must not apply it as a gate. state: the engine's
        current (2^N,) complex128 state, changed in place. A LoopLimit reached with its condition
        true raises SimulationError."""
        if operation.condition is not None and not operation.condition.holds(self.bits):
            return True
        if isinstance(operation, Gate):
            return False
        if isinstance(operation, LoopLimit):
            raise SimulationError(operation.message())
        self._timer.start()
        outcome, probability = measure(state, operation.qubits, self.rng, reset=isinstance(operation, Reset))
        self._timer.stop()
        if isinstance(operation, Measure):
            for j, clbit in enumerate(operation.clbits):
                self.bits = (self.bits & ~(1 << clbit)) | (((outcome >> j) & 1) << clbit)
        self.events.append({"operation": operation.name, "qubits": list(operation.qubits), "outcome": outcome,
                            "probability": probability})
        return True

    def record(self) -> dict:
        """JSON-ready summary: seed, classical bits (Qiskit's format and hex), events and the
        time spent measuring (seconds; on the GPU between CUDA events around each measurement,
        its wait for the weights' copy and draw on the host included; waits for the device)."""
        return {
            "seed": self.seed,
            "clbits": format_clbits(self.bits, self.circuit.n_clbits, self.circuit.clbit_registers),
            "clbits_hex": hex(self.bits),
            "measurements": len(self.events),
            "measure_time_s": float(sum(self._timer.elapsed())),
            "events": self.events,
        }


def run_trajectories(simulator, circuit, count: int, seed: int, progress=None) -> tuple:
    """Run `circuit` `count` times with simulator (a qsim.Simulator), trajectory i seeded with
    trajectory_seed(seed, i); a tqdm bar over trajectories (progress None: only on a terminal).

    Returns (records, last Result): one record per trajectory with its index, seed, time_s (gates
    plus measurements), wall_s (the run's allocation and bookkeeping too; planning and warm-up are
    done once, before the first trajectory), norm of the final state, and for a dynamic circuit
    Trajectory.record()'s fields. Only one state is alive at a time: each run's state is freed
    before the next one is allocated.
    """
    records, last = [], None
    bar = tqdm(range(count), unit="trajectory", disable=None if progress is None else not progress, leave=False)
    with simulator.prepared(circuit) as prepared:  # plans and warm-up once for all trajectories
        for index in bar:
            last = None
            start = time.perf_counter()
            last = simulator.run(circuit, seed=trajectory_seed(seed, index), prepared=prepared)
            wall = time.perf_counter() - start
            details = last.trajectory or {"seed": trajectory_seed(seed, index), "clbits": "", "clbits_hex": "0x0",
                                          "measurements": 0, "measure_time_s": 0.0, "events": []}
            records.append({"index": index, **details, "time_s": last.total_time_s, "wall_s": wall,
                            "norm": _norm(last.state)})
    bar.close()
    return records, last


def _norm(state) -> float:
    """||state||_2 with no state-sized temporary."""
    return math.sqrt(squared_norm(state))


def summarize_trajectories(records: list, seed: int) -> dict:
    """{"count", "seed", "time_s" and "measure_time_s" statistics (mean, median, min, max over
    trajectories), "measurements" per trajectory (mean), "counts" of classical strings, "records"}."""
    def stats(key):
        values = np.array([r[key] for r in records], dtype=float)
        return {"mean": float(values.mean()), "median": float(np.median(values)),
                "min": float(values.min()), "max": float(values.max())}

    counts = {}
    for record in records:
        counts[record["clbits"]] = counts.get(record["clbits"], 0) + 1
    return {"count": len(records), "seed": seed, "time_s": stats("time_s"), "measure_time_s": stats("measure_time_s"),
            "measurements_mean": float(np.mean([r["measurements"] for r in records])),
            "counts": dict(sorted(counts.items())), "records": records}


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < SEED_LIMIT:
        raise SimulationError(f"a trajectory seed must be an integer in [0, 2^63), got {seed!r}")
