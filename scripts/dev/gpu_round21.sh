#!/usr/bin/env bash
# GPU work of round 21 (what limits the Ozaki-II gate stages at d = 9).
#   bash scripts/dev/gpu_round21.sh OUTDIR chunks    # d = 9 (and 10) gates at smaller workspaces: is the gate host-bound?
#   bash scripts/dev/gpu_round21.sh OUTDIR profile   # ncu of crt_products on a d = 9 chunk (N = 28), .old and this tree
# The stages, tests and gate benchmark of the round: gpu_round16.sh stages (SIZES="9 10", VARIANTS=),
# gpu_round14.sh tests (TESTS=), gpu_round20.sh bench.
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-chunks}
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")

if [[ $what == chunks ]]; then
  backends=cublas,int8-auto
  for bytes in 33554432 67108864 134217728 268435456; do backends+=",int8-auto@workspace_bytes=$bytes"; done
  timeout 250 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes 9 --targets 0 top --backends "$backends" \
    --device gpu --repeats 5 --json "$out/ws9.json" 2>&1 | tail -3
  backends=cublas,int8-auto
  for bytes in 100663296 167772160 335544320; do backends+=",int8-auto@workspace_bytes=$bytes"; done
  timeout 250 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes 10 --targets 0 --backends "$backends" \
    --device gpu --repeats 5 --json "$out/ws10.json" 2>&1 | tail -2
fi

if [[ $what == profile ]]; then
  trees=(.); [[ -d .old && -z ${NO_BASELINE:-} ]] && trees=(.old .)
  for tree in "${trees[@]}"; do
    name=$([[ $tree == .old ]] && echo before || echo after)
    (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 150 ncu --clock-control none --section SpeedOfLight \
      --section WarpStateStats --section SchedulerStats --section SourceCounters --print-details all \
      -k regex:crt_products --launch-skip 3 \
      --launch-count 1 python3 scripts/dev/crt_gate_stages.py --qubits 28 --gate-size 9 --moduli 16 --repeats 1) \
      > "$out/ncu_products_$name.txt" 2>&1
    grep -E "Duration|Issue Slots|Eligible Warps|Active Warps|Warp Cycles Per Issued" "$out/ncu_products_$name.txt"
  done
fi
