#!/usr/bin/env bash
# GPU checks and benchmarks of issue 26 (the fused fp16x2 gate kernel, multiword_gate.py, with
# 4 x 4 gates packed two columns to a K = 8 kernel column):
#   bash scripts/dev/gpu_issue26.sh OUTDIR
# 1. the gpu-marked tests of the multiword backend and its fused gate kernel, packed and not;
# 2. "Must show": fp16x2 beside cublas at d = 2..6, N = 28 and 30, every first target: time, the
#    memory floor and time / floor (bench_gates.py; the path names a packed kernel "fused@K8"),
#    and d = 6 at N = 28 again, first targets 5..9, 15 repeats (was round 7's worst, target 7,
#    noise? cublas was slow there too);
# 3. the error of one gate against double-double at N = 26, d = 2..6 (first targets 0, 1, middle,
#    top and the scattered sets): fp16x2 (fused), fp16x2@fused=false (today's path), cgemm, cublas.
# 4. launch variants of the kernel (packed kernel size, n-tiles per warp, blocks per
#    multiprocessor) at N = 28, d = 2, 3, 6, first targets 0, 1, 12 and top
#    (scripts/dev/fp16x2_variants.py), for choosing PACKED_K and default_shape.
# Writes device.txt, gpu_tests.log, gates28.json, gates30.json, d6_28.json, errors26.json,
# bench.log, variants.log (8 files) into OUTDIR and ends with a summary table. About 7 minutes on
# an H100.
set -uo pipefail
out=${1:-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
git log -1 --format=%H 2>/dev/null | tee -a "$out/device.txt"

python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_multiword_gate.py tests/test_multiword_gate_packed.py \
  tests/test_multiword.py 2>&1 \
  | tee "$out/gpu_tests.log" | tail -15
if [[ ${PIPESTATUS[0]} -ne 0 ]]; then echo "gpu tests failed: no benchmarks" >&2; exit 1; fi

for n in 28 30; do
  python3 scripts/bench/bench_gates.py --device gpu --qubits $n --gate-sizes 2 3 4 5 6 --targets $(seq 0 $((n - 2))) \
    --backends cublas,fp16x2 --repeats 5 --json "$out/gates$n.json" 2>&1 | tee -a "$out/bench.log" | tail -3
done
python3 scripts/bench/bench_gates.py --device gpu --qubits 28 --gate-sizes 6 --targets 5 6 7 8 9 \
  --backends cublas,fp16x2 --repeats 15 --json "$out/d6_28.json" 2>&1 | tee -a "$out/bench.log" | tail -7
python3 scripts/bench/bench_gates.py --device gpu --qubits 26 --gate-sizes 2 3 4 5 6 --targets 0 1 middle top \
  --scattered spread gaps top0 --backends cublas,fp16x2,fp16x2@fused=false,cgemm --repeats 3 --error \
  --json "$out/errors26.json" 2>&1 | tee -a "$out/bench.log" | tail -3

python3 scripts/dev/fp16x2_variants.py --qubits 28 --gate-sizes 2 3 6 --targets 0 1 12 top 2>&1 \
  > "$out/variants.log"

python3 - "$out" <<'EOF'
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
print("\ntime / memory floor over every first target (median, worst), and fp16x2's kernels")
print(f"{'N':>3} {'d':>2} {'floor_ms':>9} {'cublas med':>10} {'worst':>6} {'fp16x2 med':>10} {'worst':>6}  kernels")
for n in (28, 30):
    path = out / f"gates{n}.json"
    if not path.exists():
        print(f"{n:>3} (no {path.name})")
        continue
    rows = json.loads(path.read_text())["rows"]
    for d in sorted({r["d"] for r in rows}):
        sel = [r for r in rows if r["d"] == d]
        cell = lambda key: f"{statistics.median(r[key] for r in sel):>10.2f} {max(r[key] for r in sel):>6.2f}"  # noqa: E731
        kernels = ",".join(sorted({r["fp16x2_kernel"] for r in sel}))
        print(f"{n:>3} {d:>2} {sel[0]['floor_ms']:>9.2f} {cell('cublas_x_floor')} {cell('fp16x2_x_floor')}  {kernels}")
path = out / "errors26.json"
if path.exists():
    data = json.loads(path.read_text())
    labels = data["backends"]
    print("\nerror vs double-double, N = 26 (max over the target sets), and time / floor (worst)")
    print(f"{'d':>2} " + " ".join(f"{label:>20}" for label in labels))
    for d in sorted({r["d"] for r in data["rows"]}):
        sel = [r for r in data["rows"] if r["d"] == d]
        cells = [f"{max(r[f'{l}_error'] for r in sel):.1e} {max(r[f'{l}_x_floor'] for r in sel):5.2f}x" for l in labels]
        print(f"{d:>2} " + " ".join(f"{c:>20}" for c in cells))
EOF
echo; echo "launch variants (time / floor, N = 28; d: default, *: fastest)"; cat "$out/variants.log"
