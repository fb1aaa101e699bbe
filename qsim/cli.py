"""Command line: `qsim run`, `qsim compare`, `qsim backends`."""
import argparse
import math
import sys

import gemm_backend
from circuits import CircuitError, brickwork, monitored_brickwork

from .errors import SimulationError
from .output import STDOUT, check_output_path, write_json
from .result import splits_summary
from .simulator import Simulator

EXPECTED_ERRORS = (CircuitError, gemm_backend.BackendError, SimulationError, FileNotFoundError)
DEFAULT_DEPTH = 10
DEFAULT_GATE_SIZE = 5
DEFAULT_IMPORT_FUSION = 5
#: Backend options whose command-line flag is not "--" + the option with '-' for '_'.
_OPTION_FLAGS = {"workspace_bytes": "--workspace-gib"}


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        _check_outputs(args)
        return args.handler(args)
    except EXPECTED_ERRORS as exc:
        print(f"qsim: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:
        print(f"qsim: error: out of memory ({exc}); use fewer qubits or a smaller workspace", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("qsim: interrupted", file=sys.stderr)
        return 130


def _check_outputs(args) -> None:
    """Every output file can be written: checked before the run, which may take hours."""
    if args.json is not None and args.json != STDOUT:
        check_output_path(args.json, "--json")
    if getattr(args, "plot", None) is not None:
        from .compare import check_plot_path

        check_plot_path(args.plot)


# -- parser ---------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qsim", description="State-vector simulation on (emulated) FP64 GEMM backends")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="simulate one circuit and print time, memory and amplitudes")
    _circuit_arguments(run)
    run.add_argument("--backend", default="cublas",
                     help="GEMM backend (see `qsim backends`), optionally with options as in compare: "
                          "name@option=value, e.g. cublas@dmma_min_qubits=7; default cublas")
    _backend_option_arguments(run)
    run.add_argument("--reference", choices=["dd"], help="also run a double-double reference and report errors")
    run.add_argument("--shots", type=_positive_int,
                     help="sample this many measurement outcomes (seeded by --seed); for a dynamic circuit, "
                     "one trajectory per shot")
    run.add_argument("--trajectories", type=_positive_int, metavar="T",
                     help="run T seeded quantum trajectories (seeds derived from --seed) and report each")
    run.add_argument("--measure-rate", type=float, metavar="P",
                     help="monitored brickwork: measure each qubit with probability P after every layer")
    run.add_argument("--gpus", type=_positive_int, default=1,
                     help="split the state over this many GPUs (a power of two), one process each; with --device cpu, "
                     "that many simulated ranks in this process")
    run.add_argument("--timeout", type=float, metavar="SECONDS",
                     help="with --gpus: stop every process when the run takes longer (default: no limit)")
    run.set_defaults(handler=_run)

    compare = commands.add_parser("compare", help="run several backends on one circuit against one dd reference")
    _circuit_arguments(compare)
    compare.add_argument("--backends", required=True,
                         help="comma-separated backend names, e.g. cublas,int8-auto,int8-9; "
                         "name@option=value runs a backend with its own option, e.g. int8-auto@rho=0")
    _backend_option_arguments(compare)
    compare.add_argument("--plot", metavar="PATH", help="write an accuracy-versus-time plot (needs matplotlib)")
    compare.set_defaults(handler=_compare)

    backends = commands.add_parser("backends", help="list backends and devices")
    backends.add_argument("--json", metavar="PATH", help="also write the list as JSON ('-' for stdout)")
    backends.set_defaults(handler=_backends)
    return parser


def _circuit_arguments(parser):
    source = parser.add_argument_group("circuit")
    source.add_argument("--qubits", type=int, help="number of qubits of the brickwork circuit")
    # --gate-size and --depth default to None so that giving them with --qasm can be refused
    source.add_argument("--gate-size", type=int, help=f"qubits per brickwork gate (default {DEFAULT_GATE_SIZE})")
    source.add_argument("--depth", type=int, help=f"brickwork layers (default {DEFAULT_DEPTH})")
    source.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the random gates and of sampling (default 0)")
    source.add_argument("--qasm", metavar="FILE", help="simulate an OpenQASM 2/3 file instead of a brickwork circuit")
    source.add_argument("--fuse", type=int, metavar="K",
                        help=f"fuse gates into blocks of at most K qubits (default {DEFAULT_IMPORT_FUSION} for --qasm, "
                        "off for brickwork; 0 = off)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"],
                        help="auto takes the GPU when cupy sees one")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _backend_option_arguments(parser):
    group = parser.add_argument_group("backend options (only for the backends that take them)")
    group.add_argument("--target-error", type=float, metavar="X",
                       help="int8-auto: guaranteed error target relative to ||a_i|| ||b_j|| per entry (default: "
                       "the FP64-accuracy contract; int8-auto@bound=worst-case targets FP64 GEMM's bound gamma_n)")
    group.add_argument("--rho", type=float,
                       help="int8-auto: use the seed paper's rule instead, average mantissa bits lost <= rho")
    group.add_argument("--block", type=int, help="fp16x2: summation block size along k (0 = unblocked)")
    group.add_argument("--accumulate", choices=["fp32", "fp64"], help="fp16x2: precision of the block sums")
    group.add_argument("--workspace-gib", type=float, help="backend working memory in GiB (default: 1; int8-auto and int8-crt-<m>: three quarters of the free GPU memory at call time)")


def _int_at_least(minimum: int):
    """An argparse type: an integer >= minimum."""
    def parse(text):
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = "int"  # argparse names the type in its "invalid int value" message
    return parse


_positive_int = _int_at_least(1)


# -- commands -------------------------------------------------------------------------------
def _backend_options(args) -> dict:
    workspace = None if args.workspace_gib is None else _workspace_bytes(args.workspace_gib)
    return {"rho": args.rho, "target_error": args.target_error, "block": args.block, "accumulate": args.accumulate,
            "workspace_bytes": workspace}


def _run_backend(args) -> tuple:
    """(registry name, options) of `run --backend`, which takes compare's labels too
    (name@option=value, e.g. cublas@dmma_min_qubits=7); an option given both ways must agree."""
    from .compare import parse_label

    name, label_options = parse_label(args.backend)
    options = {k: v for k, v in _backend_options(args).items() if v is not None}
    for key, value in label_options.items():
        if key in options and options[key] != value:
            raise SimulationError(f"backend option {key} is given twice ({options[key]!r} and {value!r} in "
                                  f"--backend {args.backend}); give it once")
    return name, {**options, **label_options}


def _workspace_bytes(gib: float) -> int:
    """--workspace-gib in bytes; at least one byte, finite."""
    if not (math.isfinite(gib) and gib * (1 << 30) >= 1):
        raise SimulationError(f"--workspace-gib must be a finite positive number of GiB, got {gib}")
    return int(gib * (1 << 30))


def _build_circuit(args):
    if args.qasm:
        import circuits

        if getattr(args, "measure_rate", None) is not None:
            raise CircuitError("--measure-rate makes a monitored brickwork circuit; it cannot be used with --qasm")
        shaping = [flag for flag, value in (("--qubits", args.qubits), ("--gate-size", args.gate_size),
                                            ("--depth", args.depth)) if value is not None]
        if shaping:
            raise CircuitError(f"{', '.join(shaping)} shape a brickwork circuit and cannot be used with --qasm "
                               "(the program sets the qubits; --fuse K sets the gate size)")
        circuit = circuits.from_qasm(args.qasm)
        fuse = DEFAULT_IMPORT_FUSION if args.fuse is None else args.fuse
        source = {"qasm": args.qasm, "gates_imported": len(circuit)}
    else:
        if args.qubits is None:
            raise CircuitError("give --qubits N for a brickwork circuit, or --qasm FILE")
        rate = getattr(args, "measure_rate", None)
        gate_size = DEFAULT_GATE_SIZE if args.gate_size is None else args.gate_size
        depth = DEFAULT_DEPTH if args.depth is None else args.depth
        shape = (args.qubits, gate_size, depth)
        circuit = brickwork(*shape, args.seed) if rate is None else monitored_brickwork(*shape, rate, args.seed)
        fuse = args.fuse or 0
        source = {"brickwork": {"qubits": args.qubits, "gate_size": gate_size, "depth": depth, "seed": args.seed}}
        if rate is not None:
            source["brickwork"].update(measure_rate=rate, measurements=circuit.n_clbits)
    if fuse < 0:
        raise CircuitError(f"--fuse must be >= 0, got {fuse}")
    if fuse:
        import circuits

        circuit = circuits.fuse(circuit, fuse)
        source["fused_to"] = {"max_qubits": fuse, "gates": len(circuit)}
    return circuit, source


def _run(args) -> int:
    _check_run_combination(args)
    circuit, source = _build_circuit(args)
    progress = False if args.no_progress else None
    if args.gpus > 1:
        return _run_distributed(args, circuit, source, progress)
    trajectories = _trajectory_count(args, circuit)
    name, options = _run_backend(args)
    simulator = Simulator(name, args.device, progress=progress if trajectories is None else False, **options)
    if trajectories is None:
        result = simulator.run(circuit)
        report = {"circuit": source, **result.to_dict()}
    else:
        from .trajectory import run_trajectories, summarize_trajectories

        records, result = run_trajectories(simulator, circuit, trajectories, args.seed, progress)
        report = {"circuit": source, **result.to_dict(), "trajectories": summarize_trajectories(records, args.seed)}
    if args.reference:
        from .accuracy import accuracy_report
        from .reference import reference_state

        ref_hi, ref_lo = reference_state(circuit, simulator.device, progress=progress)
        result.accuracy = report["accuracy"] = accuracy_report(result.state, ref_hi, ref_lo)
        del ref_hi, ref_lo
    if circuit.is_dynamic and circuit.n_clbits:
        report["counts"] = report["trajectories"]["counts"]
    elif args.shots:
        from .sampling import sample_counts

        measured = list(circuit.measured) or list(range(circuit.n_qubits))
        report["counts"] = sample_counts(result.state, measured, args.shots, args.seed)
    print(_summary(report))
    _write_json(args.json, report)
    return 0


def _check_run_combination(args) -> None:
    """Options that would be ignored in this combination are refused rather than dropped."""
    if args.timeout is not None and args.gpus == 1:
        raise SimulationError("--timeout applies to runs over several GPUs; give --gpus P (P >= 2) or leave it out")
    if args.timeout is not None and not (args.timeout > 0 and math.isfinite(args.timeout)):
        raise SimulationError(f"--timeout must be a positive, finite number of seconds (leave it out for no limit), "
                              f"got {args.timeout}")
    if args.gpus > 1 and args.trajectories is not None:
        raise SimulationError("--trajectories is not supported with --gpus: the distributed engine runs circuits "
                              "without mid-circuit measurement")


def _trajectory_count(args, circuit):
    """How many trajectories `run` does: None for one plain run of a circuit without
    mid-circuit operations (unless --trajectories asks for more); a dynamic circuit runs
    --shots or --trajectories of them (default 1)."""
    if not circuit.is_dynamic:
        return args.trajectories
    if args.reference:
        raise CircuitError("--reference dd compares one final state; a circuit with mid-circuit measurement, reset "
                           "or conditions has one per trajectory, so it is not supported there")
    if args.shots and args.trajectories:
        raise CircuitError("a dynamic circuit runs one trajectory per shot: give --shots or --trajectories, not both")
    return args.shots or args.trajectories or 1


def _run_distributed(args, circuit, source, progress) -> int:
    from .distributed.job import RunRequest, run_distributed

    name, options = _run_backend(args)
    request = RunRequest(circuit, source, name, args.device, options, args.reference, args.shots, args.seed,
                         progress)
    report = run_distributed(request, args.gpus, timeout_s=args.timeout)
    print(_summary(report))
    _write_json(args.json, report)
    return 0


def _compare(args) -> int:
    from .compare import compare_backends, format_table, parse_label, plot_accuracy_vs_time

    circuit, source = _build_circuit(args)
    names = [name.strip() for name in args.backends.split(",") if name.strip()]
    if not names:
        raise CircuitError("--backends needs at least one backend name")
    options = {k: v for k, v in _backend_options(args).items() if v is not None}
    per_backend = {label: _options_for(parse_label(label)[0], options) for label in names}
    unused = sorted(set(options) - {k for taken in per_backend.values() for k in taken})
    if unused:
        flags = ", ".join(_OPTION_FLAGS.get(name, "--" + name.replace("_", "-")) for name in unused)
        raise SimulationError(f"no backend in --backends takes {flags} (see `qsim backends` for which backend "
                              "takes what)")
    report = compare_backends(circuit, names, device=args.device, backend_options=per_backend,
                              progress=False if args.no_progress else None)
    report["source"] = source
    print(format_table(report))
    if args.plot is not None:
        plot_accuracy_vs_time(report, args.plot)
        print(f"plot written to {args.plot}")
    _write_json(args.json, report)
    return 0


def _options_for(name: str, options: dict) -> dict:
    """The subset of the command-line backend options that backend `name` takes."""
    accepted = gemm_backend.accepted_options(name)
    return {k: v for k, v in options.items() if k in accepted}


def _backends(args) -> int:
    rows = gemm_backend.available()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        options = ", ".join(f"{k}={v}" for k, v in row["options"].items())
        print(f"{row['name']:<{width}}  {'/'.join(row['devices']):<7}  {row['description']}  [{options}]")
    _write_json(args.json, {"backends": rows})
    return 0


# -- output ---------------------------------------------------------------------------------
def _summary(report: dict) -> str:
    gate_time = report["gate_time_s"]
    amp = report["amplitude_0"]
    lines = [
        f"qubits          {report['qubits']}",
        f"gates           {report['gates']}",
        f"backend         {report['backend']}",
        f"device          {report['device']}",
        f"total time      {report['total_time_s']:.4f} s",
        f"per gate        mean {gate_time['mean'] * 1e3:.3f} ms, median {gate_time['median'] * 1e3:.3f} ms",
        f"throughput      {report['effective_tflops']:.3f} TFLOP/s (8 * 2^N * 2^d per gate)",
        f"peak memory     {report['peak_memory_bytes'] / (1 << 30):.3f} GiB ({report['memory_measure']})",
        f"<0...0|psi>     {amp['re']:+.16e} {amp['im']:+.16e}i",
        f"norm            {report['norm']:.16f}",
    ]
    if report.get("x_floor") is not None:
        lines.append(f"memory floor    {report['floor_time_s']:.4f} s for all gates ({report['x_floor']:.2f}x: "
                     f"read + write the state once per gate at {report['copy_bandwidth_Bps'] / 1e12:.2f} TB/s)")
    for path, stats in report.get("time_by_path", {}).items():
        lines.append(f"  path {path:<9} {stats['gates']} gates, {stats['total_s']:.4f} s, "
                     f"median {stats['median_s'] * 1e3:.3f} ms")
    if "distributed" in report:
        split = report["distributed"]
        lines.append(f"ranks           {split['ranks']} ({split['global_qubits']} global qubits), {split['exchanges']} "
                     f"exchanges of {split['qubit_swaps']} qubits")
        lines.append(f"per gate split  compute {split['compute_time_per_gate_s'] * 1e3:.3f} ms, exchange "
                     f"{split['exchange_time_per_gate_s'] * 1e3:.3f} ms")
    splits = splits_summary(report["per_gate"])
    if splits:
        lines.append(f"INT8 splits     min {splits['min']}, max {splits['max']}, mean {splits['mean']:.2f}"
                     f" (state/gate digits, largest p + q: {_plans(report['per_gate'])})")
    moduli = sorted(g["moduli"] for g in report["per_gate"] if g.get("scheme") == "ozaki2")
    if moduli:
        lines.append(f"Ozaki-II gates  {len(moduli)}, moduli min {moduli[0]}, max {moduli[-1]}")
    fallbacks = sum(1 for g in report["per_gate"] if g.get("fallback"))
    if fallbacks:
        lines.append(f"fallbacks       {fallbacks} gates used native ZGEMM (no s <= 18 met rho)")
    if "accuracy" in report:
        lines.append("accuracy against the double-double reference:")
        for key, value in report["accuracy"].items():
            lines.append(f"  {key:<26} {value:.3e}" if isinstance(value, float) else f"  {key:<26} {value}")
    if "trajectories" in report:
        lines += _trajectory_lines(report["trajectories"])
    if "counts" in report:
        top = sorted(report["counts"].items(), key=lambda kv: -kv[1])[:8]
        lines.append("counts (top 8)  " + ", ".join(f"{b}: {c}" for b, c in top))
    return "\n".join(lines)


def _plans(per_gate: list) -> str:
    counts = {}
    for info in per_gate:
        if "pairs" in info:
            key = f"{info.get('splits_state')}/{info.get('splits_gate')}/{info['top']}"
            counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{plan} x{n}" for plan, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _trajectory_lines(summary: dict) -> list:
    time_s, measure_s = summary["time_s"], summary["measure_time_s"]
    norms = [record["norm"] for record in summary["records"]]
    return [
        f"trajectories    {summary['count']} (seeds derived from --seed {summary['seed']}); the lines above "
        "are the last one's",
        f"per trajectory  mean {time_s['mean']:.4f} s, median {time_s['median']:.4f} s "
        f"(measuring: mean {measure_s['mean']:.4f} s)",
        f"measurements    mean {summary['measurements_mean']:.2f} measure/reset operations per trajectory",
        f"norm            max |norm - 1| over trajectories {max(abs(n - 1) for n in norms):.2e}",
    ]


def _write_json(path, payload) -> None:
    if path is not None:
        write_json(path, payload)


if __name__ == "__main__":
    sys.exit(main())
