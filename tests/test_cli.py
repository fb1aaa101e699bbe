"""The command line end to end, in a subprocess as a user runs it."""
import json
import subprocess
import sys

import numpy as np
import pytest

from circuits import brickwork
from qsim import Simulator


def qsim(*args):
    return subprocess.run([sys.executable, "-m", "qsim.cli", *args], capture_output=True, text=True, timeout=300)


def test_run_prints_summary_and_writes_json(tmp_path):
    path = tmp_path / "out.json"
    proc = qsim("run", "--qubits", "10", "--gate-size", "3", "--depth", "3", "--seed", "4",
                "--device", "cpu", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    for label in ("qubits", "gates", "backend", "device", "total time", "per gate", "FLOP/s", "peak memory",
                  "<0...0|psi>", "norm"):
        assert label in proc.stdout
    report = json.loads(path.read_text())
    assert report["qubits"] == 10 and report["backend"] == "cublas" and report["device"] == "cpu"
    assert report["circuit"]["brickwork"] == {"qubits": 10, "gate_size": 3, "depth": 3, "seed": 4}
    expected = Simulator(device="cpu", progress=False).run(brickwork(10, 3, 3, seed=4)).amplitude(0)
    assert complex(report["amplitude_0"]["re"], report["amplitude_0"]["im"]) == pytest.approx(expected, abs=1e-15)
    assert report["gates"] == len(report["per_gate"]) == 3 * 2 + 3
    assert abs(report["norm"] - 1) < 1e-12


def test_run_backend_takes_options_in_its_label(capsys):
    from qsim import cli

    code = cli.main(["run", "--qubits", "8", "--gate-size", "3", "--depth", "2", "--device", "cpu", "--no-progress",
                     "--backend", "int8-auto@target_error=1e-10@large_gates=ozaki1", "--json", "-"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # the whole of stdout: the summary went to stderr
    assert code == 0 and report["backend"] == "int8-auto" and "FLOP/s" in captured.err
    assert report["backend_options"]["target_error"] == 1e-10 and report["backend_options"]["large_gates"] == "ozaki1"


def test_json_to_stdout_is_pure_json_and_the_summary_goes_to_stderr():
    proc = qsim("run", "--qubits", "6", "--gate-size", "2", "--depth", "2", "--device", "cpu", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["qubits"] == 6
    assert "<0...0|psi>" in proc.stderr and "<0...0|psi>" not in proc.stdout


@pytest.mark.parametrize("command", [
    ["compare", "--qubits", "5", "--gate-size", "2", "--depth", "1", "--device", "cpu", "--backends", "cublas,cgemm"],
    ["run", "--qubits", "6", "--gpus", "2", "--device", "cpu", "--gate-size", "2", "--depth", "2"],
    ["backends"],
])
def test_every_command_with_json_to_stdout_writes_only_json_there(command):
    proc = qsim(*command, "--json", "-", *(["--no-progress"] if command[0] != "backends" else []))
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), dict)
    assert "cublas" in proc.stderr  # the table, summary or list, for people


# A run that takes minutes on the CPU: an output check that came after it would time out.
LONG_RUN = ["--qubits", "24", "--gate-size", "5", "--depth", "400", "--device", "cpu"]


@pytest.mark.parametrize("command, output", [
    (["run", *LONG_RUN], ["--json", "{d}/missing/r.json"]),
    (["run", *LONG_RUN, "--gpus", "2"], ["--json", "{d}/missing/r.json"]),
    (["run", *LONG_RUN], ["--json", "{d}"]),
    (["compare", *LONG_RUN, "--backends", "cublas,int8-auto"], ["--json", "{d}/missing/c.json"]),
    (["compare", *LONG_RUN, "--backends", "cublas"], ["--plot", "{d}/missing/c.png"]),
    (["compare", *LONG_RUN, "--backends", "cublas"], ["--plot", "{d}/c.pnx"]),
    (["backends"], ["--json", "{d}/missing/b.json"]),
])
def test_unwritable_output_ends_the_command_before_the_work(tmp_path, command, output):
    option, path = output[0], output[1].format(d=tmp_path)
    if path.endswith(".pnx"):
        pytest.importorskip("matplotlib")  # without it, the missing matplotlib is what is refused first
    proc = subprocess.run([sys.executable, "-m", "qsim.cli", *command, option, path], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"qsim: error: {option} {path!r}") and len(proc.stderr.splitlines()) == 1
    assert proc.stdout == ""  # nothing ran
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_output_is_checked_before_the_circuit_is_even_built(tmp_path, monkeypatch, capsys):
    from qsim import cli

    def must_not_run(args):
        raise AssertionError("the work started before the output path was checked")

    monkeypatch.setattr(cli, "_build_circuit", must_not_run)
    assert cli.main(["run", "--qubits", "4", "--device", "cpu", "--json", str(tmp_path / "no" / "r.json")]) == 2
    assert "does not exist; create it first" in capsys.readouterr().err


def test_plot_without_matplotlib_is_refused_before_the_work(tmp_path, monkeypatch, capsys):
    from qsim import cli

    def must_not_run(args):
        raise AssertionError("the work started before matplotlib was looked for")

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setattr(cli, "_build_circuit", must_not_run)
    argv = ["compare", "--qubits", "4", "--backends", "cublas", "--device", "cpu", "--plot", str(tmp_path / "p.png")]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == ("qsim: error: plotting needs matplotlib: pip install matplotlib "
                                       "(or the project's 'plot' extra)\n")


def test_json_file_replaces_an_old_one_whole(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("stale, not JSON")
    proc = qsim("run", "--qubits", "5", "--gate-size", "2", "--depth", "2", "--device", "cpu", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(path.read_text())["qubits"] == 5
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_compare_writes_plot_and_json(tmp_path):
    pytest.importorskip("matplotlib")
    plot, out = tmp_path / "acc.svg", tmp_path / "cmp.json"
    proc = qsim("compare", "--qubits", "6", "--gate-size", "2", "--depth", "2", "--device", "cpu",
                "--backends", "cublas,cgemm", "--plot", str(plot), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert plot.read_text().lstrip().startswith("<?xml") and "</svg>" in plot.read_text()
    assert {row["backend"] for row in json.loads(out.read_text())["rows"]} == {"cublas", "cgemm"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acc.svg", "cmp.json"]


def test_backends_lists_cublas():
    proc = qsim("backends")
    assert proc.returncode == 0
    assert "cublas" in proc.stdout and "cpu" in proc.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--qubits", "4", "--gate-size", "5", "--device", "cpu"], "exceeds --qubits"),
        (["run", "--qubits", "4", "--gate-size", "2", "--depth", "0", "--device", "cpu"], "depth"),
        (["run", "--qubits", "8", "--backend", "bogus", "--device", "cpu"], "unknown backend"),
        (["run", "--qubits", "8", "--backend", "int8-99", "--device", "cpu"], "splits must be in"),
        (["run", "--qubits", "44", "--gate-size", "2", "--depth", "1", "--device", "cpu"], "44 qubits need"),
        (["run", "--qubits", "8", "--rho", "1", "--device", "cpu"], "takes no option rho"),
        (["run", "--device", "cpu"], "--qubits"),
        (["run", "--qubits", "6", "--gate-size", "2", "--measure-rate", "1.5", "--device", "cpu"],
         "--measure-rate must be between 0 and 1"),
        (["run", "--qubits", "6", "--gate-size", "2", "--measure-rate", "0.5", "--shots", "4", "--trajectories", "2",
          "--device", "cpu"], "give --shots or --trajectories, not both"),
        (["run", "--qubits", "6", "--gate-size", "2", "--measure-rate", "0.5", "--reference", "dd", "--device", "cpu"],
         "--reference dd compares one final state"),
    ],
)
def test_bad_input_gives_one_line_error(args, message):
    proc = qsim(*args)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("option, value, message", [("--trajectories", "0", "must be >= 1"),
                                                   ("--seed", "-1", "must be >= 0")])
def test_out_of_range_counts_and_seeds_are_rejected_by_the_parser(option, value, message):
    proc = qsim("run", "--qubits", "6", option, value, "--device", "cpu")
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


SMALL_RUN = ["run", "--qubits", "6", "--gate-size", "2", "--depth", "2", "--device", "cpu", "--no-progress"]


@pytest.mark.parametrize("extra, message", [
    (["--qubits", "0"], "--qubits must be >= 1, got 0"),
    (["--gate-size", "-1"], "--gate-size must be >= 1, got -1"),
    (["--depth", "0"], "--depth must be >= 1, got 0"),
    (["--shots", "0"], "argument --shots: must be >= 1, got 0"),
    (["--shots", "2.5"], "argument --shots: invalid int value: '2.5'"),
    (["--backend", "int8-auto", "--rho", "nan"], "rho must be a finite number of bits >= 0, got nan"),
    (["--backend", "int8-auto", "--rho", "-1"], "rho must be a finite number of bits >= 0"),
    (["--backend", "int8-auto", "--target-error", "inf"], "target_error must be a number in (0, 1)"),
    (["--backend", "int8-auto", "--target-error", "0"], "target_error must be a number in (0, 1)"),
    (["--backend", "fp16x2", "--block", "-1"], "must be an integer >= 0, got -1"),
    (["--workspace-gib", "nan"], "--workspace-gib must be a finite positive number of GiB, got nan"),
    (["--workspace-gib", "inf"], "--workspace-gib must be a finite positive number of GiB, got inf"),
    (["--workspace-gib", "0"], "--workspace-gib must be a finite positive number of GiB, got 0.0"),
    (["--workspace-gib", "1e-12"], "--workspace-gib must be a finite positive number of GiB, got 1e-12"),
    (["--fuse", "-1"], "--fuse must be 'auto' or a block size >= 0 (0 turns fusion off), got -1"),
    (["--measure-rate", "nan"], "--measure-rate must be between 0 and 1, got nan"),
    (["--measure-rate", "-0.5"], "--measure-rate must be between 0 and 1"),
    (["--trajectories", "-2"], "argument --trajectories: must be >= 1, got -2"),
    (["--gpus", "0"], "argument --gpus: must be >= 1, got 0"),
    (["--gpus", "3"], "must be a power of two"),
    (["--gpus", "2", "--timeout", "nan"], "--timeout must be a positive, finite number of seconds"),
    (["--gpus", "2", "--timeout", "inf"], "--timeout must be a positive, finite number of seconds"),
    (["--gpus", "2", "--timeout", "-5"], "--timeout must be a positive, finite number of seconds"),
    (["--timeout", "60"], "--timeout applies to runs over several GPUs"),
    (["--gpus", "2", "--trajectories", "3"], "--trajectories is not supported with --gpus"),
    (["--json", ""], "--json needs a file name, got ''"),
    (["--backend", "int8-auto@target_error=1e-10", "--target-error", "1e-12"],
     "backend option target_error is given twice (1e-12 and 1e-10 in --backend int8-auto@target_error=1e-10)"),
    (["--backend", "int8-auto@large_gates=crt"], "large_gates must be 'auto', 'ozaki1' or 'ozaki2', got 'crt'"),
    (["--backend", "cublas@dmma"], "write options as name@option=value"),
])
def test_bad_option_values_end_with_exit_code_2_and_one_line(extra, message, capsys):
    from qsim import cli

    try:
        code = cli.main(SMALL_RUN + extra)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2 and message in captured.err and "Traceback" not in captured.err
    assert captured.out == ""  # refused before anything ran
    assert captured.err.strip().splitlines()[-1].startswith(("qsim: error:", "qsim run: error:"))


def test_unknown_device_is_rejected_by_the_parser():
    proc = qsim("run", "--qubits", "4", "--device", "tpu")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr and "Traceback" not in proc.stderr


def test_gpu_device_without_gpu_is_a_clear_error():
    from gemm_backend.arrays import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    proc = qsim("run", "--qubits", "4", "--gate-size", "2", "--device", "gpu")
    assert proc.returncode == 2 and "no CUDA GPU" in proc.stderr


@pytest.mark.gpu
def test_thirty_qubit_cublas_run_on_gpu(tmp_path):
    path = tmp_path / "gpu.json"
    proc = qsim("run", "--qubits", "30", "--gate-size", "5", "--depth", "4", "--backend", "cublas",
                "--device", "gpu", "--no-progress", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(path.read_text())
    assert report["qubits"] == 30 and report["gates"] == 6 + 5 + 6 + 5
    assert abs(report["norm"] - 1) < 1e-10
    print(proc.stdout)


def test_state_equals_numpy_reference_for_every_small_gate_size():
    # ties the CLI's simulator path to an independent einsum-based computation
    circuit = brickwork(7, 2, 2, seed=9)
    state = np.zeros(2**7, complex)
    state[0] = 1
    for gate in circuit.gates:
        t0 = gate.targets[0]
        tensor = state.reshape(2 ** (7 - t0 - 2), 4, 2**t0)
        state = np.einsum("ij,ljr->lir", gate.matrix, tensor).reshape(-1)
    result = Simulator(device="cpu", progress=False).run(circuit)
    assert np.abs(result.state - state).max() < 1e-13


GHZ_QASM = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[5];
creg c[5];
h q[0];
cx q[0],q[1];
cx q[1],q[2];
cx q[2],q[3];
cx q[3],q[4];
measure q -> c;
"""


@pytest.mark.parametrize("fuse, gates", [(None, 1), ("0", 5), ("2", 4)])
def test_qasm_run_with_fusion_and_shots(tmp_path, fuse, gates):
    qasm = tmp_path / "ghz.qasm"
    qasm.write_text(GHZ_QASM)
    out = tmp_path / "ghz.json"
    args = ["run", "--qasm", str(qasm), "--shots", "4000", "--seed", "3", "--device", "cpu", "--json", str(out)]
    proc = qsim(*args + (["--fuse", fuse] if fuse else []))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["gates"] == gates and report["circuit"]["gates_imported"] == 5
    fusion = report["circuit"].get("fusion")
    assert (fusion is None) if fuse == "0" else fusion["chosen_by"] == ("cost model" if fuse is None else "given")
    assert fuse == "0" or (fusion["gates"] == gates and f"-> {gates} gates" in proc.stdout)
    assert set(report["counts"]) == {"00000", "11111"} and sum(report["counts"].values()) == 4000
    assert abs(report["counts"]["11111"] - 2000) < 4 * 32  # binomial, 4 sigma
    assert report["amplitude_0"]["re"] == pytest.approx(2**-0.5, abs=1e-15)
    again = qsim(*args + (["--fuse", fuse] if fuse else []))
    assert json.loads(out.read_text())["counts"] == report["counts"] and again.returncode == 0


def test_qasm3_file_runs_and_matches_qiskit(tmp_path):
    from qiskit.quantum_info import Statevector

    from tests.test_qiskit_import import QASM3_PROGRAM, by_hand_like_qasm3_program

    qasm = tmp_path / "program.qasm"
    qasm.write_text(QASM3_PROGRAM)
    out = tmp_path / "program.json"
    proc = qsim("run", "--qasm", str(qasm), "--shots", "500", "--seed", "2", "--device", "cpu", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    expected = Statevector(by_hand_like_qasm3_program()).data[0]
    assert complex(report["amplitude_0"]["re"], report["amplitude_0"]["im"]) == pytest.approx(expected, abs=1e-12)
    assert report["circuit"]["gates_imported"] == 20 and sum(report["counts"].values()) == 500
    assert all(len(bits) == 5 for bits in report["counts"])


def test_qasm3_syntax_error_is_one_line(tmp_path):
    qasm = tmp_path / "bad.qasm"
    qasm.write_text('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\nh q[0]\ncx q[0], q[1];\n')
    proc = qsim("run", "--qasm", str(qasm), "--device", "cpu")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == "qsim: error: OpenQASM 3 syntax error at line 5, column 1 (near 'cx'); check for a missing " \
                          "';' or bracket\n"


def test_missing_qasm_file_is_a_clear_error(tmp_path):
    proc = qsim("run", "--qasm", str(tmp_path / "nope.qasm"), "--device", "cpu")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "nope.qasm" in proc.stderr


def test_run_with_double_double_reference_reports_errors(tmp_path):
    out = tmp_path / "ref.json"
    proc = qsim("run", "--qubits", "10", "--gate-size", "3", "--depth", "4", "--device", "cpu",
                "--reference", "dd", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    accuracy = json.loads(out.read_text())["accuracy"]
    assert 0 < accuracy["l2_error"] < 1e-14 and 0 <= accuracy["rel_error_re_amp0"] < 1e-12
    assert accuracy["amplitudes_compared"] > 0 and "accuracy against the double-double" in proc.stdout


def test_compare_table_and_json(tmp_path):
    out = tmp_path / "cmp.json"
    proc = qsim("compare", "--qubits", "9", "--gate-size", "3", "--depth", "3", "--device", "cpu",
                "--backends", "cublas,int8-9,int8-auto,cgemm", "--rho", "0", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = {row["backend"]: row for row in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"cublas", "int8-9", "int8-auto", "cgemm"}
    assert rows["cgemm"]["l2_error"] > 100 * rows["cublas"]["l2_error"]
    assert rows["int8-9"]["splits"]["max"] == 9 and rows["int8-auto"]["backend_options"].get("rho") == 0.0
    for name in rows:
        assert name in proc.stdout


def test_monitored_brickwork_trajectories_report_each_one(tmp_path):
    from circuits import monitored_brickwork
    from qsim.trajectory import trajectory_seed

    out = tmp_path / "traj.json"
    proc = qsim("run", "--qubits", "8", "--gate-size", "2", "--depth", "5", "--measure-rate", "0.3",
                "--trajectories", "6", "--seed", "3", "--backend", "int8-9", "--device", "cpu", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "trajectories    6" in proc.stdout and "per trajectory" in proc.stdout
    report = json.loads(out.read_text())
    assert report["circuit"]["brickwork"]["measure_rate"] == 0.3
    summary = report["trajectories"]
    assert summary["count"] == 6 and sum(report["counts"].values()) == 6
    records = summary["records"]
    assert [r["seed"] for r in records] == [trajectory_seed(3, i) for i in range(6)]
    circuit = monitored_brickwork(8, 2, 5, 0.3, seed=3)
    assert all(len(r["clbits"]) == circuit.n_clbits and abs(r["norm"] - 1) < 1e-14 for r in records)
    alone = Simulator(backend="int8-9", device="cpu", progress=False).run(circuit, seed=records[2]["seed"])
    assert alone.trajectory["clbits"] == records[2]["clbits"]
    assert alone.trajectory["events"] == records[2]["events"]


DYNAMIC_QASM = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[2];
creg a[1];
creg b[1];
h q[0];
measure q[0] -> a[0];
if(a==1) x q[1];
reset q[0];
measure q[1] -> b[0];
"""


def test_dynamic_qasm_shots_run_one_trajectory_each(tmp_path):
    qasm = tmp_path / "dyn.qasm"
    qasm.write_text(DYNAMIC_QASM)
    out = tmp_path / "dyn.json"
    proc = qsim("run", "--qasm", str(qasm), "--shots", "400", "--seed", "1", "--device", "cpu", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    counts = report["counts"]
    assert set(counts) == {"0 0", "1 1"} and sum(counts.values()) == 400  # b equals a: Qiskit's "b a"
    assert abs(counts["1 1"] - 200) < 4 * 10
    assert report["trajectories"]["count"] == 400


def test_static_circuit_with_trajectories_repeats_the_run(tmp_path):
    out = tmp_path / "static.json"
    proc = qsim("run", "--qubits", "6", "--gate-size", "3", "--depth", "2", "--trajectories", "2", "--device", "cpu",
                "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    records = json.loads(out.read_text())["trajectories"]["records"]
    assert len(records) == 2 and all(r["measurements"] == 0 and r["clbits"] == "" for r in records)


@pytest.mark.parametrize("argv, message", [
    (["run", "--qasm", "{d}/ghz.qasm", "--qubits", "5"], "--qubits shape a brickwork circuit and cannot be used with --qasm"),
    (["run", "--qasm", "{d}/ghz.qasm", "--gate-size", "2", "--depth", "3"], "--gate-size, --depth shape a brickwork"),
    (["compare", "--qasm", "{d}/ghz.qasm", "--backends", "cublas,cgemm", "--rho", "1"],
     "no backend in --backends takes --rho"),
    (["compare", "--qasm", "{d}/ghz.qasm", "--backends", "cublas,fp16", "--block", "64", "--accumulate", "fp64"],
     "no backend in --backends takes --accumulate, --block"),
    (["compare", "--qasm", "{d}/ghz.qasm", "--backends", "cublas,int8-auto@rho=nan"], "rho must be a finite number"),
    (["compare", "--qasm", "{d}/ghz.qasm", "--backends", "cublas,int8-09"], "unknown backend 'int8-09'"),
])
def test_ignored_or_bad_options_are_refused_before_any_simulation(tmp_path, monkeypatch, capsys, argv, message):
    """An option nothing would use, or a backend that a comparison would reach only after the
    reference and the backends before it had run, ends the command before anything runs."""
    from qsim import compare

    def must_not_run(*args, **kwargs):
        raise AssertionError("the simulation started before the options were checked")

    monkeypatch.setattr(compare, "reference_state", must_not_run)
    monkeypatch.setattr(Simulator, "run", must_not_run)
    (tmp_path / "ghz.qasm").write_text(GHZ_QASM)
    from qsim import cli

    assert cli.main([a.format(d=tmp_path) for a in argv] + ["--device", "cpu", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qsim: error:") and message in err and err.count("\n") == 1


def test_compare_gives_a_global_option_to_the_backends_that_take_it_and_says_so(tmp_path):
    path = tmp_path / "cmp.json"
    proc = qsim("compare", "--qubits", "5", "--gate-size", "2", "--depth", "1", "--device", "cpu", "--no-progress",
                "--backends", "int8-9,int8-auto,int8-9@fused=false", "--target-error", "1e-10", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "note: --target-error applies to int8-auto only (int8-9, int8-9@fused=false take no target_error)" in proc.stdout
    options = {row["backend"]: row["backend_options"] for row in json.loads(path.read_text())["rows"]}
    assert options["int8-auto"]["target_error"] == 1e-10 and "target_error" not in options["int8-9"]
    assert options["int8-9@fused=false"]["fused"] is False and options["int8-9"]["fused"] is True
