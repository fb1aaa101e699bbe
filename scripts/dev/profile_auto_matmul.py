"""Host time of int8-auto's matmul on the GPU, by function (cProfile): where the host spends the
time the GPU waits for between the scan's read-back and the product's first kernel.

    python scripts/dev/profile_auto_matmul.py --size 8192
"""
import argparse
import cProfile
import pstats

import cupy as cp

import gemm_backend


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--phi", type=float, default=1.0)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--lines", type=int, default=40)
    args = parser.parse_args()
    rng = cp.random.default_rng(1)
    n = args.size

    def part():
        return (rng.random((n, n)) - 0.5) * cp.exp(args.phi * rng.standard_normal((n, n)))

    a, b = part() + 1j * part(), part() + 1j * part()
    auto = gemm_backend.get("int8-auto")
    auto.matmul(a, b)
    cp.cuda.Device().synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.calls):
        auto.matmul(a, b)
        cp.cuda.Device().synchronize()
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.lines)


if __name__ == "__main__":
    main()
