"""`qsim run --gpus P` end to end: simulated ranks with --device cpu, and its one-line errors."""
import json

import pytest

from circuits import brickwork
from gemm_backend.arrays import gpu_available
from qsim import Simulator

from .test_cli import qsim


def test_simulated_ranks_report_what_the_single_device_run_reports(tmp_path):
    out = tmp_path / "split.json"
    proc = qsim("run", "--qubits", "10", "--gate-size", "3", "--depth", "4", "--seed", "2", "--backend", "int8-9",
                "--gpus", "4", "--device", "cpu", "--shots", "2000", "--reference", "dd", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    expected = Simulator("int8-9", device="cpu", progress=False).run(brickwork(10, 3, 4, seed=2))
    assert complex(report["amplitude_0"]["re"], report["amplitude_0"]["im"]) == expected.amplitude(0)
    assert report["norm"] == pytest.approx(1, abs=1e-13) and report["gates"] == len(report["per_gate"]) == 12
    split = report["distributed"]
    assert split["ranks"] == 4 and split["exchanges"] > 0 and len(split["exchange_log"]) == split["exchanges"]
    assert sum(report["counts"].values()) == 2000 and 0 < report["accuracy"]["l2_error"] < 1e-13
    for label in ("ranks           4 (2 global qubits)", "per gate split  compute", "accuracy against"):
        assert label in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["--gpus", "3", "--device", "cpu"], "power of two"),
    (["--gpus", "16", "--device", "cpu"], "cannot be split over 16 ranks"),
    (["--gpus", "4", "--device", "cpu", "--gate-size", "4"], "gate 0 acts on 4 qubits"),
    (["--gpus", "2", "--timeout", "0"], "--timeout must be a positive"),
])
def test_bad_distributed_input_gives_one_line_error(args, message):
    proc = qsim("run", "--qubits", "4", "--gate-size", "2", "--depth", "1", *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(gpu_available(), reason="a GPU is present")
def test_gpus_without_gpu_is_a_clear_error():
    proc = qsim("run", "--qubits", "6", "--gate-size", "2", "--gpus", "2")
    assert proc.returncode == 2 and "NCCL needs a CUDA GPU" in proc.stderr and "--device cpu" in proc.stderr


def test_zero_gpus_is_refused_by_the_parser():
    proc = qsim("run", "--qubits", "6", "--gpus", "0", "--device", "cpu")
    assert proc.returncode == 2 and "must be >= 1" in proc.stderr
