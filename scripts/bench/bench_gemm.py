"""Time and accuracy of complex GEMM backends on square and state-vector shapes.

For square n x n x n (n = 1024..8192 on the GPU) and the shapes of a d-qubit gate on an N-qubit
state, (m, k, n) = (2^(N-d), 2^d, 2^d) for d = 5..10, runs each registry backend on random
complex inputs and reports the median time over several runs after a warm-up (CUDA events on
the GPU), the effective TFLOP/s (8 m n k / time) and the error against the double-double
reference gemm_backend.doubledouble.matmul_dd, computed on a sample of rows of A and columns of B
(on the run's device): mean and max of |c_ij - r_ij| / |r_ij| and max |C - R| / max |R| over the
sample; and the speed-up over cublas on the same case when cublas is among the backends. For
int8-auto it also reports the scheme it chose (ozaki1: Ozaki-I with "splits" digits; ozaki2:
Ozaki-II with "moduli" moduli; zgemm: the native fallback) and, under its default FP64
contract, the span estimate and both schemes' modelled times behind the choice (JSON); for
int8-crt-<m> the number of moduli.

Inputs (--inputs): "phi", the seed paper's uniform(-0.5, 0.5) * exp(phi * normal(0, 1)), once for
every value of --phi; "normal", standard normal; "uniform", uniform on (0, 1]; real and imaginary
parts drawn independently. Never zeros: an input without a nonzero entry stops the run.

    python scripts/bench/bench_gemm.py --device gpu --backends cublas,int8-9,int8-13,int8-auto \\
        --shapes square state --qubits 28 --json bench.json
    python scripts/bench/bench_gemm.py --device cpu --sizes 256 --qubits 14 --gate-sizes 5 6
    python scripts/bench/bench_gemm.py --backends int8-auto --option rho=1 --option workspace_bytes=8589934592
    python scripts/bench/bench_gemm.py --device gpu --backends cublas,int8-crt-14,int8-crt-15,int8-crt-16 \
        --shapes square --sizes 8192 16384 --error-cols 256 --option workspace_bytes=17179869184
    python scripts/bench/bench_gemm.py --device gpu --backends cublas,int8-auto,int8-crt-15,int8-crt-16 \
        --shapes square --sizes 8192 16384 --inputs phi --phi 1 4 --error-rows 64 --error-cols 256 \
        --repeats 3 --json square_contract.json
"""
import argparse
import json
import sys

import numpy as np

import gemm_backend
from gemm_backend.arrays import to_host
from gemm_backend.doubledouble import matmul_dd, matmul_dd_bytes
from qsim.device import resolve_device
from qsim.output import check_output_path_or_exit, write_json
from qsim.state import MEMORY_FRACTION
from qsim.benchmarking import median_time, print_table

DEFAULT_BACKENDS = "cublas," + ",".join(f"int8-{s}" for s in range(6, 14)) + ",int8-auto,int8-crt-14,int8-crt-16"
DEFAULT_SQUARE_SIZES = {"gpu": [1024, 2048, 4096, 8192], "cpu": [256, 512]}
DEFAULT_QUBITS = {"gpu": 28, "cpu": 16}
INPUT_KINDS = ("phi", "normal", "uniform")
TABLE_COLUMNS = [
    ("shape", "shape", "{}"), ("m", "m", "{}"), ("k", "k", "{}"), ("n", "n", "{}"), ("input", "input", "{}"),
    ("backend", "backend", "{}"), ("time_ms", "time ms", "{:.3f}"), ("tflops", "TFLOP/s", "{:.3g}"),
    ("x_cublas", "x cublas", "{:.2f}"), ("rel_err_mean", "rel err mean", "{:.2e}"), ("rel_err_max", "rel err max", "{:.2e}"),
    ("rel_err_norm", "normwise", "{:.2e}"), ("scheme", "scheme", "{}"), ("splits", "splits", "{}"),
    ("moduli", "moduli", "{}"), ("gaussian", "gaussian", "{}"),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--backends", default=DEFAULT_BACKENDS,
                        help="comma-separated registry names (`qsim backends`), each optionally name@option=value")
    parser.add_argument("--option", action="append", default=[], metavar="[BACKEND:]KEY=VALUE",
                        help="backend option, for every backend that takes KEY or only for BACKEND; repeatable")
    parser.add_argument("--shapes", nargs="+", default=["square", "state"], choices=["square", "state"])
    parser.add_argument("--sizes", nargs="+", type=int,
                        help="square sizes n (default: 1024..8192 on the GPU, 256 512 on the CPU)")
    parser.add_argument("--qubits", type=int,
                        help="N for the state-vector shapes (default 28 on the GPU, 16 on the CPU)")
    parser.add_argument("--gate-sizes", nargs="+", type=int, default=list(range(5, 11)),
                        help="d for the state-vector shapes")
    parser.add_argument("--inputs", nargs="+", default=list(INPUT_KINDS), choices=INPUT_KINDS)
    parser.add_argument("--phi", type=float, nargs="+", default=[1.0],
                        help="exponent spread of the 'phi' inputs; several values give one input each")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per case (median reported)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before timing")
    parser.add_argument("--error-rows", type=int, default=64, help="rows of A checked against double-double")
    parser.add_argument("--error-cols", type=int, default=0,
                        help="columns of B checked against double-double (default 0: all; the reference holds "
                             "about 11 float64 copies of the columns it checks at once, so it runs on as many "
                             "columns at a time as the free memory takes, and the case is refused before any "
                             "timing when not even one fits)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    args = parser.parse_args(argv)
    if args.json:
        check_output_path_or_exit(args.json, "--json", parser.prog)
    if args.repeats < 1 or args.warmup < 0 or args.error_rows < 1 or args.error_cols < 0:
        parser.error("--repeats and --error-rows must be >= 1, --warmup and --error-cols >= 0")
    if any(d < 1 for d in args.gate_sizes):
        parser.error("--gate-sizes must be >= 1")
    return args


def parse_options(specs: list, backend_names: list) -> dict:
    """{backend label: {key: value}} from the labels' own options (gemm_backend.parse_label:
    name@option=value) and [BACKEND:]KEY=VALUE specs (values read by gemm_backend.parse_option).
    Without BACKEND an option goes to every backend that accepts it (rho: int8-auto, not
    int8-<s>), and must suit at least one."""
    try:
        options = {label: gemm_backend.parse_label(label)[1] for label in backend_names}
    except gemm_backend.BackendError as exc:
        raise SystemExit(f"--backends: {exc}") from None
    for spec in specs:
        target, _, assignment = spec.rpartition(":")
        key, sep, text = assignment.partition("=")
        if not sep or not key:
            raise SystemExit(f"--option {spec!r}: expected [BACKEND:]KEY=VALUE")
        if target and target not in options:
            raise SystemExit(f"--option {spec!r}: backend {target!r} is not in --backends")
        rejections = []
        for label in [target] if target else backend_names:
            name = gemm_backend.parse_label(label)[0]
            try:
                value = gemm_backend.parse_option(name, key, text)
                gemm_backend.get(name, **options[label], **{key: value})
            except gemm_backend.BackendError as exc:
                rejections.append(str(exc))
                continue
            options[label][key] = value
        if len(rejections) == (1 if target else len(backend_names)):
            raise SystemExit(f"--option {spec!r}: " + "; ".join(rejections))
    return options


def shapes(args, device_kind: str) -> list:
    """(label, m, k, n) of every case."""
    cases = []
    if "square" in args.shapes:
        cases += [("square", n, n, n) for n in args.sizes or DEFAULT_SQUARE_SIZES[device_kind]]
    if "state" in args.shapes:
        qubits = args.qubits or DEFAULT_QUBITS[device_kind]
        for d in args.gate_sizes:
            if d > qubits:
                raise SystemExit(f"--gate-sizes {d} exceeds --qubits {qubits}")
            cases.append((f"state N={qubits} d={d}", 1 << (qubits - d), 1 << d, 1 << d))
    return cases


def random_matrix(rng, shape: tuple, kind: str, phi: float) -> np.ndarray:
    """Complex128 (shape) drawn by the numpy Generator rng (the same on every device)."""
    def part():
        if kind == "phi":
            return rng.uniform(-0.5, 0.5, shape) * np.exp(phi * rng.standard_normal(shape))
        if kind == "normal":
            return rng.standard_normal(shape)
        return 1.0 - rng.random(shape)  # uniform on (0, 1]

    matrix = part() + 1j * part()
    if not np.abs(matrix).max() > 0:
        raise SystemExit(f"{kind} input of shape {shape} came out all zeros; refusing to time it")
    return matrix


def reference_columns(rows: int, k: int, n: int, budget: int) -> int:
    """The most columns of B (at most n) whose double-double reference for `rows` rows of A fits in
    budget bytes (matmul_dd_bytes); 0 when not even one does."""
    low, high = 0, n
    while low < high:  # the largest c with matmul_dd_bytes(rows, k, c) <= budget: it grows with c
        middle = (low + high + 1) // 2
        if matmul_dd_bytes(rows, k, middle) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def reference_budget(device) -> int:
    """Bytes the reference may allocate now: the run's share of the device's free memory."""
    return int(device.free_bytes() * MEMORY_FRACTION)


def check_reference_fits(cases: list, error_rows: int, device) -> None:
    """Refuse, before any timing, a case whose reference cannot run even one column at a time beside
    its inputs and one result (a, b and c, complex128), as the reference would after the timed runs."""
    budget = reference_budget(device)
    for label, m, k, n in cases:
        held = 16 * (m * k + k * n + m * n)
        needed = held + matmul_dd_bytes(min(m, error_rows), k, 1)
        if needed > budget:
            raise SystemExit(f"error: case {label} ({m} x {k} x {n}) needs {needed / 2**30:.2f} GiB on the "
                             f"{device.kind} for its inputs, a result and the double-double reference of one column, "
                             f"but it may take {budget / 2**30:.2f} GiB ({MEMORY_FRACTION:.0%} of the free memory); use smaller "
                             "sizes or fewer --error-rows")


def error_against_dd(c_rows, a_rows, b, device) -> tuple:
    """(mean, max) over entries of |c - ref| / |ref|, and max |c - ref| / max |ref|, with
    ref = hi + lo from matmul_dd, on blocks of B's columns that fit the memory free now (matmul_dd
    holds slices of all the B it is given)."""
    rows, k = a_rows.shape
    n = b.shape[1]
    step = reference_columns(rows, k, n, reference_budget(device))
    if step == 0:
        raise SystemExit(f"error: the double-double reference of {rows} rows of ({rows} x {k}) @ ({k} x {n}) does not "
                         f"fit in the free {device.kind} memory even one column at a time")
    c_rows = to_host(c_rows)
    total, count, largest, largest_distance, largest_reference = 0.0, 0, 0.0, 0.0, 0.0
    for start in range(0, n, step):
        columns = slice(start, min(n, start + step))
        hi, lo = (to_host(t) for t in matmul_dd(a_rows, b[:, columns]))
        scale = np.abs(hi)
        nonzero = scale > 0
        distance = np.abs((c_rows[:, columns] - hi) - lo)
        relative = distance[nonzero] / scale[nonzero]
        total, count = total + float(relative.sum()), count + relative.size
        largest = max(largest, float(relative.max(initial=0.0)))
        largest_distance = max(largest_distance, float(distance.max(initial=0.0)))
        largest_reference = max(largest_reference, float(scale.max(initial=0.0)))
    normwise = largest_distance / largest_reference if largest_reference else float("nan")
    return (total / count if count else float("nan")), largest, normwise


def run_case(backend, a, b, sample_rows, sample_cols, device, args) -> dict:
    m, k = a.shape
    n = b.shape[1]
    result = {}

    def call():
        result["c"] = backend.matmul(a, b)

    backend.reset_statistics()
    seconds = median_time(call, device.on_gpu, repeats=args.repeats, warmup=args.warmup)
    mean_error, max_error, normwise_error = error_against_dd(result["c"][sample_rows][:, sample_cols],
                                                             a[sample_rows], b[:, sample_cols], device)
    stats = backend.statistics()
    info = backend.last_call_info
    row = {"backend": backend.name, "options": backend.options, "time_ms": seconds * 1e3,
           "tflops": 8.0 * m * n * k / seconds / 1e12, "rel_err_mean": mean_error, "rel_err_max": max_error,
           "rel_err_norm": normwise_error, "error_rows": int(len(sample_rows)),
           "error_cols": n if isinstance(sample_cols, slice) else int(sample_cols.size)}
    row.update(scheme_columns(info))
    if "splits_histogram" in stats:
        row["splits_histogram"] = {str(s): count for s, count in stats["splits_histogram"].items()}
        row["fallbacks"] = stats["fallbacks"]
    del result["c"]
    return row


def scheme_columns(info: dict) -> dict:
    """What an INT8 backend's last call did: "scheme" (ozaki1, ozaki2, or zgemm for int8-auto's
    native fallback), "splits" (and the plan) or "moduli" and "gaussian", and int8-auto's contract details
    ("span_bits", "estimate", "model_s") where it reports them; {} for other backends."""
    columns = {}
    if info.get("fallback"):
        columns["scheme"] = info["fallback"]
    elif "scheme" in info:
        columns["scheme"] = info["scheme"]
    if "moduli" in info:
        columns["moduli"] = info["moduli"]
        columns["gaussian"] = bool(info.get("gaussian"))  # Gaussian moduli (int8-gcrt)
    if info.get("splits") is not None:
        columns["splits"] = info["splits"]
        columns["plan"] = {key: info[key] for key in ("splits_a", "splits_b", "top", "pairs") if key in info}
    for key in ("rule", "span_bits", "estimate", "model_s"):
        if key in info:
            columns[key] = info[key]
    return columns


def add_speedups(case_rows: list) -> None:
    """x_cublas = cublas's time / the row's time, for the rows of one case (same shape and
    input, same run) when cublas ran on it."""
    native = next((row["time_ms"] for row in case_rows if row["backend"] == "cublas"), None)
    for row in case_rows:
        row["x_cublas"] = native / row["time_ms"] if native else None


def main(argv=None) -> int:
    args = parse_args(argv)
    device = resolve_device(args.device)
    xp = device.xp
    names = [name.strip() for name in args.backends.split(",") if name.strip()]
    options = parse_options(args.option, names)
    try:
        backends = [gemm_backend.get(gemm_backend.parse_label(label)[0], **options[label]) for label in names]
    except gemm_backend.BackendError as exc:
        raise SystemExit(f"error: {exc}") from None
    cases = shapes(args, device.kind)
    check_reference_fits(cases, args.error_rows, device)
    print(f"device: {device.name()}; backends: {', '.join(names)}; inputs: {', '.join(args.inputs)}"
          f" (phi = {', '.join(f'{phi:g}' for phi in args.phi)}); median of {args.repeats} after {args.warmup} warm-up",
          flush=True)
    rows = []
    inputs = [(kind, phi) for kind in args.inputs for phi in (args.phi if kind == "phi" else [None])]
    for label, m, k, n in cases:
        for kind, phi in inputs:
            rng = np.random.default_rng(args.seed)
            a = xp.asarray(random_matrix(rng, (m, k), kind, phi))
            b = xp.asarray(random_matrix(rng, (k, n), kind, phi))
            sample_rows = xp.asarray(np.sort(rng.choice(m, min(m, args.error_rows), replace=False)))
            sample_cols = slice(None)  # all columns, without a copy of b
            if 0 < args.error_cols < n:
                sample_cols = xp.asarray(np.sort(rng.choice(n, args.error_cols, replace=False)))
            case_rows = []
            for backend in backends:
                row = {"shape": label, "m": m, "k": k, "n": n, "input": kind if phi is None else f"phi={phi:g}",
                       "device": device.name()}
                row.update(run_case(backend, a, b, sample_rows, sample_cols, device, args))
                case_rows.append(row)
            add_speedups(case_rows)
            for row in case_rows:
                print(json.dumps(row), flush=True)
            rows += case_rows
            del a, b
            if device.on_gpu:
                xp.get_default_memory_pool().free_all_blocks()
    if args.json:
        write_json(args.json, rows, indent=1)
    print()
    print_table(rows, TABLE_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
