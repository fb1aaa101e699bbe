"""Least-squares fits of the gate cost model (gemm_backend/ozaki/cost.py) from bench_gates.py JSON.

For every gate size in the files, fits time / floor (passes over the state) of the wide Ozaki-I
kernel against its plan's digit pairs, and of Ozaki-II against its INT8 products (two per Gaussian
modulus, three per ordinary one), over the int8-auto columns forced to one scheme
(`large_gates=ozaki1`, `large_gates=ozaki2`) at one first target (0, as cost.py's fits), and prints
each fit with its residuals beside the constants cost.py holds. Development script.

    python scripts/dev/gate_cost_fit.py benchmarks/h100/round24/3_fits/fits.json
"""
import argparse
import json
import re

import numpy as np

from gemm_backend.ozaki import cost
from gemm_backend.ozaki.plan import plan_products


def points(rows: list, backends: list, first_target: str) -> dict:
    """{(k, scheme): [(units, passes), ...]}: digit pairs (ozaki1) or INT8 products (ozaki2)
    against time / floor, for each int8-auto column forced to one scheme, at first_target."""
    found = {}
    for row in rows:
        if row["first_target"] != first_target:
            continue
        k = 1 << row["d"]
        for label in backends:
            scheme = re.search(r"large_gates=(ozaki[12])", label)
            if not scheme or f"{label}_ms" not in row:
                continue
            units = _units(row[f"{label}_plan"], scheme.group(1), k)
            found.setdefault((k, scheme.group(1)), []).append((units, row[f"{label}_ms"] / row["floor_ms"]))
    return found


def _units(plan: str, scheme: str, k: int) -> int:
    """Digit pairs of an Ozaki-I plan "s_a/s_b/T" at inner size 2k, or INT8 products of "m=<M>[g]"."""
    if scheme == "ozaki1":
        a_slices, b_slices, top = (int(part) for part in plan.split("/"))
        return plan_products(a_slices, 2 * k, b_slices, top).pairs
    moduli = re.fullmatch(r"m=(\d+)(g?)", plan)
    return int(moduli.group(1)) * (2 if moduli.group(2) else 3)


def fit(pairs: list) -> tuple:
    """(fixed, per unit, residuals) of passes = fixed + per unit * units, least squares."""
    units, passes = (np.array(column, float) for column in zip(*pairs))
    matrix = np.stack([np.ones_like(units), units], axis=1)
    (fixed, slope), *_ = np.linalg.lstsq(matrix, passes, rcond=None)
    return fixed, slope, passes - (fixed + slope * units)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="bench_gates.py --json outputs")
    parser.add_argument("--first-target", default="0", help="the rows' first target (bench_gates.py's label)")
    args = parser.parse_args()
    found = {}
    for name in args.files:
        with open(name) as handle:
            data = json.load(handle)
        for key, values in points(data["rows"], data["backends"], args.first_target).items():
            found.setdefault(key, []).extend(values)
    held = {("ozaki1", cost.WIDE_GATE_K): (cost.WIDE_GATE_FIXED_PASSES, cost.WIDE_GATE_PASSES_PER_PAIR),
            ("ozaki2", cost.WIDE_GATE_K): (cost.OZAKI2_GATE_FIXED_PASSES, cost.OZAKI2_GATE_PASSES_PER_PRODUCT)}
    for (k, scheme), pairs in sorted(found.items()):
        pairs = sorted(set(pairs))
        fixed, slope, residuals = fit(pairs)
        units = "pairs" if scheme == "ozaki1" else "INT8 products"
        print(f"K = {k}, {scheme}: passes = {fixed:.2f} + {slope:.4f} per {units.rstrip('s')}"
              + (" (cost.py: {:.2f} + {:.4f})".format(*held[(scheme, k)]) if (scheme, k) in held else ""))
        for (count, passes), residual in zip(pairs, residuals):
            print(f"    {units} {count:3d}: {passes:6.2f} passes, residual {residual:+.2f}")


if __name__ == "__main__":
    main()
