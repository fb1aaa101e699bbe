#!/usr/bin/env bash
# GPU work of round 17 (Ozaki-II's products reduced modulo p on the chip: crt_products.cu).
#   bash scripts/dev/gpu_round17.sh OUTDIR tests     # gpu tests of Ozaki-II (TESTS=), the products kernel's first
#   bash scripts/dev/gpu_round17.sh OUTDIR products  # crt_products_bench.py: cuBLAS int32, the mma.sync experiments
#                                                    # and crt_products.cu on a d = 10 and a d = 9 chunk's shapes
#   bash scripts/dev/gpu_round17.sh OUTDIR MODE      # stages, profile, bench, gemm, headline: round 16's modes
# Name the kind (nvidia-h100-x1) so that the figures are the H100's; carry .whl (and .old for the baseline).
out=${1:-out}; what=${2:-tests}
if [[ $what == tests ]]; then
  TESTS=${TESTS:-tests/test_crt_products.py tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py tests/test_ozaki.py} \
    exec bash "$(dirname "$0")/gpu_round14.sh" "$out" tests
fi
if [[ $what != products ]]; then
  exec bash "$(dirname "$0")/gpu_round16.sh" "$out" "$what"
fi
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")
timeout 200 python3 scripts/dev/crt_products_bench.py 2>&1 | tee "$out/products.txt" | tail -4
