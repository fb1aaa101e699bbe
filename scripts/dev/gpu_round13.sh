#!/usr/bin/env bash
# GPU work left by round 13 (K = 512 on the wide kernel, two wgmma chunks in flight, d = 10's memory).
#   bash scripts/dev/gpu_round13.sh OUTDIR tests    # every gpu test of the Ozaki-I gate kernels, int8-auto and
#                                                   # Ozaki-II (one BLAS thread per xdist worker), slowest ten listed
#   bash scripts/dev/gpu_round13.sh OUTDIR memory   # d = 9, 10 brickwork at N = 30: time and peak memory with
#                                                   # the automatic workspace (a gate's capped at 1.5 GiB since
#                                                   # round 13) and with 8 and 32 GiB: what the cap costs (issue 24 item 5)
#   bash scripts/dev/gpu_round13.sh OUTDIR bench    # gates d = 5 .. 10 at N = 30, first targets 0 and top:
#                                                   # cublas, int8-auto, --target-error 1e-10 side by side
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl for pytest-xdist.
set -uo pipefail
out=${1:-out}; what=${2:-tests}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/kernel_cache}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; git log -1 --format=%h 2>/dev/null; } \
  | tee "$out/device.txt"
# `timeout` runs programs, not shell functions: the CLI is a command line, not a function
qsim=(python3 -c "import sys; from qsim.cli import main; sys.exit(main())")

if [[ $what == tests ]]; then
  workers=(); python3 -c "import xdist" 2>/dev/null && workers=(-n 16)
  [[ ${#workers[@]} -gt 0 ]] && export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
  timeout "${TEST_SECONDS:-560}" python3 -m pytest -q -m gpu -p no:cacheprovider "${workers[@]}" --durations=10 -rf \
    tests/test_ozaki_gate.py tests/test_ozaki.py tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py 2>&1 | grep -v -i warn | tee "$out/gpu_tests.log" | tail -16
fi

if [[ $what == memory ]]; then
  for d in 10 9; do
    for workspace in auto 8 32; do
      flag=(); [[ $workspace != auto ]] && flag=(--workspace-gib "$workspace")
      timeout 120 "${qsim[@]}" run --qubits 30 --gate-size "$d" --depth 2 --seed 1 --backend int8-auto --device gpu \
        --no-progress "${flag[@]}" --json "$out/run_d${d}_${workspace}.json" 2>&1 \
        | grep -E "per gate|peak memory|path |rror" | sed "s/^/d=$d workspace=$workspace  /"
    done
  done | tee "$out/memory.log"
fi

if [[ $what == bench ]]; then
  timeout 560 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes ${SIZES:-5 6 7 8 9 10} --targets 0 top \
    --backends cublas,int8-auto,int8-auto@target_error=1e-10 --device gpu --repeats 5 --json "$out/gates30.json" 2>&1 \
    | tee "$out/gates30.log" | tail -14
fi
