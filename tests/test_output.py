"""qsim.output: output paths checked up front, files written whole or not at all."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qsim.errors import SimulationError
from qsim.output import atomic_output, check_output_path, check_output_path_or_exit, write_json


def leftovers(directory) -> list:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_writable_path_passes_and_leaves_nothing_behind(tmp_path):
    check_output_path(tmp_path / "new.json", "--json")
    check_output_path(str(tmp_path / "new.json"), "--json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make_path, message", [
    (lambda d: d / "missing" / "r.json", "the directory '{d}/missing' does not exist; create it first"),
    (lambda d: d, "'{d}' is a directory; give a file name"),
    (lambda d: d / "a_file" / "r.json", "'{d}/a_file' is not a directory"),
    (lambda d: "", "needs a file name, got ''"),
    (lambda d: 3, "needs a file name, got 3"),
])
def test_unusable_paths_are_named_in_one_line(tmp_path, make_path, message):
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(SimulationError) as caught:
        check_output_path(make_path(tmp_path), "--json")
    assert str(caught.value).startswith("--json") and message.format(d=tmp_path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_directory_that_refuses_new_files_is_reported(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)  # what a read-only mount or a directory without w gives
    with pytest.raises(SimulationError, match=f"--plot '{tmp_path}/p.png': cannot create a file in "
                                              f"'{tmp_path}' \\(Permission denied\\)"):
        check_output_path(tmp_path / "p.png", "--plot")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_reported(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(SimulationError, match="cannot create a file in"):
            check_output_path(tmp_path / "r.json", "--json")
    finally:
        tmp_path.chmod(0o700)


def test_scripts_get_exit_code_2_and_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        check_output_path_or_exit(tmp_path / "no" / "x.json", "--json", "bench_gates.py")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("bench_gates.py: error: --json") and err.count("\n") == 1


def test_write_json_replaces_the_file_whole(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old content")
    write_json(path, {"x": np.float64(0.5), "n": np.int64(3), "z": 1 + 2j, "list": [1, 2]})
    assert json.loads(path.read_text()) == {"x": 0.5, "n": 3, "z": {"re": 1.0, "im": 2.0}, "list": [1, 2]}
    assert leftovers(tmp_path) == []


def test_new_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        write_json(tmp_path / "r.json", {})
    finally:
        os.umask(umask)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644


def test_write_json_dash_prints(capsys):
    write_json("-", {"a": 1})
    assert json.loads(capsys.readouterr().out) == {"a": 1}


def test_a_failure_while_writing_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"complete": true}\n')
    with pytest.raises(RuntimeError):
        with atomic_output(path) as handle:
            handle.write('{"half": ')
            raise RuntimeError("killed half way")
    assert json.loads(path.read_text()) == {"complete": True}
    assert leftovers(tmp_path) == []


def test_unserialisable_payload_fails_before_the_file_is_touched(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("previous\n")
    with pytest.raises(TypeError, match="cannot write object as JSON"):
        write_json(path, {"bad": object()})
    assert path.read_text() == "previous\n" and leftovers(tmp_path) == []


def test_an_os_error_during_the_write_is_one_line_and_cleans_up(tmp_path, monkeypatch):
    def disk_full(descriptor):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(SimulationError, match=r"cannot write '.*r.json': No space left on device"):
        write_json(tmp_path / "r.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []


def test_binary_output_for_plots(tmp_path):
    with atomic_output(tmp_path / "f.bin", binary=True) as handle:
        handle.write(b"\x00\x01")
    assert (tmp_path / "f.bin").read_bytes() == b"\x00\x01"


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
def test_devices_and_pipes_are_refused(tmp_path, special):
    """Renaming over /dev/null (as root) or a named pipe would replace it with a regular file."""
    path = tmp_path / "fifo" if special == "fifo" else special
    if special == "fifo":
        os.mkfifo(path)
    with pytest.raises(SimulationError, match="is not a regular file"):
        check_output_path(path, "--json")


def test_a_link_stays_a_link_and_a_replaced_file_keeps_its_mode(tmp_path):
    """Writing through a symbolic link replaces the file it names (not the link with a copy), and
    a file made readable to a group only stays so."""
    target, link = tmp_path / "r.json", tmp_path / "link.json"
    target.write_text("{}")
    target.chmod(0o640)
    link.symlink_to(target)
    check_output_path(link, "--json")
    write_json(link, {"a": 1})
    assert link.is_symlink() and json.loads(target.read_text()) == {"a": 1}
    assert target.stat().st_mode & 0o777 == 0o640 and leftovers(tmp_path) == []


SCRIPTS = Path(__file__).resolve().parent.parent / "scripts" / "bench"


@pytest.mark.parametrize("script, arguments", [
    ("bench_gemm.py", ["--device", "cpu", "--json"]),
    ("bench_gates.py", ["--device", "cpu", "--json"]),
    ("bench_fp16_blocks.py", ["--device", "cpu", "--json"]),
    ("bench_trajectories.py", ["--device", "cpu", "--json"]),
    ("bench_distributed.py", ["--device", "cpu", "--json"]),
    ("make_qft_qasm.py", ["4"]),
])
def test_scripts_check_their_output_path_first(tmp_path, script, arguments):
    """A missing folder ends every script before its work: exit code 2, one line, no traceback."""
    proc = subprocess.run([sys.executable, str(SCRIPTS / script), *arguments, str(tmp_path / "missing" / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.count("\n") == 1 and "does not exist; create it first" in proc.stderr
