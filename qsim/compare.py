"""Backends side by side: speed, memory and accuracy against one double-double reference.

    report = compare_backends(brickwork(20, 5, 8, seed=1), ["cublas", "int8-auto", "fp16x2"])
    print(format_table(report))
    plot_accuracy_vs_time(report, "accuracy.png")   # needs matplotlib (the "plot" extra)
"""
import gc
import math
import os
import time

import gemm_backend
from circuits import Circuit, CircuitError
from gemm_backend.arrays import to_host

from .accuracy import accuracy_report
from .device import host_available_bytes, resolve_device
from .errors import SimulationError
from .output import atomic_output, check_output_path
from .reference import REFERENCE_BYTES_PER_AMPLITUDE, reference_state
from .result import splits_summary
from .simulator import Simulator

# The reference moves to host memory (freeing the GPU for the backends) when the host has
# this much headroom beyond it.
HOST_HEADROOM = 1.25
ZERO_ERROR_FLOOR = 1e-34  # where exact (zero-error) results sit on the log-scale plot
GIB = float(1 << 30)


def compare_backends(circuit: Circuit, backends, device="auto", backend_options=None, progress=None) -> dict:
    """Run the double-double reference once, then each backend through qsim.Simulator.

    backends: registry names, e.g. ["cublas", "int8-auto"]; backend_options: {name: {option: value}}.
    Returns {"circuit": {...}, "device": str, "reference": {"time_s", "held_on", "bytes"},
    "rows": [one dict per backend: backend, backend_options, time_s (sum of gate times),
    gate_time_s (mean per gate), effective_tflops, peak_memory_bytes, memory_measure, splits
    ({"min", "max", "mean"} of the per-gate "splits" a backend reports, or None), and the
    accuracy_report metrics]}. Each backend's state is freed before the next one runs.
    """
    if not isinstance(circuit, Circuit):
        raise CircuitError(f"compare_backends() takes a circuits.Circuit, got {type(circuit).__name__}")
    backends = [backends] if isinstance(backends, str) else list(backends)
    backend_options = dict(backend_options or {})
    _check_backend_names(backends, backend_options)
    runs = [_backend_run(label, backend_options) for label in backends]  # all checked before the first run
    device = resolve_device(device) if isinstance(device, str) else device
    for label, name, options in runs:  # every run's memory plan, before the reference's long run
        Simulator(backend=name, device=device.kind, progress=False, **options).memory_plan(circuit)
    start = time.perf_counter()
    ref_hi, ref_lo = reference_state(circuit, device, progress)
    reference = {"time_s": time.perf_counter() - start, "bytes": REFERENCE_BYTES_PER_AMPLITUDE << circuit.n_qubits}
    ref_hi, ref_lo, reference["held_on"] = _park_reference(device, ref_hi, ref_lo)
    rows = []
    for label, name, options in runs:
        _release_device_memory(device)
        simulator = Simulator(backend=name, device=device.kind, progress=progress, **options)
        result = simulator.run(circuit)
        rows.append(_row(label, result, accuracy_report(result.state, ref_hi, ref_lo)))
        del result, simulator
    _release_device_memory(device)
    return {
        "circuit": {"qubits": circuit.n_qubits, "gates": len(circuit), "max_gate_qubits": circuit.max_gate_size()},
        "device": device.name(),
        "reference": reference,
        "rows": rows,
    }


def _backend_run(label: str, backend_options: dict) -> tuple:
    """(label, registry name, options) of one backend of a comparison, after building it once so
    that a bad name or option fails before the reference and the backends listed before it run."""
    name, own_options = gemm_backend.parse_label(label)
    options = {**backend_options.get(label, {}), **own_options}
    gemm_backend.get(name, **options)
    return label, name, options


def _check_backend_names(backends: list, backend_options: dict) -> None:
    if not backends:
        raise SimulationError("compare_backends needs at least one backend name (see `qsim backends`)")
    if len(set(backends)) != len(backends):
        raise SimulationError(f"compare_backends got a backend twice: {backends}")
    stray = sorted(set(backend_options) - set(backends))
    if stray:
        raise SimulationError(f"backend_options names {', '.join(stray)}, which is not among the backends {backends}")


def _park_reference(device, ref_hi, ref_lo):
    """Move a GPU reference to the host when it fits there, so the backends get the GPU memory."""
    if not device.on_gpu:
        return ref_hi, ref_lo, "cpu"
    if host_available_bytes() < HOST_HEADROOM * (ref_hi.nbytes + ref_lo.nbytes):
        return ref_hi, ref_lo, "gpu"
    return to_host(ref_hi), to_host(ref_lo), "cpu"


def _release_device_memory(device) -> None:
    gc.collect()
    if device.on_gpu:
        device.synchronize()
        device.xp.get_default_memory_pool().free_all_blocks()


def _row(name: str, result, accuracy: dict) -> dict:
    row = {
        "backend": name,
        "backend_options": dict(result.backend_options),
        "implementation": result.implementation,
        "time_s": result.total_time_s,
        "gate_time_s": result.total_time_s / result.n_gates if result.n_gates else 0.0,
        "effective_tflops": result.tflops(),
        "peak_memory_bytes": int(result.peak_memory_bytes),
        "memory_measure": result.memory_measure,
        "splits": splits_summary(result.gate_info),
        "x_floor": result.x_floor(),
        "time_by_path": result.time_by_path(),
        "digit_pairs": result.backend_statistics.get("pairs"),
    }
    row.update(accuracy)
    return row


# -- presentation -------------------------------------------------------------------------
_COLUMNS = (  # header, row -> text
    ("backend", lambda r: f"{r['backend']} ({r['implementation']})" if r.get("implementation") else r["backend"]),
    ("time s", lambda r: f"{r['time_s']:.3g}"),
    ("gate ms", lambda r: f"{r['gate_time_s'] * 1e3:.3g}"),
    ("TFLOP/s", lambda r: f"{r['effective_tflops']:.3g}"),
    ("peak GiB", lambda r: f"{r['peak_memory_bytes'] / GIB:.3g}"),
    ("splits", lambda r: _format_splits(r["splits"])),
    ("rel err Re a0", lambda r: f"{r['rel_error_re_amp0']:.2e}"),
    ("max rel amp", lambda r: f"{r['max_rel_amplitude_error']:.2e}"),
    ("mean rel amp", lambda r: f"{r['mean_rel_amplitude_error']:.2e}"),
    ("L2 error", lambda r: f"{r['l2_error']:.2e}"),
    ("1 - fidelity", lambda r: f"{r['infidelity']:.2e}"),
)


def _format_splits(splits) -> str:
    if splits is None:
        return "-"
    if splits["min"] == splits["max"]:
        return f"{splits['min']:g}"
    return f"{splits['min']:g}-{splits['max']:g} (mean {splits['mean']:.3g})"


def format_table(report: dict) -> str:
    """compare_backends' report as an aligned text table, one line per backend, under a line
    naming the circuit, the device and the reference's time."""
    cells = [[header for header, _ in _COLUMNS]]
    cells += [[cell(row) for _, cell in _COLUMNS] for row in report["rows"]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(_align(text, width, i == 0) for i, (text, width) in enumerate(zip(line, widths)))
             for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    circuit, reference = report["circuit"], report["reference"]
    title = (f"{circuit['qubits']} qubits, {circuit['gates']} gates (up to {circuit['max_gate_qubits']} qubits) "
             f"on {report['device']}; double-double reference {reference['time_s']:.3g} s, amplitudes compared "
             f"where |ref| > {_threshold_fraction(report)} x RMS")
    return "\n".join([title] + lines)


def _align(text: str, width: int, left: bool) -> str:
    return text.ljust(width) if left else text.rjust(width)


def _threshold_fraction(report: dict) -> str:
    fractions = {row["threshold_fraction"] for row in report["rows"]}
    return ", ".join(f"{f:g}" for f in sorted(fractions)) or "-"


def check_plot_path(path) -> None:
    """Raise SimulationError unless plot_accuracy_vs_time can write `path`: matplotlib is
    installed, it knows the file type named by the extension, and the file can be created.
    Cheap: called before the backends run."""
    check_output_path(path, "--plot")
    figure_class = _matplotlib_figure()
    formats = figure_class().canvas.get_supported_filetypes()
    extension = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    if extension not in formats:
        raise SimulationError(f"--plot {os.fspath(path)!r}: the file name must end in a type matplotlib writes "
                              f"({', '.join('.' + f for f in sorted(formats))}), e.g. .png")


def plot_accuracy_vs_time(report: dict, path) -> None:
    """Save a log-log figure of accuracy against run time, one point per backend: the
    relative error of Re<0...0|psi> (left) and 1 - fidelity (right). Exact results (error 0)
    are drawn at ZERO_ERROR_FLOOR; the file (type from its extension, see check_plot_path) is
    written atomically. Needs matplotlib (imported here, not at module load)."""
    figure = _matplotlib_figure()(figsize=(11, 4.5))
    from matplotlib.ticker import NullFormatter

    panels = figure.subplots(1, 2)
    times = [row["time_s"] for row in report["rows"]]
    for axis, key, label in ((panels[0], "rel_error_re_amp0", "relative error of Re<0...0|psi>"),
                             (panels[1], "infidelity", "1 - fidelity")):
        shown = []
        for row in report["rows"]:
            value = row[key]
            if not math.isfinite(value):
                continue
            point = (row["time_s"], value if value > 0 else ZERO_ERROR_FLOOR)
            shown.append(point[1])
            axis.scatter(*zip(point))
            text = row["backend"] if value > 0 else f"{row['backend']} (error 0)"
            axis.annotate(text, point, textcoords="offset points", xytext=(4, 4))
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlim(*_decade_limits(times))
        axis.set_ylim(*_decade_limits(shown))
        for scale in (axis.xaxis, axis.yaxis):
            scale.set_minor_formatter(NullFormatter())
        axis.set_xlabel("time [s] (sum of gate times)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    circuit = report["circuit"]
    figure.suptitle(f"{circuit['qubits']} qubits, {circuit['gates']} gates, {report['device']}")
    figure.tight_layout()
    file_type = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    with atomic_output(path, binary=True) as handle:
        figure.savefig(handle, format=file_type or None)


def _matplotlib_figure():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SimulationError(
            "plotting needs matplotlib: pip install matplotlib (or the project's 'plot' extra)"
        ) from None
    return Figure


def _decade_limits(values) -> tuple:
    """Log-axis limits at whole powers of ten around the positive values (at least one decade
    apart), so that every panel has labelled major ticks at its ends."""
    positive = [v for v in values if v > 0 and math.isfinite(v)] or [1.0]
    low = math.floor(math.log10(min(positive)))
    high = max(math.ceil(math.log10(max(positive))), low + 1)
    return 10.0**low, 10.0**high
