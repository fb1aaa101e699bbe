#!/usr/bin/env bash
# GPU work of round 14 (Ozaki-II gates in reused buffers, one synchronisation per gate).
#   bash scripts/dev/gpu_round14.sh OUTDIR tests    # gpu tests of Ozaki-II and int8-auto (one BLAS thread per xdist worker)
#   bash scripts/dev/gpu_round14.sh OUTDIR memory   # d = 10, 9 brickwork at N = 30, depth 2: time and peak memory of
#                                                   # the tree in .old (if any, `git archive` of the baseline) and of
#                                                   # this tree, automatic workspace (capped per gate) and 8 GiB
#                                                   # (WORKSPACES="auto 4 8": GiB; the baseline runs auto only)
#   bash scripts/dev/gpu_round14.sh OUTDIR staging  # d = 8, 9, 10 brickwork at N = 30, depth 4, default and
#                                                   # --target-error 1e-10: .old (the baseline) against this tree
#                                                   # (large gates staged one step ahead)
#   bash scripts/dev/gpu_round14.sh OUTDIR headline # qsim run at N = 30, seed 1, --gate-size 8 (depth 4) and 10
#                                                   # (depth 2), cublas and int8-auto: total, per gate, peak memory
#   bash scripts/dev/gpu_round14.sh OUTDIR bench    # gates d = 5 .. 10 (SIZES) at N = 30, first targets 0 and top:
#                                                   # cublas, int8-auto, --target-error 1e-10 side by side
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
# `timeout` runs programs, not shell functions: the CLI is a command line
qsim=(python3 -c "import sys; from qsim.cli import main; sys.exit(main())")

if [[ $what == tests ]]; then
  workers=(); python3 -c "import xdist" 2>/dev/null && workers=(-n "${GPU_TEST_WORKERS:-8}")
  [[ ${#workers[@]} -gt 0 ]] && export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
  timeout "${TEST_SECONDS:-400}" python3 -m pytest -q -m gpu -p no:cacheprovider "${workers[@]}" --durations=5 -rf \
    ${TESTS:-tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py tests/test_ozaki.py tests/test_ozaki_crt_kernels.py} 2>&1 \
    | grep -v -i warn | tee "$out/gpu_tests.log" | tail -12
fi

# run_in TREE PATTERN PREFIX JSON ARGS...: the CLI from inside TREE (`python3 -c` puts the working directory first
# on sys.path), its summary lines that match PATTERN, prefixed
run_in() {
  local tree=$1 pattern=$2 prefix=$3 json=$4; shift 4
  (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 120 "${qsim[@]}" run --qubits 30 --seed 1 --backend int8-auto \
    --device gpu --no-progress --json "$json" "$@") 2>&1 | grep -E "$pattern|rror" | sed "s/^/$prefix  /"
}
trees=(.); [[ -d .old && -z ${NO_BASELINE:-} ]] && trees=(.old .)
# sweep KIND DEPTH PATTERN SIZES BASELINE VARIANT...: brickwork of each size in SIZES for each VARIANT
# (LABEL:FLAGS) in this tree, and in .old for every variant (BASELINE all) or the first (first)
sweep() {
  local kind=$1 depth=$2 pattern=$3 sizes=$4 baseline=$5 first=${6%%:*}; shift 5
  for d in $sizes; do
    for variant in "$@"; do
      local label=${variant%%:*} flags
      read -ra flags <<< "${variant#*:}"
      for tree in "${trees[@]}"; do
        [[ $tree == .old && $baseline != all && $label != "$first" ]] && continue
        local name; name=$([[ $tree == .old ]] && echo before || echo after)
        run_in "$tree" "$pattern" "d=$d $label $name" "$out/${kind}_d${d}_${label}_${name}.json" \
          --gate-size "$d" --depth "$depth" "${flags[@]}"
      done
    done
  done | tee "$out/$kind.log"
}

if [[ $what == memory ]]; then
  variants=()
  for w in ${WORKSPACES:-auto 8}; do [[ $w == auto ]] && variants+=("auto:") || variants+=("$w:--workspace-gib $w"); done
  sweep memory 2 "per gate|peak memory" "10 9" first "${variants[@]}"
fi

[[ $what == staging ]] && sweep staging 4 "per gate" "${SIZES:-9 8 10}" all "fp64:" "1e-10:--target-error 1e-10"

if [[ $what == headline ]]; then
  for d in 8 10; do
    depth=$([[ $d == 8 ]] && echo 4 || echo 2)
    for backend in cublas int8-auto; do
      timeout 200 "${qsim[@]}" run --qubits 30 --gate-size "$d" --depth "$depth" --seed 1 --backend "$backend" \
        --device gpu --no-progress --json "$out/headline_d${d}_${backend}.json" 2>&1 \
        | grep -E "total time|per gate|peak memory|rror" | sed "s/^/d=$d $backend  /"
    done
  done | tee "$out/headline.log"
fi

if [[ $what == bench ]]; then
  timeout 560 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes ${SIZES:-5 6 7 8 9 10} --targets 0 top \
    --backends cublas,int8-auto,int8-auto@target_error=1e-10 --device gpu --repeats 5 --json "$out/gates30.json" 2>&1 \
    | tee "$out/gates30.log" | tail -16
fi
