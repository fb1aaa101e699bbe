"""Helpers of the benchmark and experiment scripts (scripts/bench, scripts/dev), installed with the
package so that every script finds them: timing by CUDA events on the GPU and perf_counter on the
CPU, the copy bandwidth, target choices, text tables and launch-variant rows."""
import argparse
import time

import numpy as np

from gemm_backend.arrays import cupy_module


def median_time(fn, on_gpu: bool, repeats: int = 7, warmup: int = 2, batch: int = 1) -> float:
    """Median seconds of fn() over `repeats` samples after `warmup` untimed runs. A sample on the
    GPU times `batch` back-to-back calls between two events and divides by batch: the host then
    queues the next call while the GPU runs the current one, as in a simulation, so host-side
    launch work shows only where it is longer than the GPU's."""
    for _ in range(warmup):
        fn()
    times = []
    if on_gpu:
        cp = cupy_module()
        cp.cuda.Device().synchronize()
        for _ in range(repeats):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(batch):
                fn()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / batch)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def copy_bandwidth(on_gpu: bool, nbytes: int = 1 << 31) -> float:
    """Measured device copy bandwidth in bytes/s, counting bytes read plus bytes written."""
    xp = cupy_module() if on_gpu else np
    src = xp.ones(nbytes // 8, dtype=xp.float64)
    dst = xp.empty_like(src)
    seconds = median_time(lambda: xp.copyto(dst, src), on_gpu)
    return 2 * src.nbytes / seconds


def gpu_state_and_floor(n_qubits: int, seed: int = 1) -> tuple:
    """(state, floor): a random unit (2^n,) complex128 cupy state (never zeros) and the memory
    floor of one gate on it in seconds (read and write it once at the measured copy bandwidth)."""
    cp = cupy_module()
    rng = cp.random.default_rng(seed)
    state = rng.standard_normal(1 << n_qubits) + 1j * rng.standard_normal(1 << n_qubits)
    state /= cp.linalg.norm(state)
    return state, 32 * (1 << n_qubits) / copy_bandwidth(True)


def print_table(rows: list, columns: list) -> None:
    """Aligned text table; columns are (key, header, format)."""
    cells = [[fmt.format(row[key]) if row.get(key) is not None else "-" for key, _, fmt in columns] for row in rows]
    headers = [header for _, header, _ in columns]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths)))
    for c in cells:
        print("  ".join(v.rjust(w) for v, w in zip(c, widths)))


def first_targets(n_qubits: int, d: int, names) -> list:
    """The first target qubits asked for: integers, 'middle' or 'top'."""
    named = {"middle": (n_qubits - d) // 2, "top": n_qubits - d}
    targets = [named[n] if n in named else int(n) for n in names]
    return sorted({q for q in targets if 0 <= q <= n_qubits - d})


def variant_arguments(description: str, qubits: int, gate_sizes: list, shapes: bool = False):
    """The parsed command line of a launch-variant script: --qubits, --gate-sizes, --targets
    (first_targets names), --repeats and, with shapes, --shapes (launch tags to keep, all if absent)."""
    parser = argparse.ArgumentParser(description=description)
    if shapes:
        parser.add_argument("--shapes", nargs="+", help="tags of the launches to time (say W4Q3sN32B1g2)")
    parser.add_argument("--qubits", type=int, default=qubits)
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=gate_sizes)
    parser.add_argument("--targets", nargs="+", default=["0", "1", "12", "top"])
    parser.add_argument("--repeats", type=int, default=5)
    return parser.parse_args()


def variant_cells(variants, floor: float, repeats: int) -> str:
    """One row of a launch-variant table: for each (tag, call) the median GPU time of call() over
    `floor` seconds, the fastest starred; a variant that fails to launch shows its error instead."""
    cp = cupy_module()
    results = []
    for tag, call in variants:
        try:
            results.append((median_time(call, True, repeats, batch=3), tag))
        except cp.cuda.driver.CUDADriverError as exc:
            results.append((float("inf"), f"{tag}: {exc}"[:60]))
    best = min(results)[0]
    return "  ".join(f"{name} {t / floor:.2f}{'*' if t == best else ''}" for t, name in results)
