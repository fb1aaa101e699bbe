"""The cost model behind automatic fusion: per-gate passes of each backend (gate_cost.py) and the
engine's use of it (qsim/fusion.py): what it chooses, what it reports, what it refuses."""
import numpy as np
import pytest

import gemm_backend
from circuits import Circuit, CircuitError, Gate, haar_unitary
from circuits.fusion import fuse
from gemm_backend.gate_cost import INT8_FUSED_GPU_PASSES, NATIVE_GPU_PASSES, TRANSPOSED_EXTRA_PASSES, roofline_passes
from qsim.fusion import AUTO, describe_fusion, fuse_for_backend, fusion_setting, gate_passes

from .dense import dense_state


def test_roofline_is_one_pass_until_compute_dominates_then_linear_in_k():
    assert roofline_passes(2, 20.0) == roofline_passes(64, 20.0) == 1.0
    assert roofline_passes(1024, 20.0) == pytest.approx(8 * 1024 / (32 * 20))
    assert roofline_passes(2048, 20.0) == pytest.approx(2 * roofline_passes(1024, 20.0))


def test_gpu_tables_follow_the_measured_kernels(monkeypatch):
    cublas, int8 = gemm_backend.get("cublas"), gemm_backend.get("int8-auto")
    for d in range(1, 11):
        assert cublas.contiguous_gate_passes(1 << d, True) == NATIVE_GPU_PASSES[d]
        assert int8.contiguous_gate_passes(1 << d, True) == INT8_FUSED_GPU_PASSES[d]
    # the fused INT8 kernel is slowest on the smallest gates: automatic fusion should widen them
    assert INT8_FUSED_GPU_PASSES[2] > INT8_FUSED_GPU_PASSES[4] < INT8_FUSED_GPU_PASSES[6]
    # beyond the tables: the roofline (compute-bound, so more than a pass)
    assert cublas.contiguous_gate_passes(1 << 12, True) == roofline_passes(1 << 12, 20.0) > 1


def test_scattered_targets_cost_the_transposed_copy_only_without_a_kernel(monkeypatch):
    cublas = gemm_backend.get("cublas")
    assert cublas.gate_passes(8, False, scattered=True) == cublas.gate_passes(8, False) + TRANSPOSED_EXTRA_PASSES
    monkeypatch.setattr(type(cublas), "takes_scattered", lambda self, k, on_gpu: on_gpu)
    assert cublas.gate_passes(8, True, scattered=True) == cublas.gate_passes(8, True) == NATIVE_GPU_PASSES[3]


def test_int8_on_the_cpu_is_compute_bound_from_small_gates():
    int8 = gemm_backend.get("int8-auto")
    passes = [int8.contiguous_gate_passes(1 << d, False) for d in (1, 3, 5)]
    assert 1 < passes[0] < passes[1] < passes[2]


def test_gate_passes_sees_whether_targets_are_contiguous(rng):
    cublas = gemm_backend.get("cublas")
    unsorted_run = Gate((4, 2, 3), haar_unitary(8, rng))
    spread = Gate((0, 5), haar_unitary(4, rng))
    assert gate_passes(cublas, unsorted_run, on_gpu=False) == cublas.gate_passes(8, False)
    assert gate_passes(cublas, spread, on_gpu=False) == cublas.gate_passes(4, False, scattered=True)


def ladder(n_qubits, rng):
    """Two-qubit gates on neighbours, then on qubits far apart: fusion changes both counts."""
    gates = [Gate((q, q + 1), haar_unitary(4, rng)) for q in range(n_qubits - 1)]
    gates += [Gate((q, n_qubits - 1 - q), haar_unitary(4, rng)) for q in range(n_qubits // 2)]
    return Circuit(n_qubits, gates)


@pytest.mark.parametrize("backend_name, on_gpu", [("cublas", False), ("cublas", True), ("int8-auto", True)])
def test_auto_fusion_takes_the_size_of_least_estimated_passes(backend_name, on_gpu, rng, monkeypatch):
    backend = gemm_backend.get(backend_name)
    monkeypatch.setattr(type(backend), "takes_scattered", lambda self, k, gpu: gpu and k <= 64)
    circuit = ladder(8, rng)
    fused, report = fuse_for_backend(circuit, AUTO, backend, on_gpu)
    estimates = report["estimated_passes"]
    assert report["chosen_by"] == "cost model" and estimates[report["max_qubits"]] == min(estimates.values())
    by_hand = fuse(circuit, report["max_qubits"])
    assert report["gates"] == len(by_hand.gates) == len(fused.gates) and report["gates_before"] == len(circuit)
    assert sum(report["gate_sizes"].values()) == report["gates"]
    assert estimates[report["max_qubits"]] == pytest.approx(sum(gate_passes(backend, g, on_gpu) for g in by_hand.gates),
                                                            abs=0.01)
    np.testing.assert_allclose(dense_state(fused), dense_state(circuit), atol=1e-12)


def test_given_sizes_and_no_fusion_are_reported(rng):
    circuit, backend = ladder(6, rng), gemm_backend.get("cublas")
    same, report = fuse_for_backend(circuit, 0, backend, False)
    assert same is circuit and report["max_qubits"] == 0 and "estimated_passes" not in report
    assert describe_fusion(report) == f"unfused: {len(circuit)} gates"
    fused, report = fuse_for_backend(circuit, "3", backend, False)
    assert report["chosen_by"] == "given" and max(report["gate_sizes"]) <= 3
    assert describe_fusion(report).startswith(f"fused to <= 3 qubits (given): {len(circuit)} -> {len(fused)} gates (")


@pytest.mark.parametrize("text, value", [("auto", AUTO), (" AUTO ", AUTO), ("0", 0), ("5", 5), (4, 4), (np.int64(2), 2)])
def test_fusion_settings_as_typed(text, value):
    assert fusion_setting(text) == value


@pytest.mark.parametrize("bad", ["-1", -1, "five", "", 2.5, True, None, "3.0"])
def test_bad_fusion_settings_are_refused_naming_the_option(bad):
    with pytest.raises(CircuitError, match=r"^--fuse must be 'auto' or a block size >= 0 \(0 turns fusion off\)"):
        fusion_setting(bad, "--fuse")
