"""gemm_backend.get: names and options of the wrong type or range are refused with a
BackendError that names the problem, never coerced."""
import numpy as np
import pytest

import gemm_backend
from gemm_backend import BackendError

#: Every backend the registry builds on the CPU, one of each numbered family included.
NAMES = ["cublas", "int8-auto", "int8-9", "int8-crt-10", "fp16x2", "fp16", "cgemm", "dd"]

#: Values no option takes: booleans where numbers are wanted, non-finite and non-integer numbers,
#: strings and containers.
NOT_A_SIZE = [True, np.bool_(True), 1.5, 2.0**30, float("nan"), float("inf"), "1024", [1024], -1, 0]


@pytest.mark.parametrize("name", [5, None, b"cublas", ["cublas"]])
def test_a_backend_name_must_be_a_string(name):
    with pytest.raises(BackendError, match="a backend name must be a string"):
        gemm_backend.get(name)
    with pytest.raises(BackendError, match="a backend name must be a string"):
        gemm_backend.accepted_options(name)


@pytest.mark.parametrize("name", ["int8-09", "int8-crt-010", "int8-\u0669", "int8-9\n", " int8-9", "INT8-9"])
def test_numbered_names_are_written_exactly(name):
    """A leading zero, another script's digit or a stray newline does not alias int8-9."""
    with pytest.raises(BackendError, match="unknown backend"):
        gemm_backend.get(name)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", NOT_A_SIZE, ids=repr)
def test_workspace_bytes_must_be_a_positive_integer(name, value):
    with pytest.raises(BackendError, match="workspace_bytes must be (a positive integer|an integer >= 1)"):
        gemm_backend.get(name, workspace_bytes=value)


def test_numpy_integers_are_integers():
    assert gemm_backend.get("cublas", workspace_bytes=np.int64(1 << 20)).workspace_bytes == 1 << 20
    assert gemm_backend.get("fp16x2", block=np.int32(64)).block == 64


@pytest.mark.parametrize("name, option, value, message", [
    ("int8-auto", "rho", float("nan"), "rho must be a finite number of bits >= 0"),
    ("int8-auto", "rho", float("inf"), "rho must be a finite number of bits >= 0"),
    ("int8-auto", "rho", -1.0, "rho must be a finite number of bits >= 0"),
    ("int8-auto", "rho", True, "rho must be a finite number of bits >= 0"),
    ("int8-auto", "rho", "1", "rho must be a finite number of bits >= 0"),
    ("int8-9", "rho", 1.0, r"backend 'int8-9' takes no option rho \(it takes: workspace_bytes, fused\)"),
    ("int8-9", "target_error", 1e-10, "backend 'int8-9' takes no option target_error"),
    ("int8-9", "large_gates", "ozaki1", "backend 'int8-9' takes no option large_gates"),
    ("int8-auto", "target_error", float("nan"), r"target_error must be a number in \(0, 1\)"),
    ("int8-auto", "target_error", 0.0, r"target_error must be a number in \(0, 1\)"),
    ("int8-auto", "target_error", -1e-10, r"target_error must be a number in \(0, 1\)"),
    ("int8-auto", "target_error", float("inf"), r"target_error must be a number in \(0, 1\)"),
    ("int8-auto", "target_error", True, r"target_error must be a number in \(0, 1\)"),
    ("int8-auto", "target_error", "1e-10", r"target_error must be a number in \(0, 1\)"),
    ("int8-auto", "fused", 1, "fused must be True or False"),
    ("int8-9", "fused", "yes", "fused must be True or False"),
    ("fp16x2", "block", -1, "block .* must be an integer >= 0"),
    ("fp16x2", "block", 2.5, "block .* must be an integer >= 0"),
    ("fp16x2", "block", True, "block .* must be an integer >= 0"),
    ("fp16x2", "block", float("nan"), "block .* must be an integer >= 0"),
    ("fp16x2", "block", "64", "block .* must be an integer >= 0"),
    ("fp16x2", "accumulate", "fp16", "accumulate must be one of fp32, fp64"),
    ("fp16x2", "accumulate", 32, "accumulate must be one of fp32, fp64"),
    ("fp16x2", "accumulate", ["fp32"], "accumulate must be one of fp32, fp64"),
    ("cgemm", "rho", 1.0, "takes no option rho"),
])
def test_bad_option_values_are_refused(name, option, value, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.get(name, **{option: value})


# -- the table of options: what `qsim backends` lists is what the backend takes ------------------
#: A value each option takes on every backend that lists it.
SAMPLE_VALUES = {"target_error": 1e-10, "rho": 1.0, "block": 64, "accumulate": "fp64", "workspace_bytes": 1 << 20,
                 "fused": False, "large_gates": "ozaki1", "dmma_min_qubits": 5, "small_gate_max_qubits": 3,
                 "min_batched_stride": 4, "bound": "worst-case"}
CONCRETE = {"int8-<s>": "int8-9", "int8-crt-<m>": "int8-crt-10", "int8-gcrt-<m>": "int8-gcrt-12"}


def test_every_listed_option_is_taken_and_every_other_refused():
    rows = gemm_backend.available()
    assert {row["name"] for row in rows} >= {"cublas", "int8-auto", "int8-<s>", "int8-crt-<m>"}
    for row in rows:
        name = CONCRETE.get(row["name"], row["name"])
        assert tuple(row["options"]) == gemm_backend.accepted_options(name)
        for option in row["options"]:
            gemm_backend.get(name, **{option: SAMPLE_VALUES[option]})
        for option in sorted(set(SAMPLE_VALUES) - set(row["options"])):
            with pytest.raises(BackendError, match=f"backend '{name}' takes no option {option}"):
                gemm_backend.get(name, **{option: SAMPLE_VALUES[option]})


def test_the_table_names_only_options_the_classes_have():
    for row in gemm_backend.available():
        name = CONCRETE.get(row["name"], row["name"])
        assert set(row["options"]) <= set(type(gemm_backend.get(name)).OPTIONS)
    used = {option for row in gemm_backend.available() for option in row["options"]}
    assert used == set(gemm_backend.OPTION_SPECS) == set(SAMPLE_VALUES)


@pytest.mark.parametrize("text, value", [("true", True), ("True", True), ("TRUE", True), ("1", True),
                                         ("false", False), ("False", False), ("fAlSe", False), ("0", False)])
def test_flags_are_read_as_written_on_the_command_line(text, value):
    assert gemm_backend.parse_option("int8-9", "fused", text) is value
    assert gemm_backend.get("int8-auto", fused=gemm_backend.parse_option("int8-auto", "fused", text)).fused is value


@pytest.mark.parametrize("name, option, text, message", [
    ("int8-9", "fused", "yes", "option fused must be true or false"),
    ("int8-9", "fused", "2", "option fused must be true or false"),
    ("int8-9", "fused", "", "option fused must be true or false"),
    ("cublas", "dmma_min_qubits", "5.0", "option dmma_min_qubits must be an integer, got '5.0'"),
    ("int8-auto", "target_error", "small", "option target_error must be a number, got 'small'"),
    ("int8-9", "target_error", "1e-10", "backend 'int8-9' takes no option target_error"),
    ("int8-crt-10", "fused", "true", "backend 'int8-crt-10' takes no option fused"),
    ("int8-99", "fused", "true", "splits must be in 3..18"),
])
def test_option_text_of_the_wrong_kind_is_refused(name, option, text, message):
    with pytest.raises(BackendError, match=message):
        gemm_backend.parse_option(name, option, text)


def test_backends_taking_an_option():
    assert gemm_backend.backends_taking("target_error") == ["int8-auto"]
    assert gemm_backend.backends_taking("fused") == ["int8-auto", "fp16x2", "int8-<s>"]


def test_parse_label_reads_options_by_the_table():
    assert gemm_backend.parse_label("int8-auto") == ("int8-auto", {})
    assert gemm_backend.parse_label("int8-9@fused=FALSE@workspace_bytes=4096") == (
        "int8-9", {"fused": False, "workspace_bytes": 4096})
    for label, message in (("cublas@", "write options as name@option=value"),
                           ("int8-auto@rho=1@rho=2", "gives option rho twice"),
                           ("int8-9@rho=1", "takes no option rho")):
        with pytest.raises(BackendError, match=message):
            gemm_backend.parse_label(label)
