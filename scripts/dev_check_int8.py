"""Quick device check of the INT8 paths: matmul GPU == CPU bit for bit on a few shapes and
plans (the split and accumulate kernels), printed as a short table."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import cupy as cp  # noqa: E402

import gemm_backend  # noqa: E402

rng = np.random.default_rng(5)
rows = []
for name in ("int8-3", "int8-7", "int8-13", "int8-18", "int8-auto", "int8-auto:rho"):
    for m, k, n in ((300, 37, 29), (64, 64, 64), (5, 1, 3), (3, 70000, 5)):
        a = (rng.uniform(-.5, .5, (m, k)) * np.exp(4 * rng.standard_normal((m, k)))
             + 1j * rng.uniform(-.5, .5, (m, k)) * np.exp(4 * rng.standard_normal((m, k))))
        b = (rng.uniform(-.5, .5, (k, n)) * np.exp(4 * rng.standard_normal((k, n)))
             + 1j * rng.uniform(-.5, .5, (k, n)))
        base, _, rule = name.partition(":")
        options = {"rho": 0.0} if rule else {}
        cpu, gpu = gemm_backend.get(base, **options), gemm_backend.get(base, **options)
        expected = cpu.matmul(a, b)
        got = gpu.matmul(cp.asarray(a), cp.asarray(b)).get()
        same = expected.tobytes() == got.tobytes()
        rows.append((name, (m, k, n), same, cpu.last_call_info.get("splits"), gpu.last_call_info == cpu.last_call_info))
for row in rows:
    print(*row)
print("ALL SAME" if all(r[2] and r[4] for r in rows) else "MISMATCH")
