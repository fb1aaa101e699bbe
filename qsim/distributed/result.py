"""What a distributed run returns on each rank: its slice, the layout, and collective readers.

Every method that looks at amplitudes (amplitude, probabilities, norm, state_vector,
sample_counts, to_dict, to_qiskit) is collective: all ranks call it in the same order.
Timings, per-gate information and memory are already combined over the ranks (the slowest rank
per step, the largest peak), so they are the same on every rank.
"""
from dataclasses import dataclass, field

import numpy as np

from gemm_backend.arrays import to_host

from ..device import host_available_bytes
from ..errors import SimulationError
from ..result import Result
from ..sampling import checked_qubits, sample_counts
from ..state import squared_norm
from .layout import Layout

HOST_GATHER_FRACTION = 0.5  # share of free host memory a gathered state (plus its copies) may take


@dataclass
class DistributedResult(Result):
    """A Result whose `state` is this rank's slice, in physical order.

    comm: the rank's Communicator; layout: the final qubit placement (qsim.distributed.layout).
    exchange_times_s: wall time of each exchange (slowest rank). exchanges: per exchange,
    {"before_gate", "pairs" (global bit, local bit), "time_s", "bytes_sent" (per rank)}.
    memory_plan: what qsim.distributed.memory.plan_memory decided.
    """

    comm: object = None
    layout: Layout = None
    exchange_times_s: list = field(default_factory=list)
    exchanges: list = field(default_factory=list)
    memory_plan: dict = field(default_factory=dict)

    @property
    def compute_time_s(self) -> float:
        return float(sum(self.gate_times_s))

    @property
    def exchange_time_s(self) -> float:
        return float(sum(self.exchange_times_s))

    @property
    def total_time_s(self) -> float:
        return self.compute_time_s + self.exchange_time_s

    def amplitude(self, index: int) -> complex:
        """<index|psi> on every rank (collective)."""
        index = int(index)
        if not 0 <= index < (1 << self.n_qubits):
            raise SimulationError(f"amplitude index {index} is outside 0..2^{self.n_qubits}-1")
        owner, offset = self.layout.owner(index)
        mine = complex(to_host(self.state[offset:offset + 1])[0]) if owner == self.comm.rank else 0j
        re, im = self.comm.allreduce([mine.real, mine.imag])  # the other ranks add exact zeros
        return complex(re, im)

    def norm(self) -> float:
        """||psi||_2 over all ranks (collective)."""
        local = squared_norm(self.state)
        return float(self.comm.allreduce([local])[0]) ** 0.5

    def state_vector(self) -> np.ndarray:
        """The whole state in logical (Qiskit) order as a numpy array, on every rank
        (collective; for states that fit in host memory a few times over)."""
        needed = 3 * (16 << self.n_qubits)  # the gathered slices, the permuted copy, pickling
        if needed > HOST_GATHER_FRACTION * host_available_bytes():
            raise SimulationError(
                f"state_vector() gathers all {self.n_qubits}-qubit amplitudes on every rank's host and needs about "
                f"{needed / (1 << 30):.1f} GiB; use amplitude(), probabilities(), norm() or sample_counts()")
        slices = self.comm.allgather_object(to_host(self.state))
        return self.layout.to_logical_order(np.concatenate(slices))

    def sample_counts(self, qubits, shots: int, seed: int) -> dict:
        """Counts of measuring logical `qubits` `shots` times (qsim.sampling conventions; the
        same counts on every rank; collective)."""
        bits = [self.layout.physical_of[q] for q in checked_qubits(qubits, self.n_qubits)]
        return sample_counts(self.state, bits, shots, seed, comm=self.comm)

    def to_dict(self) -> dict:
        """Result.to_dict plus a "distributed" section (collective)."""
        out = super().to_dict()
        out["distributed"] = {
            "ranks": self.comm.world_size,
            "global_qubits": self.layout.n_global,
            "local_qubits": self.layout.n_local,
            "exchanges": len(self.exchanges),
            "qubit_swaps": sum(len(e["pairs"]) for e in self.exchanges),
            "compute_time_s": self.compute_time_s,
            "exchange_time_s": self.exchange_time_s,
            "compute_time_per_gate_s": self.compute_time_s / max(1, self.n_gates),
            "exchange_time_per_gate_s": self.exchange_time_s / max(1, self.n_gates),
            "exchange_log": self.exchanges,
            "final_layout": list(self.layout.physical_of),
            "memory_plan": self.memory_plan,
        }
        return out
