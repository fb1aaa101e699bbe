"""What the reports call things: the backend's name with what did the work ("cublas (numpy)" on
the CPU), throughput in a unit that shows it, and one line at start on a machine whose NVIDIA GPU
--device auto cannot use."""
import json

import pytest

from qsim import run_summary
from qsim import cli, device


def test_run_names_what_did_the_work_and_a_readable_throughput(capsys):
    assert cli.main(["run", "--qubits", "6", "--gate-size", "2", "--depth", "1", "--device", "cpu", "--no-progress",
                     "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["implementation"] == "numpy"
    lines = dict(line.split(None, 1) for line in captured.err.splitlines() if line.startswith(("backend", "throughput")))
    assert lines["backend"] == "cublas (numpy)"
    assert "FLOP/s" in lines["throughput"] and not lines["throughput"].startswith("0.000")


@pytest.mark.parametrize("rate, text", [(4.13e8, "413 MFLOP/s"), (2.5e13, "25 TFLOP/s"), (1.2e15, "1.2 PFLOP/s"),
                                        (999.0, "999 FLOP/s"), (1.5e3, "1.5 kFLOP/s"), (0.0, "- (no timed gate)")])
def test_flop_rates_keep_three_significant_digits(rate, text):
    assert run_summary._flop_rate(rate) == text


@pytest.fixture
def nvidia_machine(monkeypatch):
    monkeypatch.setattr(device, "gpu_available", lambda: False)
    monkeypatch.setattr(device, "nvidia_gpu_present", lambda: True)
    return monkeypatch


def test_a_gpu_without_cupy_is_told_the_extra_to_install(nvidia_machine, capsys):
    nvidia_machine.setattr(device, "cupy_module", lambda: None)
    assert "pip install 'qsim-emulated[gpu]'" in device.unused_gpu_note()
    assert cli.main(["run", "--qubits", "4", "--gate-size", "2", "--depth", "1", "--no-progress"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("qsim: note:")]
    assert len(notes) == 1 and "cupy is not installed, so this runs on the CPU" in notes[0]


def test_a_gpu_cupy_cannot_see_is_told_too(nvidia_machine):
    nvidia_machine.setattr(device, "cupy_module", lambda: object())
    assert "cupy sees no CUDA device" in device.unused_gpu_note()


def test_no_note_without_an_nvidia_gpu_or_with_a_device_asked_for(monkeypatch, capsys):
    monkeypatch.setattr(device, "gpu_available", lambda: False)
    monkeypatch.setattr(device, "nvidia_gpu_present", lambda: False)
    assert device.unused_gpu_note() is None
    monkeypatch.setattr(device, "nvidia_gpu_present", lambda: True)
    monkeypatch.setattr(device, "cupy_module", lambda: None)
    assert cli.main(["run", "--qubits", "4", "--gate-size", "2", "--depth", "1", "--device", "cpu", "--no-progress"]) == 0
    assert "qsim: note:" not in capsys.readouterr().err
