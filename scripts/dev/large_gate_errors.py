"""Error of int8-auto's large gates on Ozaki-II and on Ozaki-I tiles (large_gates=ozaki2, ozaki1)
beside numpy's FP64 product, against double-double, on the CPU (the same bits as the GPU): Haar
gates of d qubits on seed-paper state columns (phi = 4), several seeds; mean / max relative error.
--labels times other backends the same way (say int8-auto's default beside its former route).

    python scripts/dev/large_gate_errors.py --gate-sizes 8 9 10 --seeds 6
    python scripts/dev/large_gate_errors.py --gate-sizes 9 --labels int8-auto int8-auto@large_gates=ozaki2
"""
import argparse

import numpy as np

import gemm_backend
from circuits import haar_unitary
from gemm_backend.doubledouble import matmul_dd

LABELS = ("int8-auto@large_gates=ozaki2", "int8-auto@large_gates=ozaki1")


def relative_errors(c, hi, lo) -> tuple:
    distance, magnitude = np.abs((c - hi) - lo), np.abs(hi)
    return float((distance / magnitude).mean()), float((distance / magnitude).max())


def seed_paper_states(rng, shape, phi: float):
    def part():
        return rng.uniform(-0.5, 0.5, shape) * np.exp(phi * rng.standard_normal(shape))
    return part() + 1j * part()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[8, 9, 10])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--phi", type=float, default=4.0)
    parser.add_argument("--labels", nargs="+", default=list(LABELS), help="backend labels (name@option=value)")
    args = parser.parse_args()
    print("d seed " + "  ".join(f"{label} mean/max" for label in args.labels) + "  numpy mean/max")
    for d in args.gate_sizes:
        k = 1 << d
        for seed in range(args.seeds):
            rng = np.random.default_rng(100 + seed)
            u = haar_unitary(k, rng)
            x = seed_paper_states(rng, (4, k, 16), args.phi)
            rows = x.transpose(0, 2, 1).reshape(-1, k)
            hi, lo = matmul_dd(rows, u.T)
            cells = []
            for label in args.labels:
                name, options = gemm_backend.parse_label(label)
                out = np.empty_like(x)
                gemm_backend.get(name, **options).apply_batched(u, x, out)
                cells.append("{:.1e}/{:.1e}".format(*relative_errors(out.transpose(0, 2, 1).reshape(-1, k), hi, lo)))
            cells.append("{:.1e}/{:.1e}".format(*relative_errors(rows @ u.T, hi, lo)))
            print(f"{d} {seed} " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
