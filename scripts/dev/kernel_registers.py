"""Registers and local (spill) bytes of the fused INT8 and DMMA gate kernels, for the kernel
sources of several trees (e.g. . and .old): python scripts/dev/kernel_registers.py . .old"""
import sys
from pathlib import Path

import numpy as np

import cupy as cp

import gemm_backend
from gemm_backend.ozaki.gate import plan_launch
from gemm_backend.kernel_launch import persistent_blocks  # noqa: F401,E402


def haar(k, rng):
    z = (rng.standard_normal((k, k)) + 1j * rng.standard_normal((k, k))) / np.sqrt(2)
    q, r = np.linalg.qr(z)
    return q * (np.diag(r) / np.abs(np.diag(r)))


def attributes(root, name):
    package = Path(root) / "gemm_backend"
    kernels, file = (package / "ozaki" / "kernels", "ozaki_gate.cu") if name.startswith("ozaki") else (
        package / "native" / "kernels", "native_gate.cu")
    module = cp.RawModule(code=(kernels / file).read_text(),
                          options=("--std=c++17", f"-I{kernels}", f"-I{package / 'kernels'}"), name_expressions=[name])
    a = module.get_function(name).attributes
    return a["num_regs"], a["local_size_bytes"]


rng = np.random.default_rng(1)
backend = gemm_backend.registry.get("int8-auto")
names = []
for d in range(1, 7):
    k = 1 << d
    u = cp.asarray(haar(k, rng))
    x = cp.asarray(rng.standard_normal((1 << 10, k, 1 << 8)) + 1j * rng.standard_normal((1 << 10, k, 1 << 8)))
    plan, _ = backend.gate_plan(u, x)
    names.append(plan_launch(k, plan).name)
for d in (3, 4, 5, 6):
    names.append(f"native_gate<{1 << d}, 2, false, 2, 8>")
for name in names:
    print(f"{name:55s}", "  ".join(f"{root}: regs {r:3d} local {l:4d}" for root in sys.argv[1:]
                                   for r, l in [attributes(root, name)]))
