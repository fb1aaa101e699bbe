"""Bad input, as a new user types it: every case ends in one clear line naming the problem (exit
code 2 on the command line, a documented exception type in Python), found before any long work,
never a traceback from inside. Each case asserts the code or type and the message's key words."""
import numpy as np
import pytest

import gemm_backend
from circuits import Circuit, CircuitError, Condition, Gate, Measure, Reset, brickwork, monitored_brickwork
from gemm_backend import BackendError
from qsim import Simulator, SimulationError, cli

SMALL = ["--qubits", "4", "--gate-size", "2", "--depth", "1", "--device", "cpu", "--no-progress"]
CMP = ["compare", *SMALL]
QASM_FILES = {
    "ok.qasm": 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\nh q[0];\ncx q[0],q[1];\n',
    "wide.qasm": "OPENQASM 2.0;\nqreg q[1020];\n",
    "oob.qasm": 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\nh q[5];\n',
    "garbage.qasm": "garbage",
    "loop.qasm": ('OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[1] q;\nbit[1] c;\nc[0] = measure q[0];\n'
                  'while (c[0] == true) { c[0] = measure q[0]; x q[0]; }\n'),
    "nan.qasm": 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[1];\nrx(0/0) q[0];\n',
    "measure.qasm": 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\ncreg c[1];\nh q[0];\nmeasure q[0] -> c[0];\n'
                    "h q[0];\n",
}
TOO_MANY = "above the 62 qubits"

CLI_CASES = [
    # qubit counts, gate sizes, depths, seeds (the OverflowError cases first)
    (["run", "--qubits", "1020"], (TOO_MANY, "--qubits is 1020")),
    (["run", "--qubits", "1023", "--device", "cpu"], (TOO_MANY,)),
    (["run", "--qubits", "1024", "--gate-size", "2"], (TOO_MANY,)),
    (["run", "--qubits", "100000", "--depth", "1"], (TOO_MANY,)),
    (["run", "--qubits", "63"], (TOO_MANY, "63")),
    (["run", "--qubits", "1020", "--reference", "dd"], (TOO_MANY,)),
    (["run", "--qubits", "1020", "--gpus", "2", "--device", "cpu"], (TOO_MANY,)),
    (["run", "--qubits", "1020", "--shots", "5"], (TOO_MANY,)),
    (["run", "--qubits", "1020", "--measure-rate", "0.1"], (TOO_MANY,)),
    (["run", "--qubits", "1020", "--trajectories", "2"], (TOO_MANY,)),
    (["compare", "--qubits", "1020", "--backends", "cublas"], (TOO_MANY,)),
    (["run", "--qasm", "{d}/wide.qasm"], (TOO_MANY, "number of qubits is 1020")),
    (["run", "--qubits", "62", "--device", "cpu"], ("62 qubits need", "GiB", "available")),
    (["run", "--qubits", "40", "--gate-size", "14", "--depth", "1", "--device", "cpu"], ("40 qubits need",)),
    (["run", "--qubits", "62", "--gpus", "4", "--device", "cpu"], ("each rank needs", "short by")),
    (["compare", "--qubits", "40", "--backends", "cublas", "--device", "cpu"], ("40 qubits need",)),
    (["run", "--qubits", "62", "--gate-size", "62", "--depth", "1", "--device", "cpu"], ("62 qubits need",)),
    (["run", "--qubits", "20", "--gate-size", "20", "--depth", "1", "--device", "cpu"], ("dense 2^20 x 2^20",)),
    (["run", "--qubits", "16", "--gate-size", "16", "--depth", "4", "--device", "cpu"], ("more than this machine's",)),
    (["run", "--qubits", "4", "--gate-size", "2", "--depth", "100000000000", "--device", "cpu"], ("Haar gates of 2",)),
    (["run", "--qubits", "0"], ("--qubits must be >= 1, got 0",)),
    (["run", "--qubits", "-4"], ("--qubits must be >= 1, got -4",)),
    (["run", "--qubits", "4.5"], ("--qubits", "invalid int value: '4.5'")),
    (["run", "--qubits", "abc"], ("--qubits", "invalid int value: 'abc'")),
    (["run", "--qubits", ""], ("--qubits", "invalid int value")),
    (["run", "--device", "cpu"], ("give --qubits N", "or --qasm FILE")),
    (["run", "--qubits", "4", "--gate-size", "5", "--device", "cpu"], ("--gate-size 5 exceeds --qubits 4",)),
    (["run", "--qubits", "4", "--gate-size", "0", "--device", "cpu"], ("--gate-size must be >= 1, got 0",)),
    (["run", "--qubits", "4", "--gate-size", "-3", "--device", "cpu"], ("--gate-size must be >= 1, got -3",)),
    (["run", "--qubits", "4", "--gate-size", "2.5"], ("--gate-size", "invalid int value")),
    (["run", "--qubits", "4", "--gate-size", "2", "--depth", "0", "--device", "cpu"], ("--depth must be >= 1, got 0",)),
    (["run", "--qubits", "4", "--gate-size", "2", "--depth", "-1", "--device", "cpu"], ("--depth must be >= 1",)),
    (["run", "--qubits", "4", "--depth", "x"], ("--depth", "invalid int value: 'x'")),
    (["run", *SMALL[:6], "--seed", "-1"], ("--seed", "must be >= 0, got -1")),
    (["run", *SMALL[:6], "--seed", "1e3"], ("--seed", "invalid int value: '1e3'")),
    (["run", *SMALL[:6], "--seed", "x"], ("--seed", "invalid int value")),
    (["run", *SMALL, "--fuse", "-1"], ("--fuse must be 'auto' or a block size >= 0", "got -1")),
    (["run", *SMALL, "--fuse", "2.0"], ("--fuse must be 'auto' or a block size >= 0", "got '2.0'")),
    (["run", *SMALL, "--fuse", "automatic"], ("--fuse must be 'auto' or a block size >= 0", "got 'automatic'")),
    (["run", "--qubits", "16", "--gate-size", "4", "--depth", "4", "--fuse", "16", "--device", "cpu", "--no-progress"],
     ("out of memory", "64.0 GiB")),
    # --qasm
    (["run", "--qasm", "{d}/missing.qasm", "--device", "cpu"], ("neither an existing file nor OpenQASM text",)),
    (["run", "--qasm", "{d}", "--device", "cpu"], ("neither an existing file nor OpenQASM text",)),
    (["run", "--qasm", "{d}/garbage.qasm", "--device", "cpu"], ("OPENQASM version header",)),
    (["run", "--qasm", "{d}/oob.qasm", "--device", "cpu"], ("parse error", "index 5 is out-of-range")),
    (["run", "--qasm", "{d}/loop.qasm", "--device", "cpu"], ("while_loop", "not supported")),
    (["run", "--qasm", "{d}/nan.qasm", "--device", "cpu"], ("OpenQASM 2 parse error",)),
    (["run", "--qasm", "{d}/ok.qasm", "--qubits", "4", "--device", "cpu"], ("--qubits shape a brickwork circuit",)),
    (["run", "--qasm", "{d}/ok.qasm", "--depth", "2", "--device", "cpu"], ("--depth shape a brickwork circuit",)),
    (["run", "--qasm", "{d}/ok.qasm", "--gate-size", "2", "--device", "cpu"], ("--gate-size shape",)),
    (["run", "--qasm", "{d}/ok.qasm", "--measure-rate", "0.1", "--device", "cpu"], ("cannot be used with --qasm",)),
    (["run", "--qasm", "{d}/ok.qasm", "--fuse", "-2", "--device", "cpu"], ("--fuse must be 'auto' or a block size >= 0",)),
    (["run", "--qasm", "{d}/ok.qasm", "--shots", "0"], ("--shots", "must be >= 1, got 0")),
    (["run", "--qasm", "{d}/ok.qasm", "--shots", "-1"], ("--shots", "must be >= 1, got -1")),
    (["run", "--qasm", "{d}/ok.qasm", "--shots", "1e3"], ("--shots", "invalid int value: '1e3'")),
    (["run", "--qasm", "{d}/measure.qasm", "--reference", "dd", "--device", "cpu"], ("--reference dd compares one",)),
    (["run", "--qasm", "{d}/measure.qasm", "--shots", "3", "--trajectories", "3", "--device", "cpu"],
     ("give --shots or --trajectories, not both",)),
    # backends and their options
    (["run", *SMALL, "--backend", "bogus"], ("unknown backend 'bogus'", "qsim backends")),
    (["run", *SMALL, "--backend", ""], ("unknown backend ''",)),
    (["run", *SMALL, "--backend", "INT8-9"], ("unknown backend 'INT8-9'",)),
    (["run", *SMALL, "--backend", "int8-09"], ("unknown backend 'int8-09'",)),
    (["run", *SMALL, "--backend", "int8-2"], ("INT8 splits must be in 3..18",)),
    (["run", *SMALL, "--backend", "int8-19"], ("INT8 splits must be in 3..18",)),
    (["run", *SMALL, "--backend", "int8-crt-5"], ("number of moduli must be in 8..20",)),
    (["run", *SMALL, "--backend", "int8-crt-21"], ("number of moduli must be in 8..20",)),
    (["run", *SMALL, "--backend", "@"], ("write options as name@option=value",)),
    (["run", *SMALL, "--backend", "cublas@"], ("write options as name@option=value",)),
    (["run", *SMALL, "--backend", "cublas@=5"], ("write options as name@option=value",)),
    (["run", *SMALL, "--backend", "cublas@dmma"], ("write options as name@option=value",)),
    (["run", *SMALL, "--backend", "cublas@dmma_min_qubits=5@dmma_min_qubits=6"], ("gives option dmma_min_qubits twice",)),
    (["run", *SMALL, "--backend", "cublas@dmma_min_qubits=99"], ("dmma_min_qubits must be an integer in 3..7",)),
    (["run", *SMALL, "--backend", "cublas@dmma_min_qubits=5.0"], ("dmma_min_qubits must be an integer, got '5.0'",)),
    (["run", *SMALL, "--backend", "cublas@small_gate_max_qubits=-1"], ("small_gate_max_qubits must be an integer",)),
    (["run", *SMALL, "--backend", "cublas@workspace_bytes=-1"], ("workspace_bytes must be a positive integer",)),
    (["run", *SMALL, "--backend", "cublas@workspace_bytes=1e9"], ("workspace_bytes must be an integer, got '1e9'",)),
    (["run", *SMALL, "--backend", "cublas@rho=1"], ("backend 'cublas' takes no option rho",)),
    (["run", *SMALL, "--backend", "int8-9@fused=maybe"], ("option fused must be true or false", "1 or 0")),
    (["run", *SMALL, "--backend", "int8-9@fused=2"], ("option fused must be true or false",)),
    (["run", *SMALL, "--backend", "int8-9@target_error=1e-10"], ("backend 'int8-9' takes no option target_error",)),
    (["run", *SMALL, "--backend", "int8-9@rho=1"], ("backend 'int8-9' takes no option rho",)),
    (["run", *SMALL, "--backend", "int8-9@large_gates=ozaki2"], ("backend 'int8-9' takes no option large_gates",)),
    (["run", *SMALL, "--backend", "int8-crt-10@fused=false"], ("backend 'int8-crt-10' takes no option fused",)),
    (["run", *SMALL, "--backend", "int8-auto@rho=1@target_error=1e-10"], ("the two rules exclude each other",)),
    (["run", *SMALL, "--backend", "int8-auto@target_error=2"], ("target_error must be a number in (0, 1)",)),
    (["run", *SMALL, "--backend", "int8-auto@target_error=small"], ("option target_error must be a number",)),
    (["run", *SMALL, "--backend", "int8-auto@large_gates=ozaki2@rho=1"], ("needs int8-auto's target rule",)),
    (["run", *SMALL, "--backend", "int8-auto@large_gates=crt"], ("large_gates must be 'auto', 'ozaki1' or 'ozaki2'",)),
    (["run", *SMALL, "--backend", "int8-auto@target_error=1e-10", "--target-error", "1e-12"],
     ("backend option target_error is given twice",)),
    (["run", *SMALL, "--backend", "int8-9", "--target-error", "1e-10"], ("'int8-9' takes no option target_error",)),
    (["run", *SMALL, "--backend", "cublas", "--rho", "1"], ("'cublas' takes no option rho",)),
    (["run", *SMALL, "--backend", "cublas", "--block", "64"], ("'cublas' takes no option block",)),
    (["run", *SMALL, "--backend", "int8-auto", "--rho", "-1"], ("rho must be a finite number of bits >= 0",)),
    (["run", *SMALL, "--backend", "int8-auto", "--rho", "nan"], ("rho must be a finite number of bits >= 0",)),
    (["run", *SMALL, "--backend", "int8-auto", "--rho", "x"], ("--rho", "must be a number, got 'x'")),
    (["run", *SMALL, "--backend", "int8-auto", "--target-error", "0"], ("target_error must be a number in (0, 1)",)),
    (["run", *SMALL, "--backend", "int8-auto", "--target-error", "inf"], ("target_error must be a number in (0, 1)",)),
    (["run", *SMALL, "--backend", "int8-auto", "--target-error", "1e-300"], ("no INT8 plan", "meets target_error")),
    (["run", *SMALL, "--backend", "fp16x2", "--block", "-1"], ("must be an integer >= 0, got -1",)),
    (["run", *SMALL, "--backend", "fp16x2", "--block", "x"], ("--block", "must be an integer, got 'x'")),
    (["run", *SMALL, "--backend", "fp16x2", "--accumulate", "fp16"], ("accumulate must be one of fp32, fp64",)),
    (["run", *SMALL, "--workspace-gib", "0"], ("--workspace-gib must be a finite positive number of GiB",)),
    (["run", *SMALL, "--workspace-gib", "-1"], ("--workspace-gib must be a finite positive number of GiB",)),
    (["run", *SMALL, "--workspace-gib", "nan"], ("--workspace-gib must be a finite positive number of GiB",)),
    (["run", *SMALL, "--workspace-gib", "1e300"], ("--workspace-gib must be a finite positive number of GiB",)),
    (["run", *SMALL, "--workspace-gib", "1e-12"], ("--workspace-gib must be a finite positive number of GiB",)),
    (["run", *SMALL, "--workspace-gib", "lots"], ("--workspace-gib", "invalid float value")),
    # devices, GPUs, trajectories, references
    (["run", "--qubits", "4", "--device", "tpu"], ("--device", "invalid choice: 'tpu'")),
    (["run", *SMALL, "--measure-rate", "2"], ("--measure-rate must be between 0 and 1, got 2.0",)),
    (["run", *SMALL, "--measure-rate", "nan"], ("--measure-rate must be between 0 and 1",)),
    (["run", *SMALL, "--measure-rate", "1", "--reference", "dd"], ("--reference dd compares one final state",)),
    (["run", *SMALL, "--trajectories", "0"], ("--trajectories", "must be >= 1, got 0")),
    (["run", *SMALL, "--gpus", "0"], ("--gpus", "must be >= 1, got 0")),
    (["run", *SMALL, "--gpus", "3"], ("must be a power of two",)),
    (["run", *SMALL, "--gpus", "16"], ("ranks",)),
    (["run", *SMALL, "--gpus", "2", "--trajectories", "3"], ("--trajectories is not supported with --gpus",)),
    (["run", *SMALL, "--gpus", "2", "--measure-rate", "1"], ("mid-circuit",)),
    (["run", *SMALL, "--timeout", "60"], ("--timeout applies to runs over several GPUs",)),
    (["run", *SMALL, "--gpus", "2", "--timeout", "-5"], ("--timeout must be a positive, finite number",)),
    (["run", *SMALL, "--gpus", "2", "--timeout", "inf"], ("--timeout must be a positive, finite number",)),
    (["run", *SMALL, "--reference", "qd"], ("--reference", "invalid choice: 'qd'")),
    (["run", "--qubits", "30", "--device", "cpu", "--reference", "dd", "--no-progress"],
     ("the double-double reference for 30 qubits", "GiB")),
    # output files
    (["run", *SMALL, "--json", ""], ("--json needs a file name, got ''",)),
    (["run", *SMALL, "--json", "{d}"], ("is a directory; give a file name",)),
    (["run", *SMALL, "--json", "/dev/null"], ("is not a regular file",)),
    (["run", *SMALL, "--json", "{d}/missing/r.json"], ("does not exist; create it first",)),
    (["backends", "--json", "{d}/missing/b.json"], ("does not exist; create it first",)),
    (["backends", "--device", "cpu"], ("unrecognized arguments: --device cpu",)),
    # compare
    ([*CMP, "--backends", ""], ("--backends needs at least one backend name",)),
    ([*CMP, "--backends", ","], ("--backends needs at least one backend name",)),
    ([*CMP, "--backends", "cublas,cublas"], ("got a backend twice",)),
    ([*CMP, "--backends", "cublas,bogus"], ("unknown backend 'bogus'",)),
    ([*CMP, "--backends", "cublas,int8-9@fused=maybe"], ("option fused must be true or false",)),
    ([*CMP, "--backends", "cublas", "--rho", "1"], ("no backend in --backends takes --rho",)),
    ([*CMP, "--backends", "int8-9,cgemm", "--target-error", "1e-10"], ("no backend in --backends takes --target-error",)),
    ([*CMP, "--backends", "int8-auto", "--rho", "1", "--target-error", "1e-10"], ("exclude each other",)),
    ([*CMP, "--backends", "cublas", "--measure-rate", "0.1"], ("unrecognized arguments: --measure-rate",)),
    ([*CMP, "--backends", "cublas", "--shots", "4"], ("unrecognized arguments: --shots 4",)),
    ([*CMP], ("the following arguments are required: --backends",)),
    (["compare", "--qasm", "{d}/ok.qasm", "--qubits", "4", "--backends", "cublas"], ("--qubits shape",)),
    (["compare", "--qasm", "{d}/measure.qasm", "--backends", "cublas", "--device", "cpu"], ("mid-circuit measurement",)),
    (["frobnicate"], ("invalid choice: 'frobnicate'",)),
    ([], ("the following arguments are required: command",)),
]


@pytest.fixture(scope="module")
def qasm_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("qasm")
    for name, text in QASM_FILES.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("argv, words", CLI_CASES, ids=[" ".join(a)[:80] for a, _ in CLI_CASES])
def test_the_command_line_refuses_with_exit_code_2_and_one_line(argv, words, qasm_dir, capsys):
    try:
        code = cli.main([arg.replace("{d}", str(qasm_dir)) for arg in argv])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2, captured.err
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith(("qsim: error:", "qsim run: error:", "qsim compare: error:", "qsim backends: error:",
                             "usage:")) or "error:" in last, captured.err
    for word in words:
        assert word in captured.err, captured.err
    assert "Traceback" not in captured.err and captured.out == ""


H = np.array([[1, 1], [1, -1]]) / np.sqrt(2)


@pytest.fixture(scope="module")
def result():
    return Simulator(device="cpu", progress=False).run(brickwork(3, 2, 1))


def _run(circuit, initial_state=None):
    return Simulator(device="cpu", progress=False).run(circuit, initial_state)


API_CASES = [
    ("Circuit(10**6)", lambda r: Circuit(10**6, []), CircuitError, (TOO_MANY, "1000000")),
    ("Circuit(63)", lambda r: Circuit(63, []), CircuitError, (TOO_MANY,)),
    ("Circuit(2**64)", lambda r: Circuit(2**64, []), CircuitError, (TOO_MANY,)),
    ("Circuit(0)", lambda r: Circuit(0, []), CircuitError, ("at least 1 qubit",)),
    ("Circuit(-1)", lambda r: Circuit(-1, []), CircuitError, ("must be >= 1, got -1",)),
    ("Circuit('3')", lambda r: Circuit("3", []), CircuitError, ("must be an integer, got '3'",)),
    ("Circuit(3.0)", lambda r: Circuit(3.0, []), CircuitError, ("must be an integer, got 3.0",)),
    ("Circuit(True)", lambda r: Circuit(True, []), CircuitError, ("must be an integer, got True",)),
    ("Circuit(None)", lambda r: Circuit(None, []), CircuitError, ("must be an integer, got None",)),
    ("gates None", lambda r: Circuit(2, None), CircuitError, ("gates must be a sequence",)),
    ("gates 5", lambda r: Circuit(2, 5), CircuitError, ("gates must be a sequence",)),
    ("gate is an array", lambda r: Circuit(2, [np.eye(2)]), CircuitError, ("not a circuits.Gate",)),
    ("target out of range", lambda r: Circuit(2, [Gate((2,), H)]), CircuitError, ("targets qubit 2", "0..1")),
    ("measured out of range", lambda r: Circuit(2, [], measured=(3,)), CircuitError, ("measured qubit 3",)),
    ("measured twice", lambda r: Circuit(2, [], measured=(0, 0)), CircuitError, ("repeat a qubit",)),
    ("n_clbits -1", lambda r: Circuit(2, [], n_clbits=-1), CircuitError, ("n_clbits must be >= 0",)),
    ("registers", lambda r: Circuit(2, [], n_clbits=1, clbit_registers=(("c", 2),)), CircuitError, ("do not cover",)),
    ("clbit out of range", lambda r: Circuit(2, [Measure((0,), (1,))], n_clbits=1), CircuitError,
     ("uses classical bit 1",)),
    ("not unitary", lambda r: Gate((0,), np.ones((2, 2))), CircuitError, ("is not unitary",)),
    ("matrix shape", lambda r: Gate((0,), np.eye(4)), CircuitError, ("needs a 2x2 matrix", "(4, 4)")),
    ("matrix NaN", lambda r: Gate((0,), np.array([[np.nan, 0], [0, 1]])), CircuitError, ("NaN or Inf",)),
    ("matrix text", lambda r: Gate((0,), "abc"), CircuitError, ("matrix must hold numbers",)),
    ("matrix bool", lambda r: Gate((0,), np.eye(2, dtype=bool)), CircuitError, ("matrix must hold numbers", "bool")),
    ("no targets", lambda r: Gate((), np.eye(1)), CircuitError, ("give at least one index",)),
    ("negative target", lambda r: Gate((-1,), H), CircuitError, ("negative index",)),
    ("repeated target", lambda r: Gate((0, 0), np.eye(4)), CircuitError, ("repeated index",)),
    ("float target", lambda r: Gate((0.5,), H), CircuitError, ("must be an integer, got 0.5",)),
    ("bare target", lambda r: Gate(0, H), CircuitError, ("must be a sequence of integer indices",)),
    ("gate name", lambda r: Gate((0,), H, name=5), CircuitError, ("name must be a string",)),
    ("measure clbits", lambda r: Measure((0, 1), (0,)), CircuitError, ("needs as many classical bits",)),
    ("empty reset", lambda r: Reset(()), CircuitError, ("give at least one index",)),
    ("condition", lambda r: Condition("x"), CircuitError, ("needs one or more ClbitTest",)),
    ("brickwork(1020)", lambda r: brickwork(1020, 5, 1), CircuitError, (TOO_MANY,)),
    ("brickwork 40-qubit gates", lambda r: brickwork(40, 40, 1), CircuitError, ("dense 2^40 x 2^40",)),
    ("brickwork depth 1e12", lambda r: brickwork(8, 2, 10**12), CircuitError, ("more than this machine's",)),
    ("brickwork depth 0", lambda r: brickwork(4, 2, 0), CircuitError, ("--depth must be >= 1",)),
    ("brickwork seed -1", lambda r: brickwork(4, 2, 1, seed=-1), CircuitError, ("--seed must be >= 0",)),
    ("brickwork seed 1.5", lambda r: brickwork(4, 2, 1, seed=1.5), CircuitError, ("--seed must be an integer",)),
    ("brickwork qubits 8.0", lambda r: brickwork(8.0, 2, 1), CircuitError, ("--qubits must be an integer",)),
    ("monitored rate nan", lambda r: monitored_brickwork(4, 2, 1, float("nan")), CircuitError, ("between 0 and 1",)),
    ("monitored rate text", lambda r: monitored_brickwork(4, 2, 1, "0.1"), CircuitError, ("between 0 and 1",)),
    ("backend bogus", lambda r: Simulator("bogus", "cpu"), BackendError, ("unknown backend 'bogus'",)),
    ("backend 5", lambda r: Simulator(5, "cpu"), BackendError, ("backend name must be a string",)),
    ("device tpu", lambda r: Simulator("cublas", "tpu"), SimulationError, ("unknown device 'tpu'",)),
    ("progress text", lambda r: Simulator(device="cpu", progress="yes"), SimulationError, ("progress must be",)),
    ("out_of_place", lambda r: Simulator(device="cpu", out_of_place="maybe"), SimulationError, ("out_of_place must",)),
    ("option not taken", lambda r: Simulator("cublas", "cpu", rho=1.0), BackendError, ("takes no option rho",)),
    ("int8-9 target_error", lambda r: Simulator("int8-9", "cpu", target_error=1e-10), BackendError,
     ("'int8-9' takes no option target_error",)),
    ("fused 1", lambda r: Simulator("int8-auto", "cpu", fused=1), BackendError, ("fused must be True or False",)),
    ("fused 'false'", lambda r: Simulator("int8-auto", "cpu", fused="false"), BackendError, ("fused must be True",)),
    ("run a string", lambda r: Simulator(device="cpu").run("circuit"), CircuitError, ("takes a circuits.Circuit",)),
    ("run 62 qubits", lambda r: _run(Circuit(62, [])), SimulationError, ("62 qubits need", "available")),
    ("initial size", lambda r: _run(Circuit(2, []), np.ones(3) / np.sqrt(3)), SimulationError, ("has 3 amplitudes",)),
    ("initial norm", lambda r: _run(Circuit(2, []), np.ones(4)), SimulationError, ("must have unit norm",)),
    ("initial text", lambda r: _run(Circuit(2, []), "0000"), SimulationError, ("must be a flat array",)),
    ("initial 2-D", lambda r: _run(Circuit(2, []), np.eye(2)), SimulationError, ("must be a flat array", "(2, 2)")),
    ("probabilities(5)", lambda r: r.probabilities(5), SimulationError, ("takes a list of basis states", "([5])")),
    ("probabilities(None)", lambda r: r.probabilities(None), SimulationError, ("takes a list", "(['000'])")),
    ("probabilities('000')", lambda r: r.probabilities("000"), SimulationError, ("got '000' (str)", "(['000'])")),
    ("probabilities(b'000')", lambda r: r.probabilities(b"000"), SimulationError, ("takes a list",)),
    ("probabilities(2.5)", lambda r: r.probabilities(2.5), SimulationError, ("takes a list", "2.5 (float)")),
    ("bitstring too long", lambda r: r.probabilities(["0000"]), SimulationError, ("must be 3 characters of 0/1",)),
    ("bitstring not binary", lambda r: r.probabilities(["0a0"]), SimulationError, ("must be 3 characters of 0/1",)),
    ("index too large", lambda r: r.probabilities([8]), SimulationError, ("index 8 is outside 0..2^3-1",)),
    ("index negative", lambda r: r.probabilities([-1]), SimulationError, ("must be >= 0, got -1",)),
    ("index float", lambda r: r.probabilities([1.0]), SimulationError, ("integer >= 0 or a bitstring",)),
    ("index None", lambda r: r.probabilities([None]), SimulationError, ("integer >= 0 or a bitstring", "None")),
    ("index bool", lambda r: r.probabilities([True]), SimulationError, ("integer >= 0 or a bitstring", "bool")),
    ("amplitude(8)", lambda r: r.amplitude(8), SimulationError, ("index 8 is outside",)),
    ("amplitude(-1)", lambda r: r.amplitude(-1), SimulationError, ("must be >= 0, got -1",)),
    ("amplitude(1.0)", lambda r: r.amplitude(1.0), SimulationError, ("must be an integer >= 0, got 1.0",)),
    ("amplitude('0')", lambda r: r.amplitude("0"), SimulationError, ("must be an integer >= 0, got '0'",)),
]


def _sampling_cases():
    from qsim.sampling import sample_counts

    return [
        ("shots 0", lambda r: sample_counts(r.state, [0], 0, 1), SimulationError, ("shots must be >= 1",)),
        ("shots 1.5", lambda r: sample_counts(r.state, [0], 1.5, 1), SimulationError, ("shots must be an integer",)),
        ("qubit 3", lambda r: sample_counts(r.state, [3], 10, 1), SimulationError, ("outside the state's 0..2",)),
        ("qubits repeat", lambda r: sample_counts(r.state, [0, 0], 10, 1), SimulationError, ("repeat a qubit",)),
        ("seed -1", lambda r: sample_counts(r.state, [0], 10, -1), SimulationError, ("seed must be >= 0",)),
        ("no qubits", lambda r: sample_counts(r.state, [], 10, 1), SimulationError, ("no qubits to measure",)),
    ]


def _reference_and_compare_cases():
    from qsim.compare import compare_backends
    from qsim.reference import reference_state

    dynamic = Circuit(2, [Measure((0,), (0,))], n_clbits=1)
    return [
        ("reference of a string", lambda r: reference_state("x"), CircuitError, ("takes a circuits.Circuit",)),
        ("reference workspace 0", lambda r: reference_state(Circuit(2, []), workspace_bytes=0), SimulationError,
         ("workspace_bytes must be positive",)),
        ("reference 40 qubits", lambda r: reference_state(Circuit(40, []), "cpu"), SimulationError,
         ("reference for 40 qubits needs",)),
        ("reference dynamic", lambda r: reference_state(dynamic), SimulationError, ("without mid-circuit",)),
        ("compare a string", lambda r: compare_backends("x", ["cublas"]), CircuitError, ("takes a circuits.Circuit",)),
        ("compare nothing", lambda r: compare_backends(Circuit(2, []), []), SimulationError, ("at least one backend",)),
        ("compare twice", lambda r: compare_backends(Circuit(2, []), ["cublas", "cublas"]), SimulationError,
         ("a backend twice",)),
        ("compare stray options", lambda r: compare_backends(Circuit(2, []), ["cublas"], backend_options={"dd": {}}),
         SimulationError, ("not among the backends",)),
        ("compare bogus", lambda r: compare_backends(Circuit(2, []), ["cublas", "bogus"], device="cpu"), BackendError,
         ("unknown backend 'bogus'",)),
        ("compare label", lambda r: compare_backends(Circuit(2, []), ["int8-9@fused=maybe"], device="cpu"),
         BackendError, ("option fused must be true or false",)),
        ("compare too large", lambda r: compare_backends(Circuit(40, []), ["cublas"], device="cpu"), SimulationError,
         ("40 qubits need",)),
    ]


def _import_and_backend_cases():
    from circuits import from_qasm, fuse

    matmul = lambda name, a, b: gemm_backend.get(name).matmul(a, b)  # noqa: E731
    cases = [
        ("fuse 0", lambda r: fuse(brickwork(4, 2, 1), 0), CircuitError, ("max_qubits must be an integer >= 1",)),
        ("fuse a string", lambda r: fuse("x", 3), CircuitError, ("fuse takes a circuits.Circuit",)),
        ("qasm garbage", lambda r: from_qasm("garbage"), CircuitError, ("neither an existing file nor OpenQASM",)),
        ("qasm wide", lambda r: from_qasm(QASM_FILES["wide.qasm"]), CircuitError, (TOO_MANY,)),
        ("qasm index", lambda r: from_qasm(QASM_FILES["oob.qasm"]), CircuitError, ("out-of-range",)),
        ("qasm loop", lambda r: from_qasm(QASM_FILES["loop.qasm"]), CircuitError, ("while_loop",)),
        ("option splits", lambda r: gemm_backend.get("int8-9", splits=4), BackendError, ("takes no option splits",)),
        ("parse unknown", lambda r: gemm_backend.parse_option("dd", "fused", "true"), BackendError,
         ("'dd' takes no option fused",)),
    ]
    for name in ("cublas", "int8-9", "int8-crt-10", "fp16x2", "cgemm", "dd"):
        cases += [
            (f"{name} inner sizes", lambda r, n=name: matmul(n, np.ones((2, 3)), np.ones((2, 3))), BackendError,
             ("inner sizes differ", "(2, 3)")),
            (f"{name} 1-D", lambda r, n=name: matmul(n, np.ones(3), np.ones((3, 3))), BackendError,
             ("must be a 2-D matrix",)),
            (f"{name} text", lambda r, n=name: matmul(n, np.array([["a"]]), np.ones((1, 1))), BackendError,
             ("must hold numeric",)),
        ]
    return cases


ALL_API_CASES = API_CASES + _sampling_cases() + _reference_and_compare_cases() + _import_and_backend_cases()


@pytest.mark.parametrize("call, error, words", [case[1:] for case in ALL_API_CASES],
                         ids=[case[0] for case in ALL_API_CASES])
def test_the_python_api_refuses_with_a_named_error(call, error, words, result):
    with pytest.raises(error) as caught:
        call(result)
    message = str(caught.value)
    assert "\n" not in message.strip()
    for word in words:
        assert word in message


def test_there_are_at_least_200_cases():
    assert len(CLI_CASES) + len(ALL_API_CASES) >= 200
