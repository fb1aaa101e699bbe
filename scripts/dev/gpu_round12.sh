#!/usr/bin/env bash
# GPU work of round 12: the wide kernel's products by warpgroups (wgmma, sm_90a).
#   bash scripts/dev/gpu_round12.sh OUTDIR check   # wgmma variants against the CPU tiles (gpu tests)
#   bash scripts/dev/gpu_round12.sh OUTDIR bench   # gates d = 7, 8 at N = 30: cublas, int8-auto, 1e-10
#   bash scripts/dev/gpu_round12.sh OUTDIR shapes  # wide_variants.py at d = 6, 7, 8: the fused kernel (d = 6),
#                                                  # mma.sync and wgmma shapes, one or two chunks in flight (g2)
# SIZES overrides the gate sizes (e.g. SIZES=9 for the wide kernel at K = 512 against Ozaki-II), SHAPES keeps
# only the named launch tags of wide_variants.py (say SHAPES="W4Q3sN32B1g W4Q3sN32B1g2"), TESTS the check's -k.
# pytest-xdist, when its wheel is in .whl, runs the tests on 16 workers (each compiles its kernels).
set -uo pipefail
out=${1:-out}; what=${2:-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
workers=(); python3 -c "import xdist" 2>/dev/null && workers=(-n 16)
# one BLAS thread per worker: the tests' CPU references (numpy matmuls) on every worker's default
# thread count oversubscribe the cores many times over
[[ ${#workers[@]} -gt 0 ]] && export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"

if [[ $what == check ]]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider "${workers[@]}" tests/test_ozaki_gate.py \
    -k "${TESTS:-wgmma or test_wide_equals_cpu or test_wide_at_512 or test_wide_scattered}" 2>&1 \
    | tee "$out/gpu_tests.log" | grep -v -i "warn" | tail -8
fi

if [[ $what == bench ]]; then
  python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes ${SIZES:-7 8} --targets 0 \
    --backends cublas,int8-auto,int8-auto@target_error=1e-10 --device gpu --repeats 5 --json "$out/gates30.json" 2>&1 \
    | tee "$out/gates30.log" | tail -6
fi

if [[ $what == shapes ]]; then
  python3 scripts/dev/wide_variants.py --qubits 30 --gate-sizes ${SIZES:-6 7 8} --targets 0 --repeats 3 \
    ${SHAPES:+--shapes $SHAPES} 2>&1 | tee -a "$out/wide_variants.log" | tail -8
fi
