#!/usr/bin/env bash
# GPU work of round 15 (Ozaki-II gates whose kernels address the columns at any targets).
#   bash scripts/dev/gpu_round15.sh OUTDIR tests   # gpu tests of Ozaki-II, int8-auto's scattered gates and the engine
#                                                  # (TESTS= to choose files; 8 xdist workers, one BLAS thread each)
#   bash scripts/dev/gpu_round15.sh OUTDIR bench   # gates d = 9, 10 (SIZES) at N = 30, first targets 0, middle, top and
#                                                  # the scattered set spread: cublas and int8-auto side by side, in the
#                                                  # tree in .old (the baseline, a `git archive`) and in this one
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
set -uo pipefail
out=${1:-out}; what=${2:-tests}
mkdir -p "$out"; out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/kernel_cache}
site=""
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
  site=/tmp/site
fi
export PYTHONPATH="$PWD${site:+:$site}"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; git log -1 --format=%h 2>/dev/null; } \
  | tee "$out/device.txt"

if [[ $what == tests ]]; then
  workers=(); python3 -c "import xdist" 2>/dev/null && workers=(-n "${GPU_TEST_WORKERS:-8}")
  [[ ${#workers[@]} -gt 0 ]] && export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
  timeout "${TEST_SECONDS:-400}" python3 -m pytest -q -m gpu -p no:cacheprovider "${workers[@]}" --durations=5 -rf \
    ${TESTS:-tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py tests/test_ozaki.py tests/test_target_layout.py} 2>&1 \
    | grep -v -i warn | tee "$out/gpu_tests.log" | tail -12
fi

if [[ $what == bench ]]; then
  trees=(.); [[ -d .old && -z ${NO_BASELINE:-} ]] && trees=(.old .)
  for tree in "${trees[@]}"; do
    name=$([[ $tree == .old ]] && echo before || echo after)
    echo "== $name ($tree)"
    (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout "${BENCH_SECONDS:-280}" python3 scripts/bench/bench_gates.py \
      --qubits 30 --gate-sizes ${SIZES:-9 10} --targets ${TARGETS:-0 middle top} --scattered ${SCATTERED:-spread} \
      --backends cublas,int8-auto --device gpu --repeats 5 --json "$out/gates_$name.json") 2>&1 \
      | tee "$out/gates_$name.log" | tail -12
  done
fi
