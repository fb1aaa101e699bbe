"""Apply one fused INT8 gate a few times (for ncu): N, d, s from the command line."""
import sys

import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary

n, d, s = (int(a) for a in sys.argv[1:4])
rng = np.random.default_rng(1)
state = cp.asarray(rng.standard_normal(1 << n) + 1j * rng.standard_normal(1 << n))
view = state.reshape(-1, 1 << d, 1)
backend = gemm_backend.get(f"int8-{s}")
u = cp.asarray(haar_unitary(1 << d, rng))
for _ in range(3):
    backend.apply_batched(u, view, view)
cp.cuda.Device().synchronize()
print(backend.last_call_info)
