"""The native backend and the GPU small-gate kernel."""
import re

import numpy as np
import pytest

import gemm_backend
from circuits import brickwork
from gemm_backend import BackendError
from qsim import Simulator
from .helpers import check_apply_batched, crandn


def test_matmul_matches_numpy(rng):
    a, b = crandn(rng, 37, 19), crandn(rng, 19, 11)
    backend = gemm_backend.get("cublas")
    assert np.array_equal(backend.matmul(a, b), a @ b)
    assert backend.statistics()["flops"] == 8 * 37 * 19 * 11


@pytest.mark.parametrize("shape", [(8, 4, 1), (1, 4, 16), (3, 8, 5), (5, 2, 7)])
def test_apply_batched_in_and_out_of_place(shape, rng):
    check_apply_batched(gemm_backend.get("zgemm", workspace_bytes=256), shape, rng)


@pytest.mark.parametrize("n_right, min_batched_stride, path", [
    (2, 16, "zgemm-rows"), (8, 16, "zgemm-rows"), (16, 16, "zgemm"), (2, 1, "zgemm"), (1, 16, "zgemm"),
    (4, 1 << 62, "zgemm-rows")])
def test_narrow_strides_go_through_rows(n_right, min_batched_stride, path, rng):
    # a workspace of 5 columns cuts the view into chunks along L and, at R = 16, along R
    backend = gemm_backend.get("cublas", min_batched_stride=min_batched_stride, workspace_bytes=5 * 32 * 16)
    check_apply_batched(backend, (7, 16, n_right), rng)
    assert backend.last_call_info == {"kernel": path}


@pytest.mark.parametrize("value", [0, -4, True, 2.0])
def test_min_batched_stride_must_be_a_positive_integer(value):
    with pytest.raises(BackendError, match=f"min_batched_stride must be an integer >= 1, got {value!r}"):
        gemm_backend.get("cublas", min_batched_stride=value)


@pytest.mark.gpu
@pytest.mark.parametrize("n_right", [2, 4, 8, 16])
def test_gpu_large_gate_at_narrow_strides_matches_einsum(n_right, rng):
    # d = 7 goes to cuBLAS (no gate kernel takes it): rows below R = 16, the strided batch from it
    import cupy as cp

    u, x = crandn(rng, 128, 128), crandn(rng, 37, 128, n_right)
    backend = gemm_backend.get("cublas", workspace_bytes=11 * 32 * 128 * 16)
    u_gpu, x_gpu = cp.asarray(u), cp.asarray(x)
    out = cp.full_like(x_gpu, np.nan)
    backend.apply_batched(u_gpu, x_gpu, out)
    expected = np.einsum("ij,ljr->lir", u, x)
    assert np.abs(out.get() - expected).max() < 1e-12
    backend.apply_batched(u_gpu, x_gpu, x_gpu)  # in place
    assert np.abs(x_gpu.get() - expected).max() < 1e-12
    assert backend.last_call_info == {"kernel": "zgemm-rows" if n_right < 16 else "zgemm"}


def test_bad_options():
    with pytest.raises(BackendError, match="small_gate_max_qubits"):
        gemm_backend.get("cublas", small_gate_max_qubits=9)
    with pytest.raises(BackendError, match="workspace_bytes"):
        gemm_backend.get("cublas", workspace_bytes=0)


@pytest.mark.parametrize("value", [True, 2.5, 3.0, float("nan"), "3"])
def test_small_gate_size_must_be_an_integer(value):
    # True would be 1 qubit and 3.0 would fail later inside a shift: refused up front
    with pytest.raises(BackendError, match=f"small_gate_max_qubits must be an integer in 0..5, got {value!r}"):
        gemm_backend.get("cublas", small_gate_max_qubits=value)


def test_numpy_integer_small_gate_size_is_taken():
    backend = gemm_backend.get("cublas", small_gate_max_qubits=np.int64(3))
    assert backend.small_gate_max_dim == 8 and type(backend.options["small_gate_max_qubits"]) is int
    with pytest.raises(BackendError, match=re.escape("got ('cublas',)")):
        gemm_backend.accepted_options(("cublas",))


@pytest.mark.parametrize("name", [3, None, ("cublas",)])
def test_backend_name_must_be_a_string(name):
    with pytest.raises(BackendError, match=f"a backend name must be a string .*got {re.escape(repr(name))}"):
        gemm_backend.get(name)


@pytest.mark.gpu
@pytest.mark.parametrize("k", [2, 4, 8, 16, 32])
@pytest.mark.parametrize("n_left, n_right", [(4096, 1), (512, 8), (64, 64), (2, 4096), (1, 32)])
def test_small_gate_kernel_matches_cpu(k, n_left, n_right, rng):
    import cupy as cp

    from gemm_backend.native.small_gate import apply_small_gate

    u, x = crandn(rng, k, k), crandn(rng, n_left, k, n_right)
    expected = np.einsum("ij,ljr->lir", u, x)
    x_gpu = cp.asarray(x)
    out = cp.full_like(x_gpu, np.nan)
    apply_small_gate(cp.asarray(u), x_gpu, out)
    assert np.abs(out.get() - expected).max() < 1e-12
    apply_small_gate(cp.asarray(u), x_gpu, x_gpu)  # in place
    assert np.abs(x_gpu.get() - expected).max() < 1e-12


@pytest.mark.gpu
@pytest.mark.parametrize("gate_size", [1, 2, 3, 5, 6, 7])
def test_gpu_state_equals_cpu_state_n20(gate_size):
    circuit = brickwork(20, gate_size, 3, seed=gate_size)
    cpu = Simulator(device="cpu", progress=False).run(circuit).state
    gpu = Simulator(device="gpu", progress=False).run(circuit)
    assert np.abs(gpu.state_vector() - cpu).max() < 1e-12
    assert "gpu" in gpu.device


@pytest.mark.gpu
def test_gpu_non_contiguous_and_in_place_paths_match_cpu(rng):
    from circuits import Circuit, Gate, haar_unitary

    gates = [Gate((0, 9, 4), haar_unitary(8, rng)), Gate((17, 3), haar_unitary(4, rng)),
             Gate((12, 11, 13, 10, 14, 15), haar_unitary(64, rng))]
    circuit = Circuit(18, gates)
    cpu = Simulator(device="cpu", progress=False).run(circuit).state
    for out_of_place in (True, False):
        gpu = Simulator(device="gpu", progress=False, out_of_place=out_of_place, workspace_bytes=1 << 20).run(circuit)
        assert np.abs(gpu.state_vector() - cpu).max() < 1e-12
