#!/usr/bin/env bash
# Everything the GPU must show, in one device call: the gpu-marked tests, then the benchmarks.
# Usage on the GPU machine, from the repository root:
#   bash scripts/gpu_suite.sh OUTDIR [tests|bench|all|trajectories|distributed]
# (trajectories: the monitored-brickwork benchmark alone, N = 28, d = 2 and 5, p = 0.1, 100 trajectories)
# distributed (a machine of 2+ GPUs): the distributed GPU tests with the 2-GPU comparison at
# QSIM_MULTI_GPU_QUBITS (default 28), then scripts/bench/bench_distributed.py for BENCH_MINUTES (default 5).
# Wheels for qiskit (not installed there) are taken from .whl/ when present.
set -uo pipefail
out=${1:-out}; what=${2:-all}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}  # NVLink multicast off (required on the lent machines)
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/device.txt"
git log -1 --format=%H 2>/dev/null | tee -a "$out/device.txt"
# pytest-xdist (its wheel and execnet's in .whl/) runs the tests on GPU_TEST_WORKERS processes (default 8:
# the largest gpu test state is 1 GiB; each worker compiles the kernel variants it meets).
workers=(); python3 -c "import xdist" 2>/dev/null && workers=(-n "${GPU_TEST_WORKERS:-8}")
# one BLAS thread per worker: the tests' CPU references (numpy matmuls) on every worker's default
# thread count oversubscribe the cores many times over
[[ ${#workers[@]} -gt 0 ]] && export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
if [[ $what == tests || $what == all ]]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider "${workers[@]}" tests 2>&1 | tee "$out/gpu_tests.log" | tail -40
fi
if [[ $what == bench || $what == all ]]; then
  python3 scripts/bench/bench_gates.py --qubits 28 30 --device gpu --backends cublas,int8-auto,fp16x2 --json "$out/bench_gates.json" \
    2>&1 | tee "$out/bench_gates.log"
fi
if [[ $what == trajectories ]]; then
  python3 scripts/bench/bench_trajectories.py --qubits 28 --gate-sizes 2 5 --rate 0.1 --trajectories 100 --device gpu \
    --json "$out/bench_trajectories.json" 2>&1 | tee "$out/bench_trajectories.log"
fi
if [[ $what == distributed ]]; then
  QSIM_MULTI_GPU_QUBITS=${QSIM_MULTI_GPU_QUBITS:-28} python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/test_distributed_gpu.py 2>&1 | tee "$out/distributed_tests.log" | tail -20
  python3 scripts/bench/bench_distributed.py --gpus "$(nvidia-smi -L | wc -l)" --max-minutes "${BENCH_MINUTES:-5}" \
    --json "$out/bench_distributed.json" 2>&1 | tee "$out/bench_distributed.log" | tail -30
fi
