#!/usr/bin/env bash
# GPU work of round 11, which had no device time: the kernels changed then (ozaki_digits.cuh's
# shared steps, the -D definitions, the wide kernel at K = 512) and the measurements planned.
#   bash scripts/dev/gpu_round11.sh OUTDIR check   # ~8 min: wgmma rates and layouts, gpu tests
#   bash scripts/dev/gpu_round11.sh OUTDIR bench   # ~5 min: gates d = 5..9 at N = 30, ncu at d = 8
#   bash scripts/dev/gpu_round11.sh OUTDIR wide9   # ~5 min: the wide kernel's shapes at d = 9
# check: scripts/dev/measure/wgmma_int8.cu (INT8 wgmma against mma.sync, the operand layouts a
#   wgmma gate kernel would use), then the gpu tests of the gate kernels whose launch code changed
#   (test_ozaki_gate.py, test_ozaki.py, test_target_layout.py with the wide kernel at K = 512
#   through wide_launch; test_native_gate.py, test_multiword_gate.py).
# bench: bench_gates.py at N = 30, d = 5..9, first target 0: cublas, int8-auto,
#   int8-auto@large_gates=ozaki1 (the Ozaki-I tiles at d = 9, the baseline of wide9),
#   int8-auto@target_error=1e-10 (set OLD=path/to/a/tree to add its int8-auto as a baseline, e.g.
#   .old from `git archive 8f1489e`); then ncu's memory sections of the wide kernel at d = 8
#   (int8-9): is it bound by the gate's digits read through L2 (4.9 TB/s if each of the 2 warps
#   per m-tile reads them, round 10)?
# wide9: scripts/dev/wide_variants.py at d = 9 (int8-auto's plan and --target-error 1e-10's), x the
#   memory floor: against bench's tiles and Ozaki-II, whether plan_launch should route K = 512.
set -uo pipefail
out=${1:-out}; what=${2:-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"

if [[ $what == check ]]; then
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a scripts/dev/measure/wgmma_int8.cu -o /tmp/wgmma_int8 \
    2>&1 | tee "$out/wgmma_build.log" | grep -i -E "error|serializ"
  /tmp/wgmma_int8 2>&1 | tee "$out/wgmma_int8.txt"
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki_gate.py tests/test_ozaki.py \
    tests/test_target_layout.py tests/test_native_gate.py tests/test_multiword_gate.py 2>&1 \
    | tee "$out/gpu_tests.log" | tail -8
fi

if [[ $what == bench ]]; then
  backends=cublas,int8-auto,int8-auto@large_gates=ozaki1,int8-auto@target_error=1e-10
  python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes 5 6 7 8 9 --targets 0 --backends "$backends" \
    --device gpu --repeats 5 --json "$out/gates30.json" 2>&1 | tee "$out/gates30.log" | tail -14
  if [[ -n ${OLD:-} ]]; then
    PYTHONPATH="$OLD:${PYTHONPATH#$PWD:}" python3 "$OLD/scripts/bench/bench_gates.py" --qubits 30 --gate-sizes 5 6 7 8 \
      --targets 0 --backends cublas,int8-auto --device gpu --repeats 5 --json "$out/gates30_old.json" 2>&1 \
      | tee "$out/gates30_old.log" | tail -8
  fi
  ncu --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:ozaki_gate_wide -c 1 \
    python3 scripts/dev/profile_once.py 30 8 9 2>&1 | tee "$out/ncu_wide_d8.txt" \
    | grep -E "Duration|L2 Cache Throughput|DRAM Throughput|Memory Throughput|Compute \(SM\)|L1/TEX Hit|L2 Hit"
fi

if [[ $what == wide9 ]]; then
  python3 scripts/dev/wide_variants.py --qubits 30 --gate-sizes 9 --targets 0 12 --repeats 3 2>&1 \
    | tee "$out/wide9.log" | tail -6
fi
