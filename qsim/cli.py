"""Command line: `qsim run`, `qsim compare`, `qsim backends`."""
import argparse
import math
import os
import sys

import gemm_backend
from circuits import CircuitError, brickwork, monitored_brickwork
from circuits.indices import qubit_count

from .errors import SimulationError
from .output import STDOUT, check_output_path, write_json
from .run_summary import run_summary
from .device import resolve_device
from .fusion import AUTO, fuse_for_backend, fusion_setting
from .simulator import BYTES_PER_AMPLITUDE, Simulator

EXPECTED_ERRORS = (CircuitError, gemm_backend.BackendError, SimulationError, FileNotFoundError)
DEFAULT_DEPTH = 10
DEFAULT_GATE_SIZE = 5


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "device", "auto") == "auto":  # `backends` lists the devices for auto too
        from .device import unused_gpu_note

        note = unused_gpu_note()
        if note:
            print(f"qsim: note: {note}", file=sys.stderr)
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
    except BrokenPipeError:
        # The reader of standard output left (`qsim backends --json - | head -1`): nothing to report;
        # standard output goes to /dev/null so that Python's flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


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
    source.add_argument("--fuse", metavar="K|auto",
                        help="fuse gates into blocks of at most K qubits; auto: the size the backend's cost model "
                        "says is fastest (default auto for --qasm, off for brickwork; 0 = off)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"],
                        help="auto takes the GPU when cupy sees one")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _backend_option_arguments(parser):
    """One flag per option of gemm_backend.OPTION_SPECS that has one (the registry's table)."""
    group = parser.add_argument_group(
        "backend options (each goes to the backends that take it, see `qsim backends`; one that none of the "
        "chosen backends takes is refused)")
    for option, spec in _flagged_options():
        group.add_argument(spec.flag, type=float if spec.flag_unit != 1 else _flag_type(spec), metavar="VALUE",
                           help=f"{', '.join(gemm_backend.backends_taking(option))}: {spec.help}")


def _flagged_options() -> list:
    return [(option, spec) for option, spec in gemm_backend.OPTION_SPECS.items() if spec.flag]


def _flag_type(spec):
    """An argparse type reading a flag's text as the table does for labels."""
    def parse(text):
        try:
            return spec.read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"must be {exc}, got {text!r}") from None

    parse.__name__ = spec.flag
    return parse


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
    """{option: value} of the backend option flags given (None for those left out)."""
    options = {}
    for option, spec in _flagged_options():
        value = getattr(args, spec.flag[2:].replace("-", "_"))
        options[option] = value if value is None or spec.flag_unit == 1 else _scaled(spec, value)
    return options


def _run_backend(args) -> tuple:
    """(registry name, options) of `run --backend`, which takes compare's labels too
    (name@option=value, e.g. cublas@dmma_min_qubits=7); an option given both ways must agree."""
    name, label_options = gemm_backend.parse_label(args.backend)
    options = {k: v for k, v in _backend_options(args).items() if v is not None}
    for key, value in label_options.items():
        if key in options and options[key] != value:
            raise SimulationError(f"backend option {key} is given twice ({options[key]!r} and {value!r} in "
                                  f"--backend {args.backend}); give it once")
    return name, {**options, **label_options}


def _scaled(spec, value: float) -> int:
    """A flag given in units of spec.flag_unit (--workspace-gib: GiB) as the option's integer; one at least."""
    if not (math.isfinite(value * spec.flag_unit) and value * spec.flag_unit >= 1):  # 1e300 GiB overflows too
        raise SimulationError(f"{spec.flag} must be a finite positive number of {spec.flag_unit_name}, got {value}")
    return int(value * spec.flag_unit)


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
        fuse = fusion_setting(AUTO if args.fuse is None else args.fuse, "--fuse")
        circuit = circuits.from_qasm(args.qasm)
        source = {"qasm": args.qasm, "gates_imported": len(circuit)}
    else:
        if args.qubits is None:
            raise CircuitError("give --qubits N for a brickwork circuit, or --qasm FILE")
        rate = getattr(args, "measure_rate", None)
        gate_size = DEFAULT_GATE_SIZE if args.gate_size is None else args.gate_size
        depth = DEFAULT_DEPTH if args.depth is None else args.depth
        shape = (args.qubits, gate_size, depth)
        circuit = brickwork(*shape, args.seed) if rate is None else monitored_brickwork(*shape, rate, args.seed)
        fuse = fusion_setting(args.fuse or 0, "--fuse")
        source = {"brickwork": {"qubits": args.qubits, "gate_size": gate_size, "depth": depth, "seed": args.seed}}
        if rate is not None:
            source["brickwork"].update(measure_rate=rate, measurements=circuit.n_clbits)
    return circuit, source, fuse


def _fuse(circuit, source, fuse, backend, on_gpu: bool):
    """The circuit fused as --fuse says, for `backend` on this device; the report goes to source."""
    if not fuse:
        return circuit
    fused, source["fusion"] = fuse_for_backend(circuit, fuse, backend, on_gpu)
    return fused


def _run(args) -> int:
    _check_run_combination(args)
    progress = False if args.no_progress else None
    name, options = _run_backend(args)
    if args.gpus > 1:
        circuit, source, fuse = _build_circuit(args)
        circuit = _fuse(circuit, source, fuse, gemm_backend.get(name, **options), on_gpu=True)
        return _run_distributed(args, circuit, source, progress)
    simulator = Simulator(name, args.device, progress=progress, **options)  # a bad backend or device: now
    if args.qubits is not None and args.qasm is None:
        simulator.check_fits(qubit_count(args.qubits, "--qubits"))  # before the brickwork's gates are drawn
    circuit, source, fuse = _build_circuit(args)
    circuit = _fuse(circuit, source, fuse, simulator.backend, simulator.device.on_gpu)
    trajectories = _trajectory_count(args, circuit)
    if trajectories is not None:
        simulator.options.progress = False  # run_trajectories shows one bar over the trajectories
    if args.reference:
        from .reference import check_reference_fits

        # The reference runs after the main run, beside its final state: refused now, not after it.
        check_reference_fits(circuit, simulator.device, held_bytes=BYTES_PER_AMPLITUDE << circuit.n_qubits)
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
    print(run_summary(report), file=_text_stream(args))
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
    print(run_summary(report), file=_text_stream(args))
    _write_json(args.json, report)
    return 0


def _compare(args) -> int:
    from .compare import compare_backends, format_table, plot_accuracy_vs_time

    circuit, source, fuse = _build_circuit(args)
    names = [name.strip() for name in args.backends.split(",") if name.strip()]
    if not names:
        raise CircuitError("--backends needs at least one backend name")
    options = {k: v for k, v in _backend_options(args).items() if v is not None}
    per_backend = {label: _options_for(gemm_backend.parse_label(label)[0], options) for label in names}
    unused = sorted(set(options) - {k for taken in per_backend.values() for k in taken})
    if unused:
        flags = ", ".join(gemm_backend.OPTION_SPECS[name].flag for name in unused)
        raise SimulationError(f"no backend in --backends takes {flags} (see `qsim backends` for which backend "
                              "takes what)")
    for option in options:  # said, not silently dropped: which backends run without a global option
        skipped = [label for label in names if option not in per_backend[label]]
        if skipped:
            print(f"note: {gemm_backend.OPTION_SPECS[option].flag} applies to {', '.join(sorted(set(names) - set(skipped)))}"
                  f" only ({', '.join(skipped)} take{'s' if len(skipped) == 1 else ''} no {option})",
                  file=_text_stream(args))
    # every backend runs the same gates; automatic fusion follows the first backend's cost model
    first_name, first_options = gemm_backend.parse_label(names[0])
    first = gemm_backend.get(first_name, **{**first_options, **per_backend[names[0]]})
    circuit = _fuse(circuit, source, fuse, first, resolve_device(args.device).on_gpu)
    report = compare_backends(circuit, names, device=args.device, backend_options=per_backend,
                              progress=False if args.no_progress else None)
    report["source"] = source
    print(format_table(report), file=_text_stream(args))
    if args.plot is not None:
        plot_accuracy_vs_time(report, args.plot)
        print(f"plot written to {args.plot}", file=_text_stream(args))
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
        print(f"{row['name']:<{width}}  {'/'.join(row['devices']):<7}  {row['description']}  [{options}]",
              file=_text_stream(args))
    _write_json(args.json, {"backends": rows})
    return 0


# -- output ---------------------------------------------------------------------------------
def _text_stream(args):
    """Where the text for people goes: standard error when `--json -` takes standard output, which
    then holds the JSON document alone (pipeable to jq or json.load)."""
    return sys.stderr if args.json == STDOUT else sys.stdout


def _write_json(path, payload) -> None:
    if path is not None:
        write_json(path, payload)


if __name__ == "__main__":
    sys.exit(main())
