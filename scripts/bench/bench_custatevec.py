"""The brickwork circuit of `qsim run`, or a QASM program, end to end, through NVIDIA cuStateVec and our engine.

    python scripts/bench/bench_custatevec.py --qubits 30 --gate-size 5 --depth 20 --seed 1 \\
        --backends cublas,int8-auto --json out.json [--custatevec-lib PATH]
    python scripts/bench/bench_custatevec.py --qasm qft30.qasm --fuse 2 --backends cublas,int8-auto --json out.json
    python scripts/bench/bench_custatevec.py --qasm qft30.qasm --fuse 0 --save-circuit qft30.npz   # no GPU needed
    python scripts/bench/bench_custatevec.py --circuit qft30.npz --fuse 2 --backends cublas,int8-auto

--save-circuit writes the gates that would run (after fusion, none with --fuse 0) and their source
to an .npz and exits; --circuit runs such a file (fused further by --fuse K), so a machine without
qiskit can benchmark an imported program.

--qasm loads the program as `qsim run --qasm` does (circuits.from_qasm, then circuits.fuse to
--fuse K qubits, K = 5 unless given); it must be unitary (no measure, reset or if), and the
brickwork flags (--qubits, --gate-size, --depth, --seed) are refused with it. cuStateVec and every
backend apply the same fused gates, targets in the gate's order (scattered, unsorted targets
included); the JSON's "circuit" and the line above the table say what ran: source, fusion, gate
count, gate sizes and how many gates act on non-contiguous qubits.

cuStateVec applies every gate with custatevecApplyMatrix (complex128 state, FP64 compute), called
through ctypes, so only its shared library is needed: --custatevec-lib, else $CUSTATEVEC_LIB, else
cusv/cuquantum/lib/libcustatevec.so* or .cusv/**/libcustatevec.so* under the repository root, else
a wheel .cusv/*.whl unzipped into /tmp/cusv. Without it the backends still run and the JSON says
why "custatevec" is null. Each backend then runs the same circuit with qsim's Simulator (in place
of `qsim run`). Per-gate times are CUDA events on both sides; the floor of a gate is 32 * 2^N bytes
(read and write the state once) over the copy bandwidth measured at the start. Agreement: |amp0
difference| against cuStateVec for every backend, and the largest amplitude difference over the
whole state for cublas when three states fit in GPU memory (else over a few sampled amplitudes).
A CUDA GPU is required.
"""
import argparse
import ctypes
import glob
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

import gemm_backend
import circuits
from circuits import Circuit, CircuitError, Gate, Measure, brickwork
from gemm_backend.arrays import cupy_module, gpu_available
from qsim import SimulationError, Simulator
from gemm_backend import parse_label
from qsim.output import atomic_output, check_output_path_or_exit, write_json
from qsim.benchmarking import copy_bandwidth, print_table

CUDA_C_64F = 5  # cudaDataType_t of complex128, for the state and the matrices
MATRIX_LAYOUT_ROW = 1  # custatevecMatrixLayout_t: numpy's C order
COMPUTE_64F = 16  # custatevecComputeType_t: FP64 arithmetic, as our engine
REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout: a cuStateVec build beside it, its git HEAD
WHEEL_UNZIP_DIR = Path("/tmp/cusv")
GET_CUSTATEVEC = ("pip download --no-deps --only-binary=:all: --python-version 3.12 "
                  "--platform manylinux2014_x86_64 -d .cusv custatevec-cu13")
SAMPLED_AMPLITUDES = 16
BRICKWORK_DEFAULTS = {"qubits": 30, "gate_size": 5, "depth": 20, "seed": 1}
DEFAULT_QASM_FUSION = 5  # as `qsim run --qasm`
COMPARE_CHUNK = 1 << 24  # amplitudes compared per step: the comparison allocates no state-sized array
COLUMNS = [("engine", "engine", "{}"), ("gates", "gates", "{}"), ("total_s", "total s", "{:.3f}"),
           ("median_ms", "median ms/gate", "{:.2f}"), ("max_ms", "max ms/gate", "{:.2f}"),
           ("x_floor", "x floor", "{:.2f}"), ("x_custatevec", "x cusv", "{:.2f}"),
           ("amp0_diff", "|d amp0|", "{:.1e}"), ("max_diff", "max |d amp|", "{:.1e}"), ("compared", "over", "{}")]


def find_custatevec_library(explicit=None, repo_root=REPO_ROOT, environ=os.environ, unzip_dir=WHEEL_UNZIP_DIR):
    """(path, None) of the libcustatevec to load, or (None, a one-line reason with how to get it)."""
    for given, source in ((explicit, "--custatevec-lib"), (environ.get("CUSTATEVEC_LIB"), "CUSTATEVEC_LIB")):
        if given:
            return (str(given), None) if os.path.isfile(given) else (None, f"{source} {given!r} is not a file")
    root = Path(repo_root)
    found = (sorted(glob.glob(str(root / "cusv/cuquantum/lib/libcustatevec.so*")))
             or sorted(glob.glob(str(root / ".cusv/**/libcustatevec.so*"), recursive=True)))
    wheels = sorted(glob.glob(str(root / ".cusv/*.whl")))
    if not found and wheels:
        try:
            with zipfile.ZipFile(wheels[-1]) as wheel:  # a wheel is a zip; only the library is needed
                wheel.extractall(unzip_dir, [m for m in wheel.namelist() if "libcustatevec.so" in Path(m).name])
        except (zipfile.BadZipFile, OSError) as exc:
            return None, f"cannot unzip {wheels[-1]}: {exc}"
        found = sorted(glob.glob(str(Path(unzip_dir) / "**/libcustatevec.so*"), recursive=True))
    if found:
        return found[0], None
    return None, (f"cuStateVec not found (--custatevec-lib, CUSTATEVEC_LIB, cusv/ or .cusv/ under {root}); "
                  f"get it with `{GET_CUSTATEVEC}` in the repository root")


class CuStateVec:
    """The few cuStateVec calls this benchmark makes, with explicit ctypes signatures (a pointer
    passed as a plain Python int would otherwise be cut to 32 bits)."""

    def __init__(self, path: str):
        pointer, enum, uint32, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_size_t
        int32_array = ctypes.POINTER(ctypes.c_int32)
        self.lib = lib = ctypes.CDLL(path)
        lib.custatevecGetVersion.restype, lib.custatevecGetVersion.argtypes = size, []
        lib.custatevecSetStream.argtypes = [pointer, pointer]
        lib.custatevecApplyMatrixGetWorkspaceSize.argtypes = [
            pointer, enum, uint32, pointer, enum, enum, ctypes.c_int32, uint32, uint32, enum, ctypes.POINTER(size)]
        lib.custatevecApplyMatrix.argtypes = [
            pointer, pointer, enum, uint32, pointer, enum, enum, ctypes.c_int32, int32_array, uint32,
            int32_array, int32_array, uint32, enum, pointer, size]
        self.version = int(lib.custatevecGetVersion())
        self.handle = ctypes.c_void_p()
        self._check(lib.custatevecCreate(ctypes.byref(self.handle)), "custatevecCreate")

    @staticmethod
    def _check(status: int, call: str) -> None:
        if status != 0:
            raise RuntimeError(f"{call} returned status {status}")

    def set_stream(self, stream_ptr: int) -> None:
        self._check(self.lib.custatevecSetStream(self.handle, stream_ptr), "custatevecSetStream")

    def workspace_bytes(self, n_qubits: int, matrix_ptr: int, n_targets: int) -> int:
        needed = ctypes.c_size_t()
        self._check(self.lib.custatevecApplyMatrixGetWorkspaceSize(
            self.handle, CUDA_C_64F, n_qubits, matrix_ptr, CUDA_C_64F, MATRIX_LAYOUT_ROW, 0, n_targets, 0,
            COMPUTE_64F, ctypes.byref(needed)), "custatevecApplyMatrixGetWorkspaceSize")
        return needed.value

    def apply_matrix(self, state_ptr, n_qubits, matrix_ptr, targets, workspace_ptr, workspace_bytes) -> None:
        self._check(self.lib.custatevecApplyMatrix(
            self.handle, state_ptr, CUDA_C_64F, n_qubits, matrix_ptr, CUDA_C_64F, MATRIX_LAYOUT_ROW, 0, targets,
            len(targets), None, None, 0, COMPUTE_64F, workspace_ptr, workspace_bytes), "custatevecApplyMatrix")

    def close(self) -> None:
        self.lib.custatevecDestroy(self.handle)


def custatevec_targets(targets):
    """The gate's targets as cuStateVec's int32 array. Both sides put qubit targets[j] on bit j of
    the matrix's row/column index (design.md section 2; cuStateVec lists bit positions little
    endian, the first target being the least significant bit), so the order is kept as it is."""
    return (ctypes.c_int32 * len(targets))(*(int(t) for t in targets))


def custatevec_operands(gate):
    """(matrix, targets) that custatevecApplyMatrix takes for `gate` with MATRIX_LAYOUT_ROW: the
    matrix as a C-ordered complex128 copy (row-major, entry [r, c] at r * 2^d + c) and the targets
    from custatevec_targets, in the gate's own order, sorted or not."""
    return np.ascontiguousarray(gate.matrix, dtype=np.complex128), custatevec_targets(gate.targets)


def run_custatevec(cusv: CuStateVec, circuit, cp):
    """Every gate of `circuit` applied to |0...0> in order: (final state, per-gate seconds, workspace bytes)."""
    n_qubits, gates = circuit.n_qubits, circuit.gates
    cusv.set_stream(cp.cuda.get_current_stream().ptr)  # the stream the events below are recorded on
    operands = [custatevec_operands(g) for g in gates]
    matrices, targets = [cp.asarray(m) for m, _ in operands], [t for _, t in operands]
    workspace_bytes = max(cusv.workspace_bytes(n_qubits, m.data.ptr, len(t)) for m, t in zip(matrices, targets))
    workspace = cp.empty(workspace_bytes, dtype=cp.uint8) if workspace_bytes else None
    state = cp.zeros(1 << n_qubits, dtype=cp.complex128)

    def apply(i):
        cusv.apply_matrix(state.data.ptr, n_qubits, matrices[i].data.ptr, targets[i],
                          workspace.data.ptr if workspace is not None else None, workspace_bytes)

    # Warm-up (library set-up, lazily loaded kernels) with one gate per distinct target set, on the
    # buffer while it is still all zeros: it is reset to |0...0> below, so the timed run starts clean.
    first_gate_of_targets = {}
    for i, gate in enumerate(gates):
        first_gate_of_targets.setdefault(gate.targets, i)
    for i in first_gate_of_targets.values():
        apply(i)
    state.fill(0)
    state[0] = 1
    cp.cuda.Device().synchronize()
    marks = []
    for i in range(len(gates)):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        apply(i)
        stop.record()
        marks.append((start, stop))
    marks[-1][1].synchronize()  # once, at the end: no host wait between gates
    return state, [cp.cuda.get_elapsed_time(a, b) / 1e3 for a, b in marks], workspace_bytes


def floor_seconds_per_gate(n_qubits: int, bandwidth_Bps: float) -> float:
    """Read and write a complex128 state once (16 bytes per amplitude, twice) at the copy bandwidth."""
    return 32 * (1 << n_qubits) / bandwidth_Bps


def summarize(engine: str, gate_times_s, floor_s: float, custatevec_total_s=None) -> dict:
    """One table row: gates, total, median and max per gate, total over the floor, total over cuStateVec's."""
    times = np.asarray(gate_times_s, dtype=float)
    total = float(times.sum())
    return {"engine": engine, "gates": len(times), "total_s": total, "median_ms": 1e3 * float(np.median(times)),
            "max_ms": 1e3 * float(times.max()), "x_floor": total / (len(times) * floor_s),
            "x_custatevec": total / custatevec_total_s if custatevec_total_s else None}


def three_states_fit(n_qubits: int, total_device_bytes: int) -> bool:
    """Whether cuStateVec's final state can be kept beside a backend's state and the spare buffer some
    backends take (90% of the GPU's memory): N = 30 on 80 GB yes, N = 31 there no."""
    return 3 * 16 * (1 << n_qubits) <= 0.9 * total_device_bytes


def max_abs_difference(a, b, xp, chunk: int = COMPARE_CHUNK) -> float:
    """max |a - b| computed in chunks, so no temporary as large as the state is allocated."""
    return max(float(xp.abs(a[i:i + chunk] - b[i:i + chunk]).max()) for i in range(0, a.size, chunk))


def sample_indices(n_qubits: int, seed: int) -> np.ndarray:
    """A few fixed amplitude indices besides 0, compared when whole states cannot be."""
    rng = np.random.default_rng([seed, 2])
    return np.unique(rng.integers(1, 1 << n_qubits, size=min(SAMPLED_AMPLITUDES, (1 << n_qubits) - 1)))


def run_backend(label, circuit, floor_s, reference, cp) -> tuple:
    """(table row, JSON record) of one backend's run of the circuit, compared with `reference`."""
    name, options = parse_label(label)  # e.g. cublas@dmma_min_qubits=7
    simulator = Simulator(name, device="gpu", progress=False, **options)
    result = simulator.run(circuit)
    amp0 = result.amplitude(0)
    record = {"gate_time_s": result.gate_times_s, "amplitude_0": amp0, "prepare_time_s": result.prepare_time_s,
              "peak_memory_bytes": result.peak_memory_bytes, "backend_statistics": result.backend_statistics,
              "per_gate": result.gate_info}
    row = summarize(label, result.gate_times_s, floor_s, reference and reference["total_s"])
    if reference:
        row["amp0_diff"] = abs(amp0 - reference["amplitude_0"])
        if name == "cublas" and reference.get("state") is not None:
            row["max_diff"], row["compared"] = max_abs_difference(result.state, reference["state"], cp), "state"
        else:
            ours = cp.asnumpy(result.state[cp.asarray(reference["sample_indices"])])
            row["max_diff"] = float(np.abs(ours - reference["sample_values"]).max())
            row["compared"] = f"{len(ours)} amps"
    del result, simulator
    return row, record


def save_circuit(path, circuit, description) -> None:
    """The circuit's gates (targets in their order, complex128 matrices) and its description, as
    an .npz that load_circuit reads back; written whole or not at all."""
    arrays = {"n_qubits": np.int64(circuit.n_qubits), "description": np.array(json.dumps(description))}
    for i, gate in enumerate(circuit.gates):
        arrays[f"targets_{i}"] = np.asarray(gate.targets, dtype=np.int64)
        arrays[f"matrix_{i}"] = np.asarray(gate.matrix, dtype=np.complex128)
    with atomic_output(path, binary=True) as handle:
        np.savez(handle, **arrays)


def load_circuit(path) -> tuple:
    """(circuit, description) of a save_circuit file; CircuitError when it is missing or not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            count = sum(name.startswith("targets_") for name in data.files)
            gates = [Gate(tuple(int(t) for t in data[f"targets_{i}"]), data[f"matrix_{i}"], name=f"g{i}")
                     for i in range(count)]
            saved = json.loads(str(data["description"]))
            source = {key: saved[key] for key in ("qasm", "brickwork") if key in saved}
            source["fused_when_saved"] = saved.get("fuse")
            return Circuit(int(data["n_qubits"]), gates), {**source, "circuit_file": str(path)}
    except (OSError, KeyError, ValueError) as exc:
        raise CircuitError(f"--circuit {str(path)!r} is not a circuit written by --save-circuit: {exc}") from None


def build_circuit(args) -> tuple:
    """(circuit, description) that the arguments ask for: the brickwork of --qubits, --gate-size,
    --depth and --seed (BRICKWORK_DEFAULTS for those not given), the --qasm program, or the gates
    of a --circuit file; fused to --fuse K qubits when K >= 1 is given (0: not fused), a program to
    DEFAULT_QASM_FUSION otherwise. Raises a one-line CircuitError for a refused combination,
    K < 0, a file or program that does not load, or a program that is not unitary."""
    if args.fuse is not None and args.fuse < 0:
        raise CircuitError(f"--fuse must be >= 0 (0: no fusion), got {args.fuse}")
    if args.circuit is not None:
        used = [flag for flag, value in (("--qasm", args.qasm), *(
            (f"--{key.replace('_', '-')}", getattr(args, key)) for key in BRICKWORK_DEFAULTS)) if value is not None]
        if used:
            raise CircuitError(f"--circuit runs the saved gates; {', '.join(used)} cannot be used with it")
        (circuit, source), fuse = load_circuit(args.circuit), args.fuse
    elif args.qasm is None:
        shape = {key: default if getattr(args, key) is None else getattr(args, key)
                 for key, default in BRICKWORK_DEFAULTS.items()}
        circuit = brickwork(shape["qubits"], shape["gate_size"], shape["depth"], shape["seed"])
        source, fuse = {"brickwork": shape}, args.fuse
    else:
        circuit, source = load_qasm(args), {"qasm": args.qasm}
        fuse = DEFAULT_QASM_FUSION if args.fuse is None else args.fuse
    source["gates_before_fusion"] = len(circuit)
    if fuse:
        circuit = circuits.fuse(circuit, fuse)
    return circuit, {**source, "fuse": fuse or None, **describe_gates(circuit)}


def load_qasm(args):
    """The --qasm program as a Circuit of unitary gates only; CircuitError when a brickwork flag
    is given too, the file is missing or unreadable, or the program measures, resets or branches."""
    shaping = [f"--{key.replace('_', '-')}" for key in BRICKWORK_DEFAULTS if getattr(args, key) is not None]
    if shaping:
        raise CircuitError(f"{', '.join(shaping)} shape a brickwork circuit and cannot be used with --qasm "
                           "(the program sets the qubits; --fuse K sets the gate size)")
    if not os.path.isfile(args.qasm):
        raise CircuitError(f"--qasm {args.qasm!r} is not a file")
    circuit = circuits.from_qasm(args.qasm)
    problem = non_unitary_operation(circuit)
    if problem:
        raise CircuitError(f"--qasm {args.qasm!r} is not unitary: {problem}; cuStateVec and the backends are "
                           "compared on unitary gates only, so remove measure, reset and if statements")
    return circuit


def non_unitary_operation(circuit):
    """What first keeps `circuit` from being a plain product of gates (a measurement, a reset, a
    classically conditioned gate, final measurements), or None when nothing does."""
    for position, operation in enumerate(circuit.gates):
        if operation.condition is not None:
            return f"operation {position} ({operation.name}) is classically conditioned"
        if not isinstance(operation, Gate):
            kind = "measures" if isinstance(operation, Measure) else "resets"
            return f"operation {position} {kind} qubits {list(operation.qubits)}"
    if circuit.measured:
        return f"it measures qubits {list(circuit.measured)} at the end"
    return None


def describe_gates(circuit) -> dict:
    """The gates as the engines see them: qubits, count, {size: count} in increasing size, and how
    many act on non-contiguous qubits (sorted targets not a run q, q+1, ...) or list them unsorted."""
    targets = [gate.targets for gate in circuit.gates]
    sizes = [len(t) for t in targets]
    return {"qubits": circuit.n_qubits, "gates": len(targets),
            "gate_sizes": {size: sizes.count(size) for size in sorted(set(sizes))},
            "noncontiguous_gates": sum(max(t) - min(t) + 1 != len(t) for t in targets),
            "unsorted_gates": sum(list(t) != sorted(t) for t in targets)}


def circuit_line(description: dict) -> str:
    """One line naming the circuit that ran, for the output above the table."""
    if "qasm" in description:
        source = f"{description['qasm']} ({description['gates_before_fusion']} gates imported)"
    else:
        source = "brickwork " + ", ".join(f"{key} {value}" for key, value in description["brickwork"].items())
    if "circuit_file" in description:
        saved_fusion = description["fused_when_saved"]
        source += f", saved {'unfused' if saved_fusion is None else f'fused to <= {saved_fusion}'} in {description['circuit_file']}"
    fused = "unfused" if description["fuse"] is None else f"fused to <= {description['fuse']} qubits"
    sizes = ", ".join(f"{size}q x{count}" for size, count in description["gate_sizes"].items())
    return (f"circuit: {source}, {fused}: {description['gates']} gates on {description['qubits']} qubits "
            f"({sizes}); {description['noncontiguous_gates']} on non-contiguous targets, "
            f"{description['unsorted_gates']} with unsorted targets")


def git_commit():
    try:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def fail(program: str, message: str):
    print(f"{program}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    brick = BRICKWORK_DEFAULTS  # the brickwork flags default to None, so that --qasm can refuse them when given
    parser.add_argument("--qubits", type=int, help=f"brickwork qubits (default {brick['qubits']})")
    parser.add_argument("--gate-size", type=int, help=f"brickwork gate size (default {brick['gate_size']})")
    parser.add_argument("--depth", type=int, help=f"brickwork layers (default {brick['depth']})")
    parser.add_argument("--seed", type=int, help=f"brickwork seed (default {brick['seed']})")
    parser.add_argument("--qasm", metavar="PATH", help="benchmark this OpenQASM 2/3 program (unitary) instead")
    parser.add_argument("--circuit", metavar="PATH", help="benchmark the gates saved by --save-circuit instead")
    parser.add_argument("--save-circuit", metavar="PATH",
                        help="write the circuit's (fused) gates to PATH (.npz) and exit, without a GPU")
    parser.add_argument("--fuse", type=int, metavar="K", help="fuse gates into blocks of at most K >= 1 qubits "
                        f"(default {DEFAULT_QASM_FUSION} with --qasm, unfused brickwork)")
    parser.add_argument("--backends", default="cublas,int8-auto", help="comma-separated labels name[@option=value...], e.g. cublas@dmma_min_qubits=7")
    parser.add_argument("--custatevec-lib", metavar="PATH",
                        help="libcustatevec.so (default: $CUSTATEVEC_LIB, cusv/, .cusv/)")
    parser.add_argument("--device", default="gpu", choices=["gpu", "cpu"], help="gpu only (cpu is refused)")
    parser.add_argument("--json", metavar="PATH")
    return parser


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.json:
        check_output_path_or_exit(args.json, "--json", parser.prog)
    if args.save_circuit:
        check_output_path_or_exit(args.save_circuit, "--save-circuit", parser.prog)
    if args.device == "cpu":
        fail(parser.prog, "--device cpu is not supported: cuStateVec runs only on a CUDA GPU")
    labels = [b for b in args.backends.split(",") if b]
    try:  # before the GPU is looked at: a refused circuit or backend ends the run at once, anywhere
        for label in labels:
            gemm_backend.accepted_options(parse_label(label)[0])  # unknown names end the run before any work
        circuit, description = build_circuit(args)
    except (gemm_backend.BackendError, SimulationError, ValueError) as exc:
        fail(parser.prog, str(exc))
    if args.save_circuit:
        save_circuit(args.save_circuit, circuit, description)
        print(f"{circuit_line(description)}\nwritten to {args.save_circuit}")
        return 0
    if not gpu_available():
        fail(parser.prog, "no CUDA GPU is visible to cupy; this benchmark compares GPU engines and needs one")
    library, missing = find_custatevec_library(args.custatevec_lib)
    if args.custatevec_lib and library is None:
        fail(parser.prog, missing)  # asked for by name: a typo should not cost a run without cuStateVec
    cp = cupy_module()
    out_of_memory = cp.cuda.memory.OutOfMemoryError
    device = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    bandwidth = copy_bandwidth(True)
    floor_s = floor_seconds_per_gate(circuit.n_qubits, bandwidth)
    print(f"device {device}, copy bandwidth {bandwidth / 1e12:.3f} TB/s, floor {floor_s * 1e3:.2f} ms/gate, "
          f"{len(circuit.gates)} gates on {circuit.n_qubits} qubits")
    print(circuit_line(description))
    report = {"args": vars(args), "commit": git_commit(), "device": device, "copy_bandwidth_Bps": bandwidth,
              "floor_s_per_gate": floor_s, "gates": len(circuit.gates), "circuit": description,
              "custatevec": None, "backends": {}}
    rows, reference = [], None
    if library is not None:
        try:
            cusv = CuStateVec(library)
            try:
                state, times, workspace_bytes = run_custatevec(cusv, circuit, cp)
            finally:
                cusv.close()
        except (OSError, AttributeError, RuntimeError, out_of_memory) as exc:  # load, symbol, call, memory
            library, missing = None, f"cuStateVec from {library} failed: {exc}"
    if library is None:
        print(missing)
        report["custatevec_unavailable"] = missing
    else:
        row = summarize("custatevec", times, floor_s, sum(times))
        rows.append(row)
        indices = sample_indices(circuit.n_qubits, BRICKWORK_DEFAULTS["seed"] if args.seed is None else args.seed)
        reference = {"total_s": row["total_s"], "amplitude_0": complex(state[:1].get()[0]),
                     "sample_indices": indices, "sample_values": cp.asnumpy(state[cp.asarray(indices)])}
        report["custatevec"] = {"library": library, "version": cusv.version, "workspace_bytes": workspace_bytes,
                                "gate_time_s": times, "amplitude_0": reference["amplitude_0"]}
        whole = any(b.partition(":")[0] == "cublas" for b in labels)
        if whole and three_states_fit(circuit.n_qubits, cp.cuda.runtime.memGetInfo()[1]):
            reference["state"] = state  # kept for the cublas comparison, freed right after it
        elif whole:
            print("cublas is compared with cuStateVec over sampled amplitudes: three states do not fit in memory")
        del state
    cp.get_default_memory_pool().free_all_blocks()
    # cublas first, so that a kept cuStateVec state is freed before the other backends need the memory.
    for label in sorted(labels, key=lambda b: b.partition(":")[0] != "cublas"):
        print(f"-- {label}", flush=True)
        try:
            row, report["backends"][label] = run_backend(label, circuit, floor_s, reference, cp)
        except (SimulationError, gemm_backend.BackendError, out_of_memory) as exc:
            row, report["backends"][label] = {"engine": label}, {"error": str(exc)}
            print(f"   {exc}")
        rows.append(row)
        if reference:
            reference.pop("state", None)
        cp.get_default_memory_pool().free_all_blocks()
    rows.sort(key=lambda r: ["custatevec", *labels].index(r["engine"]))
    report["rows"] = rows
    if args.json:
        write_json(args.json, report)
    print(circuit_line(description))
    print_table(rows, COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
