#!/usr/bin/env bash
# GPU work of round 15 (Ozaki-II gates whose kernels address the columns at any targets).
#   bash scripts/dev/gpu_round15.sh OUTDIR tests   # gpu tests of Ozaki-II, int8-auto's scattered gates and the engine
#                                                  # (TESTS= to choose files; 8 xdist workers, one BLAS thread each)
#   bash scripts/dev/gpu_round15.sh OUTDIR bench   # gates d = 9, 10 (SIZES) at N = 30, first targets 0, middle, top and
#                                                  # the scattered set spread: cublas and int8-auto side by side, in the
#                                                  # tree in .old (the baseline, a `git archive`) and in this one
#                                                  # (TARGETS=, SCATTERED= to choose; NO_BASELINE=1: this tree alone)
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
# tests: round 14's script with this round's files; bench: its setup (wheels, PYTHONPATH, device.txt), then the runs
out=${1:-out}; what=${2:-tests}
if [[ $what == tests ]]; then
  TESTS=${TESTS:-tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py tests/test_ozaki.py tests/test_target_layout.py} \
    exec bash "$(dirname "$0")/gpu_round14.sh" "$out" tests
fi
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")

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
