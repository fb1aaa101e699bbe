"""What a simulation run returns."""
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from gemm_backend.arrays import to_host

from .errors import SimulationError
from .sampling import checked_integer
from .state import squared_norm


@dataclass
class Result:
    """A finished run.

    state: (2^N,) complex128 on the run's device (numpy or cupy).
    gate_times_s: wall time of each gate in seconds (CUDA events on the GPU).
    gate_info: per gate, what the backend reported (e.g. {"splits": 9}) plus "targets".
    gate_flops: per gate, 8 * 2^N * 2^d (complex multiply-adds counted as 8 real flops).
    peak_memory_bytes: GPU: the most memory cupy's pool held during the run; CPU: the
        process's peak resident set size.
    trajectory: for a dynamic circuit, qsim.trajectory.Trajectory.record() (seed, classical
        bits, measurement events and time); None otherwise.
    """

    n_qubits: int
    state: object
    backend: str
    device: str
    gate_times_s: list
    gate_info: list
    gate_flops: list
    peak_memory_bytes: int
    memory_measure: str
    backend_options: dict = field(default_factory=dict)
    backend_statistics: dict = field(default_factory=dict)
    prepare_time_s: float = 0.0  # host work per gate done before the timed gates (plans)
    copy_bandwidth_Bps: float = None  # device copy bandwidth measured by the run (GPU), for the floor
    accuracy: dict = None  # filled in when a reference run was asked for
    trajectory: dict = None
    implementation: str = None  # what did the work (GemmBackend.implementation), e.g. "numpy" for cublas on the CPU

    @property
    def total_time_s(self) -> float:
        """Seconds in gates, plus measurements and resets for a dynamic circuit."""
        measuring = self.trajectory["measure_time_s"] if self.trajectory is not None else 0.0
        return float(sum(self.gate_times_s)) + measuring

    @property
    def n_gates(self) -> int:
        return len(self.gate_times_s)

    def floor_time_s(self):
        """Seconds to read and write the state once per gate at the measured copy bandwidth."""
        if not self.copy_bandwidth_Bps:
            return None
        return self.n_gates * 32 * (1 << self.n_qubits) / self.copy_bandwidth_Bps

    def x_floor(self):
        """Total gate time over floor_time_s (None without a measured bandwidth)."""
        floor = self.floor_time_s()
        return self.total_time_s / floor if floor else None

    def time_by_path(self) -> dict:
        """{kernel path: {"gates", "total_s", "median_s"}} from the per-gate "kernel" reports; a gate
        on non-contiguous targets that went through the transposed copy (no kernel addressed its
        targets in place) counts under "<kernel>+transposed", one run through the CPU's gathered
        layout (qsim.gathered_layout) under "<kernel>+gathered"."""
        paths = {}
        for info, seconds in zip(self.gate_info, self.gate_times_s):
            path = info.get("kernel") or "default"
            if info.get("layout") in ("transposed", "gathered"):
                path += "+" + info["layout"]
            paths.setdefault(path, []).append(seconds)
        return {path: {"gates": len(times), "total_s": float(sum(times)), "median_s": float(np.median(times))}
                for path, times in paths.items()}

    def tflops(self) -> float:
        total = self.total_time_s
        return sum(self.gate_flops) / total / 1e12 if total > 0 else 0.0

    def state_vector(self) -> np.ndarray:
        """The state as a numpy array (copied from the GPU when needed)."""
        return to_host(self.state)

    def to_qiskit(self):
        """The state as a qiskit.quantum_info.Statevector (copied to the host; qubit orders agree)."""
        from qiskit.quantum_info import Statevector

        return Statevector(self.state_vector())

    def amplitude(self, index: int) -> complex:
        """<index|psi> for a basis-state index (bit q = qubit q)."""
        index = checked_integer(index, "an amplitude index", minimum=0)
        if index >= 1 << self.n_qubits:
            raise SimulationError(f"amplitude index {index} is outside 0..2^{self.n_qubits}-1")
        return complex(to_host(self.state[index : index + 1])[0])

    def probabilities(self, bitstrings) -> np.ndarray:
        """|<b|psi>|^2 for each b of a list (or other iterable): an int index or a string of '0'/'1'
        written as Qiskit does, qubit N-1 first (leftmost) and qubit 0 last. SimulationError for one
        state not in a list (a string would otherwise be read character by character)."""
        if isinstance(bitstrings, (str, bytes)) or not isinstance(bitstrings, Iterable):
            example = repr(bitstrings) if isinstance(bitstrings, (str, bytes, int)) else repr("0" * self.n_qubits)
            raise SimulationError(
                f"probabilities() takes a list of basis states (bitstrings such as {'0' * self.n_qubits!r} or integer "
                f"indices), got {bitstrings!r} ({type(bitstrings).__name__}); for one state write "
                f"probabilities([{example}])")
        return np.array([abs(self.amplitude(self._index(b))) ** 2 for b in bitstrings])

    def _index(self, bitstring) -> int:
        if isinstance(bitstring, (bool, np.bool_)) or not isinstance(bitstring, (str, int, np.integer)):
            raise SimulationError(f"a basis-state index must be an integer >= 0 or a bitstring of {self.n_qubits} "
                                  f"characters 0/1, got {bitstring!r} ({type(bitstring).__name__})")
        if not isinstance(bitstring, str):
            return checked_integer(bitstring, "a basis-state index", minimum=0)
        text = bitstring.replace(" ", "")
        if len(text) != self.n_qubits or set(text) - {"0", "1"}:
            raise SimulationError(
                f"bitstring {bitstring!r} must be {self.n_qubits} characters of 0/1 (qubit {self.n_qubits - 1} first)"
            )
        return int(text, 2)

    def norm(self) -> float:
        """||psi||_2 (no state-sized temporaries)."""
        return squared_norm(self.state) ** 0.5

    def to_dict(self) -> dict:
        """Everything but the state, JSON-ready."""
        amp0 = self.amplitude(0)
        times = np.array(self.gate_times_s) if self.gate_times_s else np.zeros(1)
        out = {
            "qubits": self.n_qubits,
            "gates": self.n_gates,
            "backend": self.backend,
            "implementation": self.implementation,
            "backend_options": self.backend_options,
            "device": self.device,
            "total_time_s": self.total_time_s,
            "prepare_time_s": self.prepare_time_s,
            "gate_time_s": {"mean": float(times.mean()), "median": float(np.median(times)),
                            "min": float(times.min()), "max": float(times.max())},
            "effective_tflops": self.tflops(),
            "copy_bandwidth_Bps": self.copy_bandwidth_Bps,
            "floor_time_s": self.floor_time_s(),
            "x_floor": self.x_floor(),
            "time_by_path": self.time_by_path(),
            "peak_memory_bytes": int(self.peak_memory_bytes),
            "memory_measure": self.memory_measure,
            "amplitude_0": {"re": amp0.real, "im": amp0.imag},
            "norm": self.norm(),
            "backend_statistics": self.backend_statistics,
            "per_gate": [dict(info, time_s=t) for info, t in zip(self.gate_info, self.gate_times_s)],
        }
        if self.accuracy is not None:
            out["accuracy"] = self.accuracy
        if self.trajectory is not None:
            out["trajectory"] = self.trajectory
        return out


def splits_summary(gate_info: list):
    """{"min", "max", "mean"} of the per-gate INT8 "splits" in gate_info, or None when no gate
    reports a number (other backends, or native fallbacks only)."""
    splits = [info["splits"] for info in gate_info
              if isinstance(info.get("splits"), (int, float)) and not isinstance(info.get("splits"), bool)]
    if not splits:
        return None
    return {"min": min(splits), "max": max(splits), "mean": sum(splits) / len(splits)}
