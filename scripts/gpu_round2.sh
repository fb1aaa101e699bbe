#!/usr/bin/env bash
# The GPU checks and benchmarks of the fused-INT8 round, in two device calls that fit the lease:
#   bash scripts/gpu_round2.sh tests   -> gpu-marked tests, then the gate table at N = 30
#   bash scripts/gpu_round2.sh runs    -> headline runs, Ozaki-II square GEMM, per-gate errors at N = 28
#   bash scripts/gpu_round2.sh compare -> compare at N = 30 against double-double, trajectories
#   bash scripts/gpu_round2.sh native  -> DMMA kernel tests, launch variants, gate table and runs at N = 30
#   bash scripts/gpu_round2.sh custatevec -> the N = 30 brickwork through cuStateVec and our engine
#     (carry .cusv/ with the custatevec-cu13 wheel instead of .whl/: both exceed the transfer limit)
#   bash scripts/gpu_round2.sh crt     -> int8-auto's Ozaki-II gates (d = 7..10) and 16384^3 square GEMM
#   bash scripts/gpu_round2.sh crt-default -> int8-crt's GPU tests and square GEMMs at its default (automatic)
#     workspace, the checks round 4 left unrun
# Outputs (logs, JSON) go to $OUT (or ./out). Wheels for qiskit are taken from .whl/ when present.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
case ${1:-tests} in
tests)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tee "$out/gpu_tests.log" | tail -25
  python3 scripts/bench_gates.py --qubits 30 --gate-sizes 2 3 4 5 6 --targets 0 2 middle top \
    --backends cublas,int8-auto,int8-7,int8-8 --device gpu --json "$out/bench_gates_n30.json" 2>&1 | tail -22
  ;;
runs)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki_crt.py tests/test_distributed_gpu.py \
    "tests/test_ozaki.py::test_gpu_apply_batched_matches_cpu" 2>&1 | tee "$out/gpu_tests2.log" | tail -6
  for b in cublas int8-auto; do
    python3 -m qsim.cli run --qubits 30 --gate-size 5 --depth 20 --seed 1 --backend $b --no-progress \
      --json "$out/run30_$b.json" 2>&1 | tail -14
  done
  python3 scripts/bench_gemm.py --device gpu --backends cublas,int8-crt-14,int8-crt-16,int8-7 --shapes square \
    --sizes 8192 --inputs phi --error-cols 256 --option workspace_bytes=17179869184 --repeats 3 \
    --json "$out/crt_square.json" 2>&1 | tail -6
  python3 scripts/bench_gates.py --qubits 28 --gate-sizes 5 6 --targets 0 2 --backends cublas,int8-auto,int8-7 \
    --device gpu --error --json "$out/bench_gates_n28_error.json" 2>&1 | tail -6
  ;;
compare)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki.py -k "rho_rule" 2>&1 | tail -2
  python3 -m qsim.cli compare --qubits 30 --gate-size 5 --depth 20 --seed 1 --no-progress \
    --backends cublas,int8-auto,int8-auto@rho=0,int8-auto@rho=1 --json "$out/compare30.json" 2>&1 | tail -8
  python3 scripts/bench_trajectories.py --qubits 28 --gate-sizes 2 5 --rate 0.1 --trajectories 10 --device gpu \
    --json "$out/bench_trajectories.json" 2>&1 | tail -14
  ;;
native)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_native_gate.py tests/test_zgemm.py tests/test_ozaki_gate.py \
    2>&1 | tee "$out/gpu_tests_native.log" | tail -8
  python3 scripts/dev_native_variants.py --qubits 30 --gate-sizes 3 4 5 6 2>&1 | tee "$out/native_variants.log"
  python3 scripts/bench_gates.py --qubits 30 --gate-sizes 2 3 4 5 6 --targets 0 1 2 3 middle top \
    --backends cublas,cublas@dmma_min_qubits=7,cublas@dmma_min_qubits=3,int8-auto --device gpu \
    --json "$out/bench_gates_native.json" 2>&1 | tail -32
  for b in cublas int8-auto; do
    python3 -m qsim.cli run --qubits 30 --gate-size 5 --depth 20 --seed 1 --backend $b --no-progress \
      --json "$out/run30_native_$b.json" 2>&1 | tail -6
  done
  ;;
crt)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki.py -k "large_gates" 2>&1 | tail -2
  python3 scripts/bench_gates.py --qubits 30 --gate-sizes 7 8 9 10 --targets 0 top --backends cublas,int8-auto \
    --device gpu --repeats 3 --batch 1 --json "$out/bench_gates_crt_n30.json" 2>&1 | tail -9
  python3 scripts/bench_gates.py --qubits 30 --gate-sizes 7 8 --targets 0 --backends cublas,int8-auto@large_gates=ozaki1 \
    --device gpu --repeats 3 --batch 1 --json "$out/bench_gates_ozaki1_n30.json" 2>&1 | tail -3
  python3 scripts/bench_gates.py --qubits 26 --gate-sizes 7 8 --targets 0 --backends cublas,int8-auto \
    --device gpu --repeats 3 --batch 1 --error --json "$out/bench_gates_crt_n26_error.json" 2>&1 | tail -5
  python3 scripts/bench_gemm.py --device gpu --backends cublas,int8-crt-14,int8-crt-16 --shapes square \
    --sizes 16384 --inputs phi --error-cols 256 --option workspace_bytes=17179869184 --repeats 3 \
    --json "$out/crt_square_16384.json" 2>&1 | tail -5
  ;;
crt-default)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ozaki_crt.py 2>&1 | tee "$out/gpu_tests_crt.log" | tail -3
  python3 scripts/bench_gemm.py --device gpu --backends cublas,int8-crt-14,int8-crt-15,int8-crt-16 --shapes square \
    --sizes 8192 16384 --inputs phi --error-cols 256 --repeats 3 --json "$out/crt_square_default.json" 2>&1 | tail -9
  ;;
custatevec)
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_native_gate.py tests/test_state.py \
    2>&1 | tee "$out/gpu_tests_native.log" | tail -4
  python3 scripts/bench_gates.py --qubits 30 --gate-sizes 2 3 4 5 6 --targets 0 1 2 3 4 8 middle top \
    --backends cublas,cublas@dmma_min_qubits=7,int8-auto --device gpu --json "$out/bench_gates_native.json" 2>&1 | tail -42
  python3 scripts/bench_custatevec.py --qubits 30 --gate-size 5 --depth 20 --seed 1 \
    --backends cublas,cublas@dmma_min_qubits=7,int8-auto --json "$out/custatevec30.json" 2>&1 | tail -12
  ;;
esac
