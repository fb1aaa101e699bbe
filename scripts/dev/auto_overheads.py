"""int8-auto's per-call costs beside its product, on the GPU: the host's plan choice (matmul_choice)
at 8192^3 phi = 1, and at 16384^3 phi = 4 (Ozaki-I tiles) the workspace each attempt of
Workspace.run was given, the tiles it cut and the seconds it took.

    python scripts/dev/auto_overheads.py
"""
import time

import cupy as cp

import gemm_backend
from gemm_backend.arrays import is_gpu_array
from gemm_backend.ozaki import backend as ozaki_backend
from gemm_backend.workspace import Workspace


def seed_paper(rng, n: int, phi: float):
    def part():
        return (rng.random((n, n)) - 0.5) * cp.exp(phi * rng.standard_normal((n, n)))
    return part() + 1j * part()


def choice_seconds(n: int, phi: float, rng) -> None:
    a, b = seed_paper(rng, n, phi), seed_paper(rng, n, phi)
    auto = gemm_backend.get("int8-auto")
    auto.matmul(a, b)
    statistics = auto._scan(a.view(cp.float64), b, 2, auto.workspace.for_call(is_gpu_array(a)))[2]
    times = []
    for _ in range(5):
        start = time.perf_counter()
        auto.split_rule.matmul_choice(n, n, n, True, statistics)
        times.append(time.perf_counter() - start)
    print(f"n={n} phi={phi}: host matmul_choice {sorted(times)[2] * 1e3:.2f} ms (median of 5)", flush=True)


def logged_attempts(n: int, phi: float, rng) -> None:
    a, b = seed_paper(rng, n, phi), seed_paper(rng, n, phi)
    original_run, original_tiles = Workspace.run, ozaki_backend.tile_sizes

    def run(self, on_gpu, body):
        def timed(workspace):
            start = time.perf_counter()
            try:
                return body(workspace)
            finally:
                cp.cuda.Device().synchronize()
                print(f"  attempt: workspace {workspace / 2**30:.2f} GiB, {time.perf_counter() - start:.2f} s", flush=True)
        return original_run(self, on_gpu, timed)

    def tile_sizes(*args):
        steps = original_tiles(*args)
        print(f"  tiles: rows {steps[0]}, columns {steps[1]}", flush=True)
        return steps

    Workspace.run, ozaki_backend.tile_sizes = run, tile_sizes
    try:
        auto = gemm_backend.get("int8-auto")
        for call in range(2):
            start = time.perf_counter()
            auto.matmul(a, b)
            cp.cuda.Device().synchronize()
            info = auto.last_call_info
            print(f"n={n} phi={phi} call {call}: {time.perf_counter() - start:.2f} s, {info.get('scheme')} "
                  f"pairs {info.get('pairs')}", flush=True)
    finally:
        Workspace.run, ozaki_backend.tile_sizes = original_run, original_tiles


def main():
    rng = cp.random.default_rng(1)
    choice_seconds(8192, 1.0, rng)
    cp.get_default_memory_pool().free_all_blocks()
    logged_attempts(16384, 4.0, rng)


if __name__ == "__main__":
    main()
