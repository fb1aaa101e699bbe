"""Error and time of fp16x2 by block size, beside cgemm and fp16: the table behind fp16x2's default block.

For uniform(0, 1] and normal(0, 1) complex inputs (independent real and imaginary parts; random
data, never zero-filled, since tensor-core speed depends on the data), on square products
k = m = n = 1024..8192 and on the state-vector shapes (m, k, n) = (2^(N-d), 2^d, 2^d), d = 5..10,
runs fp16x2 with blocks of 16, 32, ..., k inner indices and unblocked (0), block sums in FP32 and
FP64, beside cgemm and fp16. Error: max |C - ref| / max |ref| against the double-double product
(matmul_dd) on sampled rows and columns. Time: median of --repeats runs after --warmup runs
(CUDA events on the GPU). Throughput counts 8 m k n real flops per complex product.

The detailed table comes first; the compact table printed last gives, per shape and input, the
baselines, unblocked fp16x2, the default block, and the fastest fp16x2 whose error is at most
2x cgemm's (the issue's goal: that one >= 4x cgemm's throughput at d >= 8).

    python scripts/bench/bench_fp16_blocks.py --device gpu --json fp16_blocks.json
    python scripts/bench/bench_fp16_blocks.py --device cpu          # small sizes
"""
import argparse

import numpy as np

import gemm_backend
from gemm_backend.arrays import to_host
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.multiword_words import DEFAULT_BLOCK, default_block
from qsim.device import resolve_device
from qsim.output import check_output_path_or_exit, write_json
from qsim.benchmarking import median_time, print_table

DISTRIBUTIONS = ("uniform", "normal")
ACCUMULATE = ("fp32", "fp64")
ERROR_GOAL = 2.0  # fp16x2 error at most this times cgemm's
DEFAULTS = {  # device kind -> square sizes, qubits, gate sizes
    "gpu": ([1024, 2048, 4096, 8192], 26, list(range(5, 11))),
    "cpu": ([256, 512], 14, list(range(5, 9))),
}


def draw(rng, shape, dist: str) -> np.ndarray:
    def real_part():
        return rng.standard_normal(shape) if dist == "normal" else 1.0 - rng.random(shape)

    return real_part() + 1j * real_part()


def block_sizes(k: int, smallest: int) -> list:
    """smallest, 2 smallest, ..., up to k (k itself included), then 0 (unblocked)."""
    sizes, block = [], smallest
    while block < k:
        sizes.append(block)
        block *= 2
    return sizes + [k, 0]


def configurations(k: int, smallest_block: int) -> list:
    """(label, registry name, options) for every backend run on one shape."""
    configs = [("cgemm", "cgemm", {}), ("fp16", "fp16", {})]
    for block in block_sizes(k, smallest_block):
        for accumulate in ACCUMULATE:
            configs.append((f"fp16x2 b={block} {accumulate}", "fp16x2", {"block": block, "accumulate": accumulate}))
    return configs


def bench_shape(shape_label, m, k, n, dist, device, args, rng) -> list:
    """Rows of the detailed table for one (m, k, n) product with inputs from `dist`."""
    xp = device.xp
    a_host, b_host = draw(rng, (m, k), dist), draw(rng, (k, n), dist)
    rows = np.sort(rng.choice(m, min(m, args.sample_rows), replace=False))
    cols = np.sort(rng.choice(n, min(n, args.sample_cols), replace=False))
    reference = matmul_dd(a_host[rows], b_host[:, cols])[0]
    a, b = xp.asarray(a_host), xp.asarray(b_host)
    del a_host
    results = []
    for label, name, options in configurations(k, args.smallest_block):
        backend = gemm_backend.get(name, **options)
        product = {}

        def run():
            product["c"] = backend.matmul(a, b)

        seconds = median_time(run, device.on_gpu, args.repeats, args.warmup)
        if not seconds > 0:
            raise RuntimeError(f"{label} on {shape_label}: measured time {seconds} s; timing is broken")
        sample = to_host(product.pop("c")[xp.asarray(rows)][:, xp.asarray(cols)])
        error = float(np.abs(sample - reference).max() / np.abs(reference).max())
        row = {"shape": shape_label, "m": m, "k": k, "n": n, "dist": dist, "backend": name, "label": label,
               "block": options.get("block"), "accumulate": options.get("accumulate"), "error": error,
               "ms": seconds * 1e3, "tflops": 8.0 * m * k * n / seconds / 1e12}
        print(f"  {shape_label:>22} {dist:>7} {label:>22}: error {error:.2e}, {seconds * 1e3:9.3f} ms", flush=True)
        results.append(row)
        if device.on_gpu:
            xp.get_default_memory_pool().free_all_blocks()
    cgemm = next(r for r in results if r["backend"] == "cgemm")
    for row in results:
        row["error_vs_cgemm"] = row["error"] / cgemm["error"]
        row["speedup_vs_cgemm"] = cgemm["ms"] / row["ms"]
    return results


def summarize(results: list) -> list:
    """One compact row per (shape, dist)."""
    summary = []
    keys = list(dict.fromkeys((r["shape"], r["dist"]) for r in results))
    for shape, dist in keys:
        group = [r for r in results if (r["shape"], r["dist"]) == (shape, dist)]
        by_label = {r["label"]: r for r in group}
        multiword = [r for r in group if r["backend"] == "fp16x2"]
        within_goal = [r for r in multiword if r["error_vs_cgemm"] <= ERROR_GOAL]
        best = max(within_goal, key=lambda r: r["speedup_vs_cgemm"]) if within_goal else None
        default = by_label.get(f"fp16x2 b={default_block(group[0]['k'])} fp32")
        unblocked = by_label["fp16x2 b=0 fp32"]
        summary.append({
            "shape": shape, "dist": dist,
            "cgemm_error": by_label["cgemm"]["error"], "cgemm_ms": by_label["cgemm"]["ms"],
            "fp16_error_vs_cgemm": by_label["fp16"]["error_vs_cgemm"],
            "unblocked_error_vs_cgemm": unblocked["error_vs_cgemm"],
            "unblocked_speedup": unblocked["speedup_vs_cgemm"],
            "default_error_vs_cgemm": default["error_vs_cgemm"] if default else None,
            "default_speedup": default["speedup_vs_cgemm"] if default else None,
            "best_within_goal": best["label"].removeprefix("fp16x2 ") if best else "none",
            "best_error_vs_cgemm": best["error_vs_cgemm"] if best else None,
            "best_speedup": best["speedup_vs_cgemm"] if best else None,
        })
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--square", type=int, nargs="*", help="square sizes k (default: GPU 1024..8192, CPU 256 512)")
    parser.add_argument("--qubits", type=int, help="N of the state-vector shapes (default: GPU 26, CPU 14)")
    parser.add_argument("--gate-sizes", type=int, nargs="*", help="d of the state-vector shapes (default: GPU 5..10)")
    parser.add_argument("--dists", nargs="+", default=list(DISTRIBUTIONS), choices=DISTRIBUTIONS)
    parser.add_argument("--smallest-block", type=int, default=16)
    parser.add_argument("--sample-rows", type=int, default=32, help="rows of C checked against double-double")
    parser.add_argument("--sample-cols", type=int, default=256, help="columns of C checked against double-double")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if args.json:
        check_output_path_or_exit(args.json, "--json", parser.prog)
    device = resolve_device(args.device)
    square, qubits, gate_sizes = DEFAULTS[device.kind]
    square = square if args.square is None else args.square
    qubits = qubits if args.qubits is None else args.qubits
    gate_sizes = gate_sizes if args.gate_sizes is None else args.gate_sizes
    shapes = [(f"square {k}", k, k, k) for k in square]
    shapes += [(f"N={qubits} d={d}", 1 << (qubits - d), 1 << d, 1 << d) for d in gate_sizes if d <= qubits]
    print(f"device {device.name()}; default fp16x2 block min({DEFAULT_BLOCK}, k // 2); error goal <= {ERROR_GOAL}x cgemm")
    rng = np.random.default_rng(args.seed)
    results = []
    for shape_label, m, k, n in shapes:
        for dist in args.dists:
            results += bench_shape(shape_label, m, k, n, dist, device, args, rng)
    print()
    print_table(results, [("shape", "shape", "{}"), ("dist", "dist", "{}"), ("label", "backend", "{}"),
                          ("error", "error", "{:.2e}"), ("error_vs_cgemm", "err/cgemm", "{:.2f}"),
                          ("ms", "ms", "{:.3f}"), ("tflops", "TFLOP/s", "{:.3g}"),
                          ("speedup_vs_cgemm", "x_cgemm", "{:.3g}")])
    summary = summarize(results)
    print()
    print_table(summary, [("shape", "shape", "{}"), ("dist", "dist", "{}"), ("cgemm_error", "cgemm_err", "{:.2e}"),
                          ("cgemm_ms", "cgemm_ms", "{:.3f}"), ("fp16_error_vs_cgemm", "fp16_err/c", "{:.0f}"),
                          ("unblocked_error_vs_cgemm", "b=0_err/c", "{:.2f}"), ("unblocked_speedup", "b=0_x", "{:.3g}"),
                          ("default_error_vs_cgemm", "auto_err/c", "{:.2f}"),
                          ("default_speedup", "auto_x", "{:.3g}"),
                          ("best_within_goal", f"fastest_err<={ERROR_GOAL:g}x", "{}"),
                          ("best_error_vs_cgemm", "its_err/c", "{:.2f}"), ("best_speedup", "its_x", "{:.3g}")])
    if args.json:
        write_json(args.json, {"device": device.name(), "default_block": DEFAULT_BLOCK, "args": vars(args),
                               "rows": results, "summary": summary})


if __name__ == "__main__":
    main()
