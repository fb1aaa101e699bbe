#!/usr/bin/env bash
# GPU checks and benchmarks of issue 23 (int8-auto's FP64-accuracy contract and scheme choice):
#   bash scripts/dev/gpu_issue23.sh tests    -> the gpu-marked INT8 tests (CPU/GPU bits with the new default,
#                                           the span-scan kernel, Gaussian moduli)
#   bash scripts/dev/gpu_issue23.sh square   -> "Must show": square 8192^3 and 16384^3 complex, phi = 1 and 4:
#                                           cublas, int8-auto (its scheme and counts), int8-crt-15/17,
#                                           int8-gcrt-18/19, error mean / max / normwise against double-double
#                                           on 64 x 256 entries; then the scan and product times beside them
#                                           (scripts/dev/ozaki2_overhead.py)
#   bash scripts/dev/gpu_issue23.sh headline -> the N = 30, d = 5, depth-20 brickwork (seed 1): time with cublas,
#                                           the new default, bound=worst-case (the former default) and rho = 1;
#                                           accuracy of each against double-double (qsim compare)
# Outputs (logs, JSON) go to $OUT (or ./out).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
case ${1:-square} in
tests)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki.py tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py \
    tests/test_ozaki_gate.py tests/test_span_scan.py tests/test_ozaki_accuracy_contract.py 2>&1 \
    | tee "$out/gpu_tests.log" | tail -8
  ;;
square)
  python3 scripts/bench/bench_gemm.py --device gpu \
    --backends cublas,int8-auto,int8-crt-15,int8-crt-17,int8-gcrt-18,int8-gcrt-19 \
    --shapes square --sizes 8192 16384 --inputs phi --phi 1 4 --error-rows 64 --error-cols 256 --repeats 3 \
    --json "$out/square_contract.json" 2>&1 | tail -28
  python3 scripts/dev/ozaki2_overhead.py --sizes 8192 16384 --phi 1 --moduli 17 --gaussian 18 19 2>&1 \
    | tee "$out/ozaki2_overhead.log"
  ;;
headline)
  python3 scripts/dev/gate_plans.py --qubits 30 --gate-size 5 --depth 20 --seed 1 --json "$out/gate_plans30.json"
  for label in cublas int8-auto int8-auto@bound=worst-case int8-auto@rho=1; do
    python3 -m qsim.cli run --qubits 30 --gate-size 5 --depth 20 --seed 1 --backend "$label" --device gpu \
      --no-progress --json "$out/run30_${label//[@=]/_}.json" 2>&1 | tail -14
  done
  python3 -m qsim.cli compare --qubits 30 --gate-size 5 --depth 20 --seed 1 --device gpu --no-progress \
    --backends cublas,int8-auto,int8-auto@bound=worst-case --json "$out/compare30_contract.json" 2>&1 | tail -12
  ;;
*)
  echo "unknown mode ${1}; use tests, square or headline" >&2; exit 2
  ;;
esac
