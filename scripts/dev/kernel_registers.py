"""Registers and local (spill) bytes of the fused INT8 and DMMA gate kernels, for the kernel
sources of several trees (e.g. . and .old): python scripts/dev/kernel_registers.py . .old"""
import sys
from pathlib import Path

import numpy as np

import cupy as cp

import gemm_backend
from gemm_backend.native.gate import KERNEL_DEFINITIONS
from gemm_backend.ozaki.gate import plan_launch


def haar(k, rng):
    z = (rng.standard_normal((k, k)) + 1j * rng.standard_normal((k, k))) / np.sqrt(2)
    q, r = np.linalg.qr(z)
    return q * (np.diag(r) / np.abs(np.diag(r)))


def attributes(root, name, definitions):
    """(registers, local bytes) of kernel `name` compiled from the tree at root with -D `definitions`
    (which older trees ignore)."""
    package = Path(root) / "gemm_backend"
    kernels, file = (package / "ozaki" / "kernels", "ozaki_gate.cu") if name.startswith("ozaki") else (
        package / "native" / "kernels", "native_gate.cu")
    module = cp.RawModule(code=(kernels / file).read_text(),
                          options=("--std=c++17", f"-I{kernels}", f"-I{package / 'kernels'}", *definitions),
                          name_expressions=[name])
    a = module.get_function(name).attributes
    return a["num_regs"], a["local_size_bytes"]


rng = np.random.default_rng(1)
backend = gemm_backend.registry.get("int8-auto")
kernels = []  # (name, definitions)
for d in range(1, 7):
    k = 1 << d
    u = cp.asarray(haar(k, rng))
    x = cp.asarray(rng.standard_normal((1 << 10, k, 1 << 8)) + 1j * rng.standard_normal((1 << 10, k, 1 << 8)))
    plan, _ = backend.gate_plan(u, x)
    launch = plan_launch(k, plan)
    kernels.append((launch.name, launch.definitions))
for d in (3, 4, 5, 6):
    kernels.append((f"native_gate<{1 << d}, 2, false, 2, 8>", KERNEL_DEFINITIONS))
for name, definitions in kernels:
    print(f"{name:55s}", "  ".join(f"{root}: regs {r:3d} local {l:4d}" for root in sys.argv[1:]
                                   for r, l in [attributes(root, name, definitions)]))
