"""cuBLAS gates at small strides: the strided batch of GEMMs against the transposed rows product.

For each gate size d and first target q (stride R = 2^q), times one Haar gate on an N-qubit state
through ZgemmBackend.apply_batched with min_batched_stride = 1 (always the strided batch) and
2^62 (always the rows of a transposed copy, for R > 1), same run, CUDA events, median of
--repeats after one warm-up, and prints both and their ratio, so that DEFAULT_MIN_BATCHED_STRIDE
can be read off where the rows product stops winning.

    python scripts/dev/native_strides.py --qubits 30 --gate-sizes 7 8 9 10 --strides 1 2 3 4 5 6 7 8 10 12
"""
import argparse

import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from qsim.benchmarking import copy_bandwidth, median_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=30)
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[7, 8, 9, 10])
    parser.add_argument("--strides", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 7, 8, 10, 12],
                        help="first targets q (stride R = 2^q)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.qubits
    rng = np.random.default_rng(n)
    state = cp.asarray(rng.standard_normal(1 << n)) + 1j * cp.asarray(rng.standard_normal(1 << n))
    state /= cp.linalg.norm(state)
    floor_ms = 32 * (1 << n) / copy_bandwidth(True) * 1e3
    paths = {"batch": gemm_backend.get("cublas", min_batched_stride=1),
             "rows": gemm_backend.get("cublas", min_batched_stride=1 << 62)}
    print(f"N={n}, memory floor {floor_ms:.2f} ms")
    print(f"{'d':>3} {'q':>3} {'batch ms':>10} {'rows ms':>10} {'rows/batch':>10}  kernels")
    for d in args.gate_sizes:
        u = cp.asarray(haar_unitary(1 << d, rng))
        for q in args.strides:
            if q + d > n:
                continue
            view = state.reshape(-1, 1 << d, 1 << q)
            times, kernels = {}, []
            for name, backend in paths.items():
                times[name] = median_time(lambda b=backend: b.apply_batched(u, view, view), True,
                                          repeats=args.repeats, warmup=1) * 1e3
                kernels.append(backend.last_call_info["kernel"])
            print(f"{d:>3} {q:>3} {times['batch']:>10.2f} {times['rows']:>10.2f} "
                  f"{times['rows'] / times['batch']:>10.2f}  {'/'.join(kernels)}", flush=True)


if __name__ == "__main__":
    main()
