"""scripts/bench/bench_gates.py keeps what it measured: each finished row goes to standard error and,
with --json, to the file at once, so that a run stopped on a time limit (a device call's) keeps its
rows; the last write marks the file finished."""
import json
import sys

import pytest

from .helpers import load_script

SCRIPT = "scripts/bench/bench_gates.py"
ARGUMENTS = ["--device", "cpu", "--qubits", "6", "--gate-sizes", "2", "3", "--targets", "0", "top",
             "--backends", "cublas,int8-auto", "--repeats", "1", "--batch", "1"]


def _run(module, monkeypatch, path):
    monkeypatch.setattr(sys, "argv", ["bench_gates.py", *ARGUMENTS, "--json", str(path)])
    module.main()


def test_a_finished_run_writes_every_row_and_says_so(tmp_path, monkeypatch, capsys):
    path = tmp_path / "gates.json"
    _run(load_script(SCRIPT), monkeypatch, path)
    written = json.loads(path.read_text())
    assert written["finished"] is True and written["backends"] == ["cublas", "int8-auto"]
    assert [(row["d"], row["targets"]) for row in written["rows"]] == [(2, [0, 1]), (2, [4, 5]), (3, [0, 1, 2]),
                                                                      (3, [3, 4, 5])]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and lines[0].startswith("N=6 d=2 targets 0: cublas ") and "int8-auto" in lines[0]


def test_a_stopped_run_keeps_the_rows_it_finished(tmp_path, monkeypatch, capsys):
    """The third timing (the second row's first backend) is interrupted: the file holds the first
    row, marked unfinished."""
    module = load_script(SCRIPT)
    timings = iter(range(3))
    real = module.median_time

    def median_time(*args, **kwargs):
        if next(timings) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "median_time", median_time)
    path = tmp_path / "gates.json"
    with pytest.raises(KeyboardInterrupt):
        _run(module, monkeypatch, path)
    written = json.loads(path.read_text())
    assert written["finished"] is False and [row["targets"] for row in written["rows"]] == [[0, 1]]
    assert set(written["rows"][0]) >= {"cublas_ms", "int8-auto_ms", "int8-auto_plan"}
    assert len(capsys.readouterr().err.splitlines()) == 1
