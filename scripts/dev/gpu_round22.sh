#!/usr/bin/env bash
# GPU work of round 22 (Ozaki-II's products at gate shapes: a slice of the gate resident in shared
# memory, the warpgroups taking turns, the reduction modulo p by dp4a and FP32 FMAs; int8 chunk scratch).
#   bash scripts/dev/gpu_round22.sh OUTDIR rate     # crt_products_rate.py at d = 9, 10 chunk shapes and 4096^3,
#                                                   # .old (the baseline), this tree and VARIANTS= (copies)
#   bash scripts/dev/gpu_round22.sh OUTDIR bench    # d = 9, 10 gates at first target 0, the top and spread,
#                                                   # cublas beside, .old and this tree
# The stages: gpu_round16.sh stages (SIZES="9 10"); the tests: gpu_round14.sh tests (TESTS=).
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-rate}
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")
trees=(.); [[ -d .old && -z ${NO_BASELINE:-} ]] && trees=(.old .)

if [[ $what == rate ]]; then
  trees+=(${VARIANTS:-})  # more trees (copies of this one with a change), named by their folder
  for tree in "${trees[@]}"; do
    name=$([[ $tree == .old ]] && echo before || { [[ $tree == . ]] && echo after || echo "${tree#.}"; })
    [[ $tree != . ]] && cp scripts/dev/crt_products_rate.py "$tree/scripts/dev/"
    (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 200 python3 scripts/dev/crt_products_rate.py \
      --rows 16384 22201 8192 4096 --cols 512 512 1024 4096 --padded 512 512 1024 4096) 2>&1 \
      | tee "$out/rate_$name.txt" | tail -6
  done
fi

if [[ $what == bench ]]; then
  for tree in "${trees[@]}"; do
    name=$([[ $tree == .old ]] && echo before || echo after)
    echo "== $name ($tree)"
    (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 280 python3 scripts/bench/bench_gates.py --qubits 30 \
      --gate-sizes ${SIZES:-9 10} --targets 0 top --scattered spread --backends cublas,int8-auto --device gpu \
      --repeats 5 --json "$out/gates_$name.json") 2>&1 | tee "$out/gates_$name.log" | tail -7
  done
fi
