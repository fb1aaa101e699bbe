#!/usr/bin/env bash
# GPU checks and timings of the Ozaki-II arithmetic on the integer and FP32 pipes
# (kernels/crt_arith.cuh; issue 23 item 3, issue 24 item 2's prerequisite):
#   1. the gpu-marked tests of int8-crt and int8-auto (GPU bits = CPU specification);
#   2. the arithmetic floor at N = 30 for 13..16 moduli, new beside former (same run);
#   3. the stage breakdown of the square product with 15 moduli (dev_crt_stages.py);
#   4. the square bench 8192^3 and 16384^3, phi = 1 and 4, cublas / int8-auto / int8-crt-15.
# Usage: bash scripts/dev/gpu_crt_arith.sh OUTDIR   (logs and JSON there; the whole run stays under
# 9 minutes: each step gets at most its own limit and what is left of the total).
set -uo pipefail
out=${1:?usage: gpu_crt_arith.sh OUTDIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
TOTAL=530  # seconds for all steps together

step() {  # step NAME LIMIT COMMAND...: run COMMAND under min(LIMIT, time left), log to OUTDIR/NAME.log
  local name=$1 limit=$2; shift 2
  local left=$((TOTAL - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit <= 5)); then echo "== $name: skipped, no time left" | tee "$out/$name.log"; return; fi
  echo "== $name (limit ${limit}s): $*"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 30 "$out/$name.log"
  echo "== $name: exit $rc after $SECONDS s in all"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
git log -1 --format='%H %s' | tee "$out/commit.txt"
step gpu_tests 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki_crt.py \
  tests/test_ozaki_crt_kernels.py tests/test_ozaki.py
step alu_floor 90 python3 scripts/dev/crt_alu_floor.py --qubits 30 --moduli 13 14 15 16 --repeats 3
step crt_stages 120 python3 scripts/dev/crt_stages.py --square 8192 16384 --moduli 15
step square 240 python3 scripts/bench/bench_gemm.py --device gpu --backends cublas,int8-auto,int8-crt-15 \
  --shapes square --sizes 8192 16384 --inputs phi --phi 1 4 --error-rows 64 --error-cols 256 --repeats 3 \
  --json "$out/square.json"
