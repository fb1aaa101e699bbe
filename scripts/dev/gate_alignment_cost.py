"""What the gate contract's per-entry guarantee for every state costs (on the CPU): for Haar gates
of d qubits, int8-auto's plan (digit pairs) as it is and with the state's terms normwise on every
row (contract.gate_error_model(every_state=False)), and the error of output row i on columns
whose largest amplitude (1, among amplitudes of 1e-6) meets row i's smallest gate entry, the case
the guarantee covers, for both plans beside numpy's, against double-double.

    python scripts/dev/gate_alignment_cost.py --gate-sizes 5 6 7 8 9 --error-sizes 5 7 --seeds 6
"""
import argparse
import functools

import numpy as np

import gemm_backend
from circuits import haar_unitary
from gemm_backend.doubledouble import matmul_dd
from gemm_backend.ozaki import contract, rules

COLUMNS = 64
SMALL = 1e-6


def row_errors(u, l: int, i: int, rng) -> tuple:
    """(int8-auto's, numpy's) max relative error of output i on COLUMNS columns e_l + SMALL
    noise, against double-double."""
    k = u.shape[0]
    x = (rng.standard_normal((1, k, COLUMNS)) + 1j * rng.standard_normal((1, k, COLUMNS))) * SMALL
    x[0, l, :] = 1.0
    out = np.empty_like(x)
    gemm_backend.get("int8-auto").apply_batched(u, x, out)
    hi, lo = matmul_dd(x[0].T.copy(), u.T)
    reference = (hi + lo).T[i]
    relative = lambda y: float((np.abs(y - reference) / np.abs(reference)).max())  # noqa: E731
    return relative(out[0, i]), relative((u @ x[0])[i])


def with_rule(every_state: bool, call):
    """call() with int8-auto's gate rule built on gate_error_model(every_state=every_state)."""
    original = rules.gate_error_model
    rules.gate_error_model = functools.partial(contract.gate_error_model, every_state=every_state)
    try:
        return call()
    finally:
        rules.gate_error_model = original


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate-sizes", type=int, nargs="+", default=[5, 6, 7, 8, 9])
    parser.add_argument("--error-sizes", type=int, nargs="+", default=[5, 7])
    parser.add_argument("--seeds", type=int, default=6)
    args = parser.parse_args()
    print("plans: d | every state | normwise state (s_a/s_b/T, digit pairs)")
    for d in args.gate_sizes:
        u = haar_unitary(1 << d, np.random.default_rng(d))
        plans = [with_rule(every, lambda: gemm_backend.get("int8-auto").gate_plan(u)[0]) for every in (True, False)]
        print(f"{d} | " + " | ".join(f"{p.a_slices}/{p.b_slices}/{p.top}, {p.pairs}" for p in plans))
    print(f"row-i error on aligned columns / numpy's, over {args.seeds} gates: d | every state | normwise state")
    for d in args.error_sizes:
        ratios = {True: [], False: []}
        for seed in range(1, args.seeds + 1):
            u = haar_unitary(1 << d, np.random.default_rng(1000 * d + seed))
            magnitude = np.abs(u)
            i = int(np.argmin(magnitude.min(axis=1)))
            l = int(np.argmin(magnitude[i]))
            for every in (True, False):
                error, numpy_error = with_rule(every, lambda: row_errors(u, l, i, np.random.default_rng(seed)))
                ratios[every].append(error / numpy_error)
        print(f"{d} | " + " | ".join(f"{min(r):.2g} .. {max(r):.2g}" for r in (ratios[True], ratios[False])))


if __name__ == "__main__":
    main()
