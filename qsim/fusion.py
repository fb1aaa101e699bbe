"""Fusion of the circuits the engine runs: to a block size given by the user, or to the one the
backend's cost model says is fastest ("auto", the default for imported circuits).

The cost of a fused circuit is the sum over its gates of GemmBackend.gate_passes: the estimated
time of each gate in passes over the state, for its size, the device, and whether its targets
are contiguous (scattered targets without an in-place kernel pay for a transposed copy).
"""
import numbers

from circuits import Circuit, CircuitError, Gate
from circuits.fusion import fuse, fuse_by_cost

from .apply import targets_are_contiguous

AUTO = "auto"


def fusion_setting(value, what: str = "fusion"):
    """AUTO, or a block size >= 0 (0: no fusion) as an int; CircuitError naming `what` otherwise.
    Accepts the command line's spelling: 'auto' or a decimal integer."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == AUTO:
            return AUTO
        try:
            value = int(text)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise CircuitError(f"{what} must be 'auto' or a block size >= 0 (0 turns fusion off), got {value!r}")
    return int(value)


def fuse_for_backend(circuit: Circuit, setting, backend, on_gpu: bool) -> tuple:
    """(fused circuit, report) for `setting` (fusion_setting's values). The report says what was
    done: max_qubits (the block size, 0 for none), chosen_by ('given' or 'cost model'), the gate
    counts before and after and the fused gates' sizes ({qubits: count}); with AUTO also the
    estimated passes of the circuit at every size tried."""
    setting = fusion_setting(setting)
    report = {"gates_before": len(circuit)}
    if setting == AUTO:
        choice = fuse_by_cost(circuit, lambda targets: target_passes(backend, targets, on_gpu))
        fused, report["max_qubits"], report["chosen_by"] = choice.circuit, choice.max_qubits, "cost model"
        report["estimated_passes"] = {size: round(cost, 2) for size, cost in choice.estimated_cost.items()}
    else:
        fused = fuse(circuit, setting) if setting else circuit
        report["max_qubits"], report["chosen_by"] = setting, "given"
    sizes = [len(g.targets) for g in fused.gates if isinstance(g, Gate)]
    report["gates"] = len(fused)
    report["gate_sizes"] = {size: sizes.count(size) for size in sorted(set(sizes))}
    return fused, report


def gate_passes(backend, gate: Gate, on_gpu: bool) -> float:
    """The backend's estimated passes over the state for this gate where the engine will run it."""
    return target_passes(backend, gate.targets, on_gpu)


def target_passes(backend, targets, on_gpu: bool) -> float:
    """The backend's estimated passes over the state for a dense gate on the qubits `targets`."""
    return backend.gate_passes(1 << len(targets), on_gpu, not targets_are_contiguous(targets))


def describe_fusion(report: dict) -> str:
    """One line for the run summary, e.g. 'fused to <= 5 qubits (cost model): 457 -> 120 gates
    (2q x3, 5q x117)'."""
    if not report["max_qubits"]:
        return f"unfused: {report['gates']} gates"
    sizes = ", ".join(f"{size}q x{count}" for size, count in report["gate_sizes"].items())
    return (f"fused to <= {report['max_qubits']} qubits ({report['chosen_by']}): "
            f"{report['gates_before']} -> {report['gates']} gates ({sizes})")
