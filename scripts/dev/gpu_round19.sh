#!/usr/bin/env bash
# GPU work of round 19 (the gate reconstruction four outputs a thread; the gate cost model refitted).
#   bash scripts/dev/gpu_round19.sh OUTDIR tests    # gpu tests of Ozaki-II's gate path and int8-auto (TESTS=)
#   bash scripts/dev/gpu_round19.sh OUTDIR stages   # crt_gate_stages.py, .old (the baseline) against this tree
#   bash scripts/dev/gpu_round19.sh OUTDIR bench    # round 15's gate benchmark (SIZES, TARGETS, SCATTERED, NO_BASELINE)
#   bash scripts/dev/gpu_round19.sh OUTDIR loose    # d = 9 (SIZES) at --target-error 1e-3 and 1e-6: the wide Ozaki-I
#                                                   # kernel (large_gates=ozaki1) against int8-auto's choice, cublas beside
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-tests}
if [[ $what == tests ]]; then
  TESTS=${TESTS:-tests/test_ozaki_gcrt.py tests/test_ozaki_crt.py tests/test_ozaki_crt_kernels.py tests/test_crt_products.py tests/test_ozaki_gate.py tests/test_ozaki.py tests/test_target_layout.py tests/test_simulator.py} \
    exec bash "$(dirname "$0")/gpu_round14.sh" "$out" tests
fi
if [[ $what == stages || $what == bench ]]; then
  exec bash "$(dirname "$0")/gpu_round16.sh" "$out" "$what"
fi
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")

if [[ $what == loose ]]; then
  backends=cublas
  for target in 1e-3 1e-6; do
    backends+=",int8-auto@target_error=$target,int8-auto@target_error=$target@large_gates=ozaki1"
  done
  timeout 500 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes ${SIZES:-9} --targets ${TARGETS:-0 top} \
    --scattered ${SCATTERED:-spread} --backends "$backends" --device gpu --repeats 5 --json "$out/gates_loose.json" 2>&1 \
    | tee "$out/gates_loose.log" | tail -16
fi
