"""scripts/bench/bench_custatevec.py: the parts that need no GPU (library lookup, the no-GPU exit, the
floor and summary arithmetic, the target order and matrix layout handed to cuStateVec, the chunked
comparison, the --qasm/--fuse circuit and its refusals); scripts/bench/make_random_qasm.py."""
import ctypes
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import circuits
from circuits import Circuit, Gate, haar_unitary
from gemm_backend.arrays import gpu_available
from qsim import Simulator
from .dense import dense_operator, dense_state
from .helpers import REPOSITORY, load_script

SCRIPT = REPOSITORY / "scripts" / "bench" / "bench_custatevec.py"

bench = load_script("scripts/bench/bench_custatevec.py")
make_random = load_script("scripts/bench/make_random_qasm.py")


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


# -- the matrix and targets handed to custatevecApplyMatrix, against dense Kronecker references --
def _custatevec_reads(operands, layout: int) -> tuple:
    """(matrix, targets) as cuStateVec reads its arguments: the matrix's memory in `layout` order
    (ROW: entry [r, c] at r * dim + c; COL: at c * dim + r) and the int32 target array."""
    matrix, targets = operands
    assert isinstance(targets, ctypes.Array) and targets._type_ is ctypes.c_int32
    assert matrix.dtype == np.complex128 and matrix.flags.c_contiguous
    dim = matrix.shape[0]
    memory = matrix.reshape(-1)  # C order: the bytes cp.asarray(matrix) copies to the device
    read = memory.reshape(dim, dim) if layout == bench.MATRIX_LAYOUT_ROW else memory.reshape(dim, dim).T
    return read, list(targets)


def _random_state(rng, n_qubits: int) -> np.ndarray:
    state = rng.standard_normal(1 << n_qubits) + 1j * rng.standard_normal(1 << n_qubits)
    return state / np.linalg.norm(state)


@pytest.mark.parametrize("targets", [(3, 0), (4, 1, 3), (2, 4, 0)])
def test_scattered_unsorted_gate_reaches_custatevec_as_the_same_operator(rng, targets):
    n_qubits = 5
    gate = Gate(targets, haar_unitary(1 << len(targets), rng))
    matrix, handed = _custatevec_reads(bench.custatevec_operands(gate), bench.MATRIX_LAYOUT_ROW)
    assert handed == list(targets)
    state = _random_state(rng, n_qubits)
    expected = dense_operator(n_qubits, targets, gate.matrix) @ state
    np.testing.assert_allclose(_apply_as_custatevec_documents(state, matrix, handed), expected, atol=1e-13)
    # What a wrong conversion would give is far off: sorted or reversed targets, the other layout.
    for wrong_targets in (sorted(targets), handed[::-1]):
        assert np.abs(_apply_as_custatevec_documents(state, matrix, wrong_targets) - expected).max() > 1e-2
    transposed, _ = _custatevec_reads(bench.custatevec_operands(gate), 1 - bench.MATRIX_LAYOUT_ROW)
    assert np.abs(_apply_as_custatevec_documents(state, transposed, handed) - expected).max() > 1e-2


def test_target_j_is_bit_j_of_the_matrix_index_by_kronecker_product(rng):
    """U = B (x) A on targets (3, 0) puts A (index bit 0) on qubit 3 and B on qubit 0: on 4 qubits
    the operator is A (x) I (x) I (x) B, qubit 3 leftmost."""
    a, b = haar_unitary(2, rng), haar_unitary(2, rng)
    gate = Gate((3, 0), np.kron(b, a))
    matrix, handed = _custatevec_reads(bench.custatevec_operands(gate), bench.MATRIX_LAYOUT_ROW)
    state = _random_state(rng, 4)
    expected = np.kron(np.kron(np.kron(a, np.eye(2)), np.eye(2)), b) @ state
    np.testing.assert_allclose(_apply_as_custatevec_documents(state, matrix, handed), expected, atol=1e-14)
    np.testing.assert_allclose(dense_operator(4, (3, 0), gate.matrix) @ state, expected, atol=1e-14)


# -- --qasm, --fuse and the circuit description ----------------------------------------------
SCATTERED_QASM = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[6];
cx q[4],q[1];
h q[0];
ccx q[5],q[0],q[2];
"""


def _qasm_file(tmp_path, text=SCATTERED_QASM, name="prog.qasm") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _built(argv) -> tuple:
    return bench.build_circuit(bench.make_parser().parse_args(argv))


def _refused(monkeypatch, capsys, argv) -> str:
    """main's one-line error for argv, which must come before the GPU is looked at."""
    monkeypatch.setattr(bench, "gpu_available", lambda: pytest.fail("the GPU was looked at before the refusal"))
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert ": error: " in err.split("\n")[0] and err.count("\n") == 1  # the program name is argv[0]
    return err


def test_describe_gates_counts_sizes_and_scattered_targets():
    x = np.array([[0, 1], [1, 0]])
    cnot = np.kron(np.eye(2), np.diag([1, 0])) + np.kron(x, np.diag([0, 1]))
    toffoli = np.eye(8)[[0, 1, 2, 7, 4, 5, 6, 3]]
    gates = [Gate((0, 1, 2), toffoli), Gate((2, 1), cnot), Gate((0, 2), cnot), Gate((3, 0, 1), toffoli),
             Gate((5,), x)]
    described = bench.describe_gates(Circuit(6, gates))
    assert described == {"qubits": 6, "gates": 5, "gate_sizes": {1: 1, 2: 2, 3: 2},
                         "noncontiguous_gates": 2, "unsorted_gates": 2}
    assert list(described["gate_sizes"]) == [1, 2, 3]


def test_qasm_fused_to_1_keeps_the_scattered_gates_and_says_so(tmp_path):
    path = _qasm_file(tmp_path)
    circuit, described = _built(["--qasm", path, "--fuse", "1"])
    assert [g.targets for g in circuit.gates] == [(4, 1), (0,), (5, 0, 2)]
    assert described == {"qasm": path, "gates_before_fusion": 3, "fuse": 1, "qubits": 6, "gates": 3,
                         "gate_sizes": {1: 1, 2: 1, 3: 1}, "noncontiguous_gates": 2, "unsorted_gates": 2}
    line = bench.circuit_line(described)
    assert line == (f"circuit: {path} (3 gates imported), fused to <= 1 qubits: 3 gates on 6 qubits "
                    "(1q x1, 2q x1, 3q x1); 2 on non-contiguous targets, 2 with unsorted targets")
    written = json.loads(json.dumps(described))  # as write_json stores it: sizes keyed by strings
    assert written["gate_sizes"] == {"1": 1, "2": 1, "3": 1}


def test_qasm_fuses_to_5_by_default_into_the_same_operator(tmp_path):
    path = _qasm_file(tmp_path)
    circuit, described = _built(["--qasm", path])
    assert described["fuse"] == 5 and described["gates"] == 1 and described["gate_sizes"] == {5: 1}
    assert described["noncontiguous_gates"] == 1 and described["unsorted_gates"] == 0
    assert circuit.gates[0].targets == (0, 1, 2, 4, 5)
    unfused = circuits.from_qasm(path)
    expected = np.eye(64)
    for gate in unfused.gates:
        expected = dense_operator(6, gate.targets, gate.matrix) @ expected
    np.testing.assert_allclose(dense_operator(6, circuit.gates[0].targets, circuit.gates[0].matrix), expected,
                               atol=1e-13)


def test_brickwork_defaults_and_fusion_are_described():
    circuit, described = _built([])
    assert described["brickwork"] == {"qubits": 30, "gate_size": 5, "depth": 20, "seed": 1}
    assert described["fuse"] is None and described["gates"] == described["gates_before_fusion"] == 110
    assert described["gate_sizes"] == {5: 110} and described["noncontiguous_gates"] == 0
    assert "brickwork qubits 30, gate_size 5, depth 20, seed 1, unfused: 110 gates" in bench.circuit_line(described)
    circuit, described = _built(["--qubits", "6", "--gate-size", "2", "--depth", "2", "--fuse", "4"])
    assert [g.targets for g in circuit.gates] == [(0, 1, 2, 3), (3, 4, 5)]
    assert described["gates_before_fusion"] == 5 and described["gate_sizes"] == {3: 1, 4: 1}


@pytest.mark.parametrize("extra, named", [(["--qubits", "30"], "--qubits"), (["--gate-size", "5"], "--gate-size"),
                                          (["--depth", "3"], "--depth"), (["--seed", "0"], "--seed"),
                                          (["--seed", "1", "--qubits", "4"], "--qubits, --seed")])
def test_brickwork_flags_are_refused_with_qasm(tmp_path, monkeypatch, capsys, extra, named):
    err = _refused(monkeypatch, capsys, ["--qasm", _qasm_file(tmp_path), *extra])
    assert f"{named} shape a brickwork circuit and cannot be used with --qasm" in err


@pytest.mark.parametrize("with_qasm", [True, False])
def test_fuse_below_0_is_refused(tmp_path, monkeypatch, capsys, with_qasm):
    source = ["--qasm", _qasm_file(tmp_path)] if with_qasm else ["--qubits", "4", "--gate-size", "2"]
    assert "--fuse must be >= 0 (0: no fusion), got -1" in _refused(monkeypatch, capsys, [*source, "--fuse", "-1"])


def test_a_saved_circuit_runs_the_same_gates_and_fuses_like_the_program(tmp_path, capsys):
    saved = tmp_path / "program.npz"
    assert bench.main(["--qasm", _qasm_file(tmp_path), "--fuse", "0", "--save-circuit", str(saved)]) == 0
    assert f"written to {saved}" in capsys.readouterr().out
    unfused, described = _built(["--circuit", str(saved)])
    original, _ = _built(["--qasm", _qasm_file(tmp_path), "--fuse", "0"])
    assert [g.targets for g in unfused.gates] == [g.targets for g in original.gates]
    assert all(np.array_equal(a.matrix, b.matrix) for a, b in zip(unfused.gates, original.gates))
    assert described["fuse"] is None and described["fused_when_saved"] is None
    fused, described = _built(["--circuit", str(saved), "--fuse", "2"])
    by_qasm, _ = _built(["--qasm", _qasm_file(tmp_path), "--fuse", "2"])
    assert len(fused.gates) == len(by_qasm.gates) and described["fuse"] == 2
    np.testing.assert_allclose(dense_state(fused), dense_state(original), atol=1e-12)
    assert f"saved unfused in {saved}" in bench.circuit_line(described)


def test_a_circuit_file_refuses_program_flags_and_bad_files(tmp_path, monkeypatch, capsys):
    saved = tmp_path / "program.npz"
    bench.main(["--qasm", _qasm_file(tmp_path), "--save-circuit", str(saved)])
    refused = _refused(monkeypatch, capsys, ["--circuit", str(saved), "--qubits", "4"])
    assert "--circuit runs the saved gates; --qubits cannot be used with it" in refused
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    assert "is not a circuit written by --save-circuit" in _refused(monkeypatch, capsys, ["--circuit", str(junk)])


def test_a_missing_qasm_file_is_refused(tmp_path, monkeypatch, capsys):
    missing = str(tmp_path / "nowhere.qasm")
    assert f"--qasm {missing!r} is not a file" in _refused(monkeypatch, capsys, ["--qasm", missing])


HEADER = 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[3];\ncreg c[3];\nh q[0];\n'


@pytest.mark.parametrize("body, problem", [
    ("measure q[0] -> c[0];\nx q[0];\n", "operation 1 measures qubits [0]"),
    ("cx q[0],q[2];\nreset q[2];\n", "operation 2 resets qubits [2]"),
    ("if (c==0) x q[1];\nmeasure q[1] -> c[1];\n", "operation 1 (x) is classically conditioned"),
    ("cx q[0],q[1];\nmeasure q[1] -> c[0];\nmeasure q[0] -> c[1];\n", "it measures qubits [1, 0] at the end"),
])
def test_a_program_that_is_not_unitary_is_refused_naming_why(tmp_path, monkeypatch, capsys, body, problem):
    path = _qasm_file(tmp_path, HEADER + body)
    err = _refused(monkeypatch, capsys, ["--qasm", path])
    assert f"--qasm {path!r} is not unitary: {problem}; " in err and "remove measure, reset and if" in err


def test_a_program_that_is_not_unitary_exits_without_a_traceback(tmp_path):
    path = _qasm_file(tmp_path, HEADER + "x q[1];\nreset q[1];\n")  # a reset of an untouched qubit is dropped
    proc = subprocess.run([sys.executable, str(SCRIPT), "--qasm", path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not unitary: operation 2 resets qubits [1]" in proc.stderr and proc.stderr.count("\n") == 1


# -- scripts/bench/make_random_qasm.py -------------------------------------------------------------
def test_random_qasm_is_seeded_readable_and_the_random_circuit(tmp_path, capsys):
    from qiskit.quantum_info import Statevector

    paths = [tmp_path / name for name in ("a.qasm", "b.qasm", "c.qasm")]
    for path, seed in zip(paths, ("3", "3", "4")):
        assert make_random.main(["5", str(path), "--depth", "4", "--seed", seed]) == 0
    assert paths[0].read_text() == paths[1].read_text() != paths[2].read_text()
    assert capsys.readouterr().out.startswith(f"{paths[0]}: 5 qubits, depth 4, seed 3: ")
    circuit = circuits.from_qasm(str(paths[0]))
    assert circuit.n_qubits == 5 and not circuit.is_dynamic and not circuit.measured
    sizes = {g.n_targets for g in circuit.gates}
    assert sizes == {1, 2}
    ours = Simulator(device="cpu", progress=False).run(circuit).state_vector()
    drawn = Statevector(make_random.random_gates(5, 4, 3)).data
    assert abs(np.vdot(drawn, ours)) == pytest.approx(1, abs=1e-12)  # equal up to the global phase QASM 2 drops


def test_random_qasm_default_depth_gives_150_to_200_cx_on_30_qubits():
    counts = make_random.random_qasm_circuit(30, make_random.DEFAULT_DEPTH, 1).count_ops()
    assert 150 <= counts["cx"] <= 200


@pytest.mark.parametrize("args, message", [(["1"], "qubits must be >= 2, got 1"),
                                           (["4", "--depth", "0"], "--depth must be >= 1, got 0")])
def test_random_qasm_refuses_sizes_it_cannot_draw(tmp_path, capsys, args, message):
    path = tmp_path / "x.qasm"
    assert make_random.main([args[0], str(path), *args[1:]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not path.exists()
