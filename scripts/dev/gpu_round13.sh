#!/usr/bin/env bash
# GPU work left by round 13, now run by gpu_round14.sh's modes of the same names (round 14 ran it):
#   bash scripts/dev/gpu_round13.sh OUTDIR tests    # every gpu test of the Ozaki-I gate kernels, int8-auto and Ozaki-II
#   bash scripts/dev/gpu_round13.sh OUTDIR memory   # d = 9, 10 at N = 30: the automatic gate workspace against 8 GiB
#   bash scripts/dev/gpu_round13.sh OUTDIR bench    # gates d = 5 .. 10 at N = 30 beside cublas
export TESTS=${TESTS:-tests/test_ozaki_gate.py tests/test_ozaki.py tests/test_ozaki_crt.py tests/test_ozaki_gcrt.py}
exec bash "$(dirname "$0")/gpu_round14.sh" "$@"
