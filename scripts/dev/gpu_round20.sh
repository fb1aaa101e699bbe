#!/usr/bin/env bash
# GPU work of round 20 (the Ozaki-II gate reconstruction on the INT8 tensor cores).
#   bash scripts/dev/gpu_round20.sh OUTDIR tests    # gpu tests of the Ozaki-II gate path and the Ozaki-I gates (TESTS=)
#   bash scripts/dev/gpu_round20.sh OUTDIR stages   # crt_gate_stages.py, .old (the baseline) against this tree (VARIANTS=)
#   bash scripts/dev/gpu_round20.sh OUTDIR bench    # d = 9, 10 at first target 0, the top and spread, cublas beside
#   bash scripts/dev/gpu_round20.sh OUTDIR profile  # ncu of the first gate reconstruction of a d = 10 chunk (N = 28)
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-tests}
if [[ $what == tests ]]; then
  TESTS=${TESTS:-tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py tests/test_ozaki_crt_kernels.py tests/test_crt_products.py tests/test_target_layout.py tests/test_ozaki_gate.py tests/test_simulator.py} \
    exec bash "$(dirname "$0")/gpu_round14.sh" "$out" tests
fi
if [[ $what == stages ]]; then
  exec bash "$(dirname "$0")/gpu_round16.sh" "$out" stages
fi
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")

if [[ $what == bench ]]; then
  timeout 300 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes 9 10 --targets 0 top --scattered spread \
    --backends cublas,int8-auto --device gpu --repeats 5 --json "$out/gates.json" 2>&1 | tee "$out/gates.log" | tail -7
fi

if [[ $what == profile ]]; then
  timeout 200 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section InstructionStats -k regex:crt_gate_reconstruct --launch-count 1 \
    python3 scripts/dev/crt_gate_stages.py --qubits 28 --gate-size 10 --moduli 16 --repeats 1 > "$out/ncu.txt" 2>&1
  grep -E "crt_gate_reconstruct|Duration|DRAM Throughput|Executed Instructions  |Achieved Occupancy|Registers Per" "$out/ncu.txt"
fi
