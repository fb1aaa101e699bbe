#!/usr/bin/env bash
# GPU work of round 16 (Ozaki-II's per-element kernels: Gaussian residues from two dp4a sums, the
# reconstruction's loads issued several moduli at a time).
#   bash scripts/dev/gpu_round16.sh OUTDIR stages    # crt_gate_stages.py (N = 28, d = 10 and 9) in .old (the
#                                                    # baseline, a `git archive`) and in this tree, one lease
#   bash scripts/dev/gpu_round16.sh OUTDIR profile   # ncu of the stages' kernels in this tree (crt_*, one INT8 GEMM)
#   bash scripts/dev/gpu_round16.sh OUTDIR bench     # round 15's gate benchmark (its SIZES, TARGETS, SCATTERED)
#   bash scripts/dev/gpu_round16.sh OUTDIR gemm      # square complex GEMMs 8192^3, 16384^3 (phi = 1): cublas,
#                                                    # int8-gcrt-16, int8-auto, in .old and in this tree
#   bash scripts/dev/gpu_round16.sh OUTDIR headline  # round 14's qsim runs at d = 8 and 10 (this tree)
#   bash scripts/dev/gpu_round16.sh OUTDIR tests     # round 14's gpu tests (TESTS=)
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-stages}
if [[ $what == tests || $what == bench ]]; then
  exec bash "$(dirname "$0")/gpu_round15.sh" "$out" "$what"
fi
if [[ $what == headline ]]; then
  exec bash "$(dirname "$0")/gpu_round14.sh" "$out" "$what"
fi
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")

if [[ $what == stages ]]; then
  trees=(.); [[ -d .old && -z ${NO_BASELINE:-} ]] && trees=(.old .)
  trees+=(${VARIANTS:-})  # more trees (copies of this one with a change), named by their folder
  for d in ${SIZES:-10 9}; do
    for tree in "${trees[@]}"; do
      name=$([[ $tree == .old ]] && echo before || { [[ $tree == . ]] && echo after || echo "${tree#.}"; })
      echo "== d=$d $name ($tree)"
      (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 150 python3 scripts/dev/crt_gate_stages.py --qubits 28 \
        --gate-size "$d" --moduli 16 --chunk $((8192 * (1 << (10 - d))))) 2>&1 | tee "$out/stages_d${d}_$name.txt" | tail -7
    done
  done
fi

if [[ $what == gemm ]]; then
  trees=(.); [[ -d .old && -z ${NO_BASELINE:-} ]] && trees=(.old .)
  for tree in "${trees[@]}"; do
    name=$([[ $tree == .old ]] && echo before || echo after)
    echo "== $name ($tree)"
    (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 250 python3 scripts/bench/bench_gemm.py --device gpu \
      --backends cublas,int8-gcrt-16,int8-auto --shapes square --sizes 8192 16384 --inputs phi --phi 1 \
      --json "$out/gemm_$name.json") 2>&1 | tee "$out/gemm_$name.log" | tail -8
  done
fi

if [[ $what == profile ]]; then
  sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats)
  stages=(python3 scripts/dev/crt_gate_stages.py --qubits 28 --gate-size 10 --moduli 16 --repeats 1)
  timeout 240 ncu --clock-control none "${sections[@]}" -k regex:"${KERNELS:-crt_}" --launch-skip "${SKIP:-0}" \
    --launch-count "${COUNT:-16}" "${stages[@]}" \
    > "$out/ncu_crt.txt" 2>&1
  [[ -n ${GEMM:-} ]] && timeout 120 ncu --clock-control none "${sections[@]}" -k regex:'s8|i8|imma' --launch-skip 8 \
    --launch-count 1 "${stages[@]}" > "$out/ncu_gemm.txt" 2>&1
  awk '/Context 1/{name=$1} /Duration/{d=$NF} /DRAM Throughput/{m=$NF} /Issue Slots Busy/{i=$NF}
       /Executed Instructions  /{print name, "us", d, "dram%", m, "issue%", i, "instructions", $NF}' "$out"/ncu_*.txt
fi
