#!/usr/bin/env bash
# Issue 25 on one GPU: the gpu tests of the measurement, sampling and trajectory kernels, then
# scripts/bench/bench_measurement.py at N = 28 and 30 (weights, collapse, measure, 10^6 shots, monitored
# brickwork N = 28, d = 5, p = 0.1, 8 trajectories) against floors measured in the same run.
# Usage, from the repository root: bash scripts/dev/gpu_issue25.sh OUTDIR   (writes 4 files into OUTDIR)
set -uo pipefail
out=${1:?usage: bash scripts/dev/gpu_issue25.sh OUTDIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then  # qiskit for the tests' references, as in scripts/gpu_suite.sh
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; git log -1 --format=%H 2>/dev/null; } \
  | tee "$out/device.txt"
# Worst case 300 + 170 s, under 8 minutes; the slowest tests and each stage's seconds are printed.
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider --durations=8 tests/test_measurement_gpu.py \
  tests/test_measurement.py tests/test_sampling.py tests/test_trajectory.py 2>&1 | tee "$out/gpu_tests.log" | tail -25
echo "tests: ${SECONDS} s"
timeout 170 python3 scripts/bench/bench_measurement.py --qubits 28 30 --json "$out/bench_measurement.json" \
  2>&1 | tee "$out/bench_measurement.log" | tail -35
echo "tests and bench: ${SECONDS} s"
