"""scripts/bench_custatevec.py: the parts that need no GPU (library lookup, the no-GPU exit, the
floor and summary arithmetic, the target order handed to cuStateVec, the chunked comparison)."""
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from circuits import Circuit, Gate, haar_unitary
from gemm_backend.arrays import gpu_available
from qsim import Simulator

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_custatevec.py"
_spec = importlib.util.spec_from_file_location("bench_custatevec", SCRIPT)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a real library")
    return path


def test_lookup_finds_nothing_and_says_how_to_get_it(tmp_path):
    library, reason = bench.find_custatevec_library(None, tmp_path, {}, tmp_path / "unzipped")
    assert library is None
    assert "cuStateVec not found" in reason and "pip download" in reason and "custatevec-cu13" in reason
    assert "\n" not in reason


def test_lookup_order_flag_then_environment_then_repository(tmp_path):
    flagged, environment = _touch(tmp_path / "a" / "libcustatevec.so.1"), _touch(tmp_path / "b" / "libcustatevec.so")
    in_repo = _touch(tmp_path / "cusv" / "cuquantum" / "lib" / "libcustatevec.so.1")
    env = {"CUSTATEVEC_LIB": str(environment)}
    assert bench.find_custatevec_library(str(flagged), tmp_path, env)[0] == str(flagged)
    assert bench.find_custatevec_library(None, tmp_path, env)[0] == str(environment)
    assert bench.find_custatevec_library(None, tmp_path, {})[0] == str(in_repo)
    library, reason = bench.find_custatevec_library(str(tmp_path / "typo.so"), tmp_path, env)
    assert library is None and "--custatevec-lib" in reason


def test_lookup_searches_dot_cusv_and_unzips_a_wheel(tmp_path):
    nested = _touch(tmp_path / "repo" / ".cusv" / "x" / "cuquantum" / "lib" / "libcustatevec.so.1")
    assert bench.find_custatevec_library(None, tmp_path / "repo", {})[0] == str(nested)
    wheel_dir = tmp_path / "wheel_repo" / ".cusv"
    wheel_dir.mkdir(parents=True)
    with zipfile.ZipFile(wheel_dir / "custatevec_cu13-1.15.0-py3-none-manylinux2014_x86_64.whl", "w") as wheel:
        wheel.writestr("cuquantum/lib/libcustatevec.so.1", b"elf")
        wheel.writestr("cuquantum/include/custatevec.h", b"header")
    unzip_dir = tmp_path / "unzipped"
    library, reason = bench.find_custatevec_library(None, tmp_path / "wheel_repo", {}, unzip_dir)
    assert reason is None and library == str(unzip_dir / "cuquantum" / "lib" / "libcustatevec.so.1")
    assert not (unzip_dir / "cuquantum" / "include").exists()  # only the library is taken out


def test_a_broken_wheel_is_reported_not_raised(tmp_path):
    _touch(tmp_path / ".cusv" / "custatevec_cu13-1.0-py3-none-any.whl")
    library, reason = bench.find_custatevec_library(None, tmp_path, {}, tmp_path / "unzipped")
    assert library is None and "cannot unzip" in reason


@pytest.mark.parametrize("extra, message", [([], "no CUDA GPU is visible"),
                                            (["--device", "cpu"], "--device cpu is not supported")])
def test_without_a_gpu_the_script_exits_with_one_line(monkeypatch, capsys, extra, message):
    monkeypatch.setattr(bench, "gpu_available", lambda: False)
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--qubits", "4", "--gate-size", "2", "--depth", "1", *extra])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.skipif(gpu_available(), reason="checks the exit where no GPU is visible")
def test_no_gpu_exit_from_the_command_line_has_no_traceback():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--qubits", "4", "--gate-size", "2", "--depth", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr


def test_floor_and_summary():
    assert bench.floor_seconds_per_gate(30, 3e12) == pytest.approx(32 * 2**30 / 3e12)  # 11.45 ms
    row = bench.summarize("int8-auto", [0.01, 0.03, 0.02], floor_s=0.01, custatevec_total_s=0.03)
    assert row["gates"] == 3 and row["total_s"] == pytest.approx(0.06)
    assert row["median_ms"] == pytest.approx(20) and row["max_ms"] == pytest.approx(30)
    assert row["x_floor"] == pytest.approx(2.0) and row["x_custatevec"] == pytest.approx(2.0)
    assert bench.summarize("custatevec", [0.01], 0.01)["x_custatevec"] is None


def test_three_states_fit_at_30_qubits_on_80_gb_not_at_31():
    assert bench.three_states_fit(30, 80e9)
    assert not bench.three_states_fit(31, 80e9)
    assert bench.three_states_fit(31, 141e9)


def test_chunked_difference_matches_the_whole(rng):
    a = rng.standard_normal(100) + 1j * rng.standard_normal(100)
    b = a + 1e-9 * rng.standard_normal(100)
    assert bench.max_abs_difference(a, b, np, chunk=7) == np.abs(a - b).max()


def test_sample_indices_are_fixed_distinct_and_skip_zero():
    indices = bench.sample_indices(20, seed=1)
    assert np.array_equal(indices, bench.sample_indices(20, seed=1))
    assert len(set(indices.tolist())) == len(indices) and 0 < indices.min() and indices.max() < 2**20
    assert bench.sample_indices(1, seed=1).tolist() == [1]


def _apply_as_custatevec_documents(state, matrix, targets):
    """cuStateVec's custatevecApplyMatrix by its documentation: bit positions are little endian and
    targets[j] is bit j of the matrix's row and column index."""
    out = np.zeros_like(state)
    target_mask = sum(1 << t for t in targets)
    for i in range(state.size):
        row = sum(((i >> t) & 1) << j for j, t in enumerate(targets))
        for column in range(matrix.shape[1]):
            source = (i & ~target_mask) | sum(((column >> j) & 1) << t for j, t in enumerate(targets))
            out[i] += matrix[row, column] * state[source]
    return out


def test_targets_go_to_custatevec_in_our_order_and_mean_the_same_gate(rng):
    targets = (3, 0, 2)  # unsorted: a reversal or a sort would change the gate
    handed_over = list(bench.custatevec_targets(targets))
    assert handed_over == list(targets)
    matrix = haar_unitary(8, rng)
    state = rng.standard_normal(16) + 1j * rng.standard_normal(16)
    state /= np.linalg.norm(state)
    ours = Simulator(device="cpu", progress=False).run(Circuit(4, [Gate(targets, matrix)]), state).state_vector()
    np.testing.assert_allclose(_apply_as_custatevec_documents(state, matrix, handed_over), ours, atol=1e-14)
    reversed_gate = _apply_as_custatevec_documents(state, matrix, handed_over[::-1])
    assert np.abs(reversed_gate - ours).max() > 1e-3
