"""Faults in the middle of the work: the device out of memory at gate k, a full disk while the JSON
is written, Ctrl-C during `compare` or during the write. Each ends in one clear line (exit 2, or
130 for an interrupt) and leaves no output file behind, whole or half: an old file stays as it was."""
import errno
import os

import numpy as np
import pytest

import qsim.output
import qsim.run_loop
from circuits import brickwork
from qsim import SimulationError, Simulator, cli

RUN = ["run", "--qubits", "6", "--gate-size", "2", "--depth", "3", "--device", "cpu", "--no-progress"]
COMPARE = ["compare", "--qubits", "5", "--gate-size", "2", "--depth", "2", "--device", "cpu", "--no-progress",
           "--backends", "cublas,int8-auto,cgemm"]


class OutOfMemoryError(MemoryError):
    """What cupy raises when the device has no memory left (cupy.cuda.memory.OutOfMemoryError is a
    MemoryError)."""


def fail_at_gate(monkeypatch, k: int, error: BaseException) -> list:
    """Make the k-th gate applied from now on (0-based, over every run) raise `error`; returns the
    list of gates applied, which grows as they are."""
    applied = []

    def failing(real):
        def apply(*args, **kwargs):
            if len(applied) == k:
                raise error
            applied.append(k)
            return real(*args, **kwargs)
        return apply

    # both routes of a gate: the standard layout's and the CPU's gathered one
    for route in ("apply_plan", "apply_gathered"):
        monkeypatch.setattr(qsim.run_loop, route, failing(getattr(qsim.run_loop, route)))
    return applied


def files_in(folder) -> list:
    return sorted(p.name for p in folder.iterdir())


def run_cli(argv, capsys) -> tuple:
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured


def test_device_out_of_memory_at_gate_k_ends_the_run_with_one_line_and_no_file(tmp_path, monkeypatch, capsys):
    applied = fail_at_gate(monkeypatch, 4, OutOfMemoryError("Out of memory allocating 8,589,934,592 bytes"))
    code, captured = run_cli([*RUN, "--json", tmp_path / "run.json"], capsys)
    assert code == 2 and len(applied) == 4
    assert captured.err.strip().splitlines() == [
        "qsim: error: out of cpu memory at operation 4 of 8 (Out of memory allocating 8,589,934,592 bytes); the run "
        "stopped and its half-updated state is discarded (an initial_state passed in is unchanged); use fewer qubits "
        "or a smaller workspace_bytes"]
    assert captured.out == "" and files_in(tmp_path) == []


def test_out_of_memory_leaves_the_callers_initial_state_unchanged(monkeypatch):
    initial = np.full(1 << 6, 1 / 8, dtype=np.complex128)
    kept = initial.copy()
    fail_at_gate(monkeypatch, 2, MemoryError())
    with pytest.raises(SimulationError, match=r"out of cpu memory at operation 2 of 8 \(MemoryError\)"):
        Simulator(device="cpu", progress=False).run(brickwork(6, 2, 3, seed=1), initial)
    assert np.array_equal(initial, kept)


def test_out_of_memory_in_a_later_backend_of_compare_writes_nothing(tmp_path, monkeypatch, capsys):
    old = tmp_path / "cmp.json"
    old.write_text("old\n")
    fail_at_gate(monkeypatch, 4 + 2, OutOfMemoryError("Out of memory"))  # the 3rd gate of the 2nd backend
    code, captured = run_cli([*COMPARE, "--json", old], capsys)
    assert code == 2 and "out of cpu memory at operation 2 of 4" in captured.err
    assert captured.out == "" and files_in(tmp_path) == ["cmp.json"] and old.read_text() == "old\n"


class _FullDisk:
    """A file handle on a disk that fills up half way through the first large write."""

    def __init__(self, handle, error: BaseException):
        self.handle, self.error = handle, error

    def write(self, data):
        self.handle.write(data[:len(data) // 2])
        self.handle.flush()
        raise self.error

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.handle.__exit__(*exc)


def fill_disk_on_write(monkeypatch, error: BaseException) -> None:
    real = os.fdopen
    monkeypatch.setattr(qsim.output.os, "fdopen", lambda *args, **kwargs: _FullDisk(real(*args, **kwargs), error))


def test_a_full_disk_while_writing_json_leaves_the_old_file_whole(tmp_path, monkeypatch, capsys):
    old = tmp_path / "run.json"
    old.write_text('{"old": true}\n')
    fill_disk_on_write(monkeypatch, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    code, captured = run_cli([*RUN, "--json", old], capsys)
    assert code == 2
    assert captured.err.strip().splitlines()[-1] == f"qsim: error: cannot write {str(old)!r}: No space left on device"
    assert files_in(tmp_path) == ["run.json"] and old.read_text() == '{"old": true}\n'


def test_a_full_disk_while_writing_a_new_json_leaves_no_file(tmp_path, monkeypatch, capsys):
    fill_disk_on_write(monkeypatch, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    code, captured = run_cli(["backends", "--json", tmp_path / "b.json"], capsys)
    assert code == 2 and "No space left on device" in captured.err and files_in(tmp_path) == []


def test_ctrl_c_during_compare_leaves_no_file(tmp_path, monkeypatch, capsys):
    fail_at_gate(monkeypatch, 4 + 3, KeyboardInterrupt())  # the last gate of the 2nd backend
    code, captured = run_cli([*COMPARE, "--json", tmp_path / "cmp.json"], capsys)
    assert code == 130 and captured.err.strip().splitlines()[-1] == "qsim: interrupted"
    assert captured.out == "" and files_in(tmp_path) == []


def test_ctrl_c_while_the_json_is_written_leaves_the_old_file_whole(tmp_path, monkeypatch, capsys):
    old = tmp_path / "cmp.json"
    old.write_text("old\n")
    fill_disk_on_write(monkeypatch, KeyboardInterrupt())
    code, captured = run_cli([*COMPARE, "--json", old], capsys)
    assert code == 130 and "qsim: interrupted" in captured.err
    assert files_in(tmp_path) == ["cmp.json"] and old.read_text() == "old\n"
