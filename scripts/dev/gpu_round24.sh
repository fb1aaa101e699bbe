#!/usr/bin/env bash
# GPU work of round 24 (the large gates' schemes side by side at d = 7, 8, 9; the gate cost model's fits;
# profiles of the Ozaki-II stages).
#   bash scripts/dev/gpu_round24.sh OUTDIR schemes   # d = 7, 8 (SIZES=): int8-auto and large_gates=ozaki2, at the FP64
#                                                    # contract and --target-error 1e-10, first targets 0, top, spread
#   bash scripts/dev/gpu_round24.sh OUTDIR fits      # d = 8, 9 (SIZES=), first target 0: both schemes forced at the FP64
#                                                    # contract and at 1e-10, 1e-6, 1e-3 (scripts/dev/gate_cost_fit.py)
#   bash scripts/dev/gpu_round24.sh OUTDIR trees     # d = 9, 10 gates (SIZES=, TARGETS=) in this tree and VARIANTS=
#   bash scripts/dev/gpu_round24.sh OUTDIR profile   # ncu of crt_gate_residues and crt_products_resident (N = 28, d = 9)
#   bash scripts/dev/gpu_round24.sh OUTDIR profile_reconstruct  # ncu --set full of crt_gate_reconstruct_gaussian_mma
# The stages: gpu_round16.sh stages (SIZES=); the tests: gpu_round14.sh tests (TESTS=).
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl.
out=${1:-out}; what=${2:-schemes}
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")
gates=(python3 scripts/bench/bench_gates.py --qubits 30 --device gpu --repeats 5)

if [[ $what == schemes ]]; then
  timeout 500 "${gates[@]}" --gate-sizes ${SIZES:-7 8} --targets 0 top --scattered spread \
    --backends cublas,int8-auto,int8-auto@large_gates=ozaki2,int8-auto@target_error=1e-10,int8-auto@target_error=1e-10@large_gates=ozaki2 \
    --json "$out/gates.json" 2>&1 | tee "$out/gates.log" | tail -8
fi

if [[ $what == fits ]]; then
  backends=cublas
  for target in "" 1e-10 1e-6 1e-3; do
    for scheme in ozaki1 ozaki2; do backends+=",int8-auto${target:+@target_error=$target}@large_gates=$scheme"; done
  done
  timeout 560 "${gates[@]}" --gate-sizes ${SIZES:-8 9} --targets 0 --backends "$backends" --json "$out/fits.json" 2>&1 \
    | tee "$out/fits.log" | tail -4
fi

if [[ $what == trees ]]; then
  for tree in . ${VARIANTS:-}; do
    echo "== $tree"
    (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 280 "${gates[@]}" --gate-sizes ${SIZES:-9 10} \
      --targets ${TARGETS:-0 top} --backends cublas,int8-auto --json "$out/gates_${tree#.}.json") 2>&1 \
      | tee "$out/gates_${tree#.}.log" | tail -8
  done
fi

stages=(python3 scripts/dev/crt_gate_stages.py --qubits 28 --gate-size 9 --moduli 16 --chunk 16384 --repeats 1)
if [[ $what == profile ]]; then
  sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
            --section MemoryWorkloadAnalysis --section InstructionStats --section SchedulerStats)
  timeout 200 ncu --clock-control none "${sections[@]}" -k regex:"crt_gate_residues|crt_products" --launch-count 6 \
    "${stages[@]}" > "$out/ncu.txt" 2>&1
  grep -E "^  [a-z_]+|Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|No Eligible" "$out/ncu.txt" | head -40
fi

if [[ $what == profile_reconstruct ]]; then
  timeout 250 ncu --clock-control none --set full -k regex:crt_gate_reconstruct_gaussian_mma --launch-count 1 \
    --import-source yes -o "$out/rec" "${stages[@]}" > "$out/ncu_run.txt" 2>&1
  ncu --import "$out/rec.ncu-rep" --print-summary none > "$out/rec.txt" 2>&1
  ncu --import "$out/rec.ncu-rep" --page source --csv --print-source sass > "$out/src.csv" 2>/dev/null
  gzip -f "$out/src.csv"
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|No Eligible|Warp Cycles Per Issued" "$out/rec.txt"
fi
