"""Apply one Haar-random d-qubit gate through the engine's path a few times, for ncu to profile.

    python scripts/dev/profile_gate.py N D [LABEL] [FIRST_TARGET] [APPLICATIONS]

LABEL is a registry label (default int8-auto, at its default plan); FIRST_TARGET the first of d
contiguous targets (default 0). Prints the backend's last_call_info (kernel, plan) so that the
profile can be matched to the kernel bench_gates.py times.
"""
import sys

import numpy as np

import cupy as cp

import gemm_backend
from circuits import haar_unitary
from qsim.apply import plan_gate
from qsim.device import resolve_device
from qsim.run_loop import apply_gate_plan


def main(argv) -> int:
    n, d = int(argv[0]), int(argv[1])
    label = argv[2] if len(argv) > 2 else "int8-auto"
    first = int(argv[3]) if len(argv) > 3 else 0
    applications = int(argv[4]) if len(argv) > 4 else 3
    rng = np.random.default_rng(n)
    state = cp.asarray(rng.standard_normal(1 << n) + 1j * rng.standard_normal(1 << n))
    state /= cp.linalg.norm(state)
    u = haar_unitary(1 << d, rng)
    u_dev = cp.asarray(u)
    backend = gemm_backend.get(label)
    plan, device = plan_gate(n, tuple(range(first, first + d)), u), resolve_device("gpu")
    backend.prepare(u_dev)
    for position in range(applications):
        state, _, _ = apply_gate_plan(backend, device, plan, u_dev, state, None, position, applications)
    cp.cuda.Device().synchronize()
    print(f"N={n} d={d} {label} first target {first}: {backend.last_call_info}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
