"""scripts/bench/bench_distributed.py end to end on simulated CPU ranks (a smoke test: the script runs,
writes its JSON and table; no timing is checked)."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench" / "bench_distributed.py"


def test_bench_runs_every_fitting_configuration_and_agrees_with_one_gpu(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--gpus", "4", "--qubits", "9", "10",
                           "--max-local-qubits", "9", "--backends", "int8-9", "--gate-size", "4", "--depth", "4",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(out.read_text())["runs"]
    assert sorted((r["qubits"], r["gpus"]) for r in runs) == [(9, 1), (9, 2), (9, 4), (10, 2), (10, 4)]
    assert all(r["status"] == "ok" and r["gates"] > 0 for r in runs)
    assert [r["amp0_vs_1gpu"] for r in runs if r["qubits"] == 9] == [0.0, 0.0, 0.0]  # int8-9: bit for bit
    assert any(r["exchanges"] for r in runs)
    assert "exchange ms/gate" in proc.stdout
