#!/usr/bin/env bash
# GPU work of round 18 (crt_gate_residues: a column's amplitudes held in registers by a group of
# threads, four per thread, residues stored as 32-bit words; three-instruction residues).
#   bash scripts/dev/gpu_round18.sh OUTDIR tests    # gpu tests of Ozaki-II's gate path (TESTS=)
#   bash scripts/dev/gpu_round18.sh OUTDIR MODE     # stages, profile: round 16's modes; bench: round 15's
#                                                   # (SIZES, TARGETS, SCATTERED), .old beside this tree
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-tests}
if [[ $what == tests ]]; then
  TESTS=${TESTS:-tests/test_ozaki_gcrt.py tests/test_ozaki_crt.py tests/test_ozaki_crt_kernels.py tests/test_crt_products.py tests/test_ozaki_gate.py} \
    exec bash "$(dirname "$0")/gpu_round14.sh" "$out" tests
fi
if [[ $what == bench ]]; then
  exec bash "$(dirname "$0")/gpu_round15.sh" "$out" bench
fi
exec bash "$(dirname "$0")/gpu_round16.sh" "$out" "$what"
