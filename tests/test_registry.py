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
    ("int8-9", "rho", 1.0, "rho applies only to int8-auto"),
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
