#!/usr/bin/env bash
# GPU work of round 25 (issue 24's figures at one tree, the profiles of every kernel that misses, the rates
# the physical limits are computed from).
#   bash scripts/dev/gpu_round25.sh OUTDIR rates     # INT8 mma.sync and wgmma rates (scripts/dev/measure/wgmma_int8.cu)
#   bash scripts/dev/gpu_round25.sh OUTDIR headline  # qsim run --qubits 30 --gate-size 5 --depth 20 --seed 1, cublas and
#                                                    # int8-auto: total, per gate, peak memory
#   bash scripts/dev/gpu_round25.sh OUTDIR profile   # ncu of int8-auto's gate kernel at N = 28, d = 5, 6 (fused) and
#                                                    # 7, 8 (wide), first target 0, the FP64 contract's plans
#   bash scripts/dev/gpu_round25.sh OUTDIR gates     # bench_gates.py at N = 30, d = SIZES (5 .. 10), first targets
#                                                    # TARGETS (0 1 middle top) and spread: cublas, int8-auto,
#                                                    # int8-auto@target_error=1e-10
#   bash scripts/dev/gpu_round25.sh OUTDIR strides   # cuBLAS's strided batch against the transposed rows product,
#                                                    # d = 7..10, first targets 0..12 (scripts/dev/native_strides.py)
#   bash scripts/dev/gpu_round25.sh OUTDIR narrow    # bench_gates.py at N = 30, d = 7..10, first targets 0 1 2 3:
#                                                    # cublas (now rows below stride 16) and int8-auto
#   bash scripts/dev/gpu_round25.sh OUTDIR brickwork # qsim run --qubits 30 --gate-size 7 --depth 4 --seed 1: cublas with
#                                                    # min_batched_stride=1 (the strided batch), cublas, int8-auto
#   bash scripts/dev/gpu_round25.sh OUTDIR tests     # gpu_round14.sh tests on TESTS (default: the cuBLAS paths' files)
# Modes may be joined by commas (rates,headline,profile). Name the kind (nvidia-h100-x1); carry .whl.
out=${1:-out}
source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' "$(dirname "$0")/gpu_round14.sh")
what=,${2:-gates},  # after the shared set-up, which sets its own
qsim=(python3 -c "import sys; from qsim.cli import main; sys.exit(main())")

if [[ $what == *,rates,* ]]; then
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a scripts/dev/measure/wgmma_int8.cu -o /tmp/wgmma_int8 \
    && timeout 120 /tmp/wgmma_int8 2>&1 | tee "$out/rates.txt" | tail -12
fi

if [[ $what == *,headline,* ]]; then
  for backend in cublas int8-auto; do
    timeout 150 "${qsim[@]}" run --qubits 30 --gate-size 5 --depth 20 --seed 1 --backend "$backend" --device gpu \
      --no-progress --json "$out/headline_d5_${backend}.json" 2>&1 \
      | grep -E "total time|per gate|peak memory|rror" | sed "s/^/d=5 $backend  /"
  done | tee "$out/headline.log"
fi

if [[ $what == *,profile,* ]]; then
  sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats)
  for d in ${PROFILE_SIZES:-5 6 7 8}; do
    pattern=$([[ $d -le 6 ]] && echo 'ozaki_gate($|<|\()' || echo ozaki_gate_wide)
    # the first application compiles and plans; profile the second launch of the gate kernel
    timeout 150 ncu --clock-control none "${sections[@]}" -k regex:"$pattern" --launch-skip 1 \
      --launch-count 1 python3 scripts/dev/profile_gate.py 28 "$d" int8-auto 0 3 > "$out/ncu_d$d.txt" 2>&1
    echo "== d=$d"
    grep -E "first target|^  [a-z_]+|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|No Eligible|Executed Ipc A|Warp Cycles Per Issued" \
      "$out/ncu_d$d.txt" | head -16
  done
fi

if [[ $what == *,gates,* ]]; then
  timeout "${GATE_SECONDS:-560}" python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes ${SIZES:-5 6 7 8 9 10} \
    --targets ${TARGETS:-0 1 middle top} --scattered spread --backends cublas,int8-auto,int8-auto@target_error=1e-10 \
    --device gpu --repeats 5 --json "$out/gates30.json" 2> "$out/gates30_rows.log" | tee "$out/gates30.log" | tail -40
  tail -40 "$out/gates30_rows.log"
fi

if [[ $what == *,strides,* ]]; then
  timeout 500 python3 scripts/dev/native_strides.py --qubits 30 --gate-sizes 7 8 9 10 --strides 0 1 2 3 4 5 6 7 8 10 12 \
    2>&1 | tee "$out/native_strides.txt" | tail -48
fi

if [[ $what == *,narrow,* ]]; then
  timeout 400 python3 scripts/bench/bench_gates.py --qubits 30 --gate-sizes 7 8 9 10 --targets 0 1 2 3 \
    --backends cublas,int8-auto --device gpu --repeats 5 --json "$out/narrow30.json" 2> "$out/narrow30_rows.log" \
    | tee "$out/narrow30.log" | tail -20
fi

# gpu_round14.sh's tests (TESTS=, TEST_SECONDS=), this round's files by default
[[ $what == *,tests,* ]] && TESTS=${TESTS:-tests/test_zgemm.py tests/test_native_gate.py tests/test_target_layout.py} \
  bash "$(dirname "$0")/gpu_round14.sh" "$out" tests

if [[ $what == *,brickwork,* ]]; then
  for backend in cublas@min_batched_stride=1 cublas int8-auto; do
    timeout 150 "${qsim[@]}" run --qubits 30 --gate-size 7 --depth 4 --seed 1 --backend "$backend" --device gpu \
      --no-progress --json "$out/brickwork_d7_${backend//[@=]/_}.json" 2>&1 \
      | grep -E "total time|per gate|peak memory|rror" | sed "s/^/d=7 $backend  /"
  done | tee "$out/brickwork.log"
fi
