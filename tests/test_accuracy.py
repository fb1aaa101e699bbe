"""accuracy_report on hand-computed examples, and compare_backends / format_table / the plot."""
import math
import sys
from fractions import Fraction

import numpy as np
import pytest

from circuits import brickwork
from gemm_backend import BackendError
from gemm_backend.arrays import gpu_available
from qsim import SimulationError, Simulator
from qsim.accuracy import accuracy_report
from qsim.compare import compare_backends, format_table, plot_accuracy_vs_time
from qsim.result import splits_summary
from qsim.reference import reference_state

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
E40, E41 = 2.0**-40, 2.0**-41


def hand_example():
    """A normalized 2-qubit reference and a psi off by 2^-40 in Re psi_0 and -2^-41 i in psi_2."""
    ref = np.array([0.5, 0.5, 0.5, 0.5j])
    psi = np.array([0.5 + E40, 0.5, 0.5 - E41 * 1j, 0.5j])
    return psi, ref, np.zeros(4, complex)


def test_report_on_hand_computed_example():
    psi, ref_hi, ref_lo = hand_example()
    report = accuracy_report(psi, ref_hi, ref_lo)
    assert report["rel_error_re_amp0"] == 2.0**-39  # 2^-40 / 0.5
    assert report["max_rel_amplitude_error"] == 2.0**-39
    assert report["mean_rel_amplitude_error"] == pytest.approx((2.0**-39 + 2.0**-40) / 4, rel=1e-15)
    assert report["amplitudes_compared"] == 4
    assert report["threshold_fraction"] == 1e-3
    assert report["amplitude_threshold"] == pytest.approx(1e-3 * 0.5, rel=1e-15)  # RMS = 2^(-N/2)
    assert report["l2_error"] == pytest.approx(math.sqrt(2.0**-80 + 2.0**-82), rel=1e-15)
    # <ref|psi> = 1 + 2^-41 - 2^-42 i; <psi|psi> = 1 + 2^-40 + 2^-80 + 2^-82; <ref|ref> = 1.
    overlap = (1 + Fraction(2) ** -41) ** 2 + Fraction(2) ** -84
    psi_norm = 1 + Fraction(2) ** -40 + Fraction(2) ** -80 + Fraction(2) ** -82
    expected = 1 - overlap / psi_norm  # = (2^-80 - 2^-84) / psi_norm ~ 7.8e-25
    assert report["infidelity"] == pytest.approx(float(expected), rel=1e-14)
    assert report["relative_norm_error"] == pytest.approx(float(psi_norm - 1), rel=1e-14)


def test_reference_lo_part_is_resolved_below_float64():
    """The reference's lo word matters: differences far below 1 ulp of hi are measured."""
    ref_hi = np.array([0.5, 0.5j, -0.5, 0.5])
    ref_lo = np.array([2.0**-70, 0, 0, -(2.0**-75) * 1j])
    psi = ref_hi.copy()  # the float64 rounding of the reference
    report = accuracy_report(psi, ref_hi, ref_lo)
    assert report["rel_error_re_amp0"] == pytest.approx(2.0**-70 / (0.5 + 2.0**-70), rel=1e-15)
    assert report["max_rel_amplitude_error"] == pytest.approx(2.0**-69, rel=1e-15)
    assert report["l2_error"] == pytest.approx(math.sqrt(2.0**-140 + 2.0**-150), rel=1e-15)
    ref = [Fraction(0.5) + Fraction(2) ** -70, Fraction(0), Fraction(-0.5), Fraction(0.5)]  # real parts
    ref_im = [Fraction(0), Fraction(0.5), Fraction(0), -Fraction(2) ** -75]
    p_re, p_im = [Fraction(0.5), Fraction(0), Fraction(-0.5), Fraction(0.5)], [0, Fraction(0.5), 0, 0]
    inner_re = sum(r * p + i * q for r, i, p, q in zip(ref, ref_im, p_re, p_im))
    inner_im = sum(r * q - i * p for r, i, p, q in zip(ref, ref_im, p_re, p_im))
    ref_norm = sum(r * r + i * i for r, i in zip(ref, ref_im))
    expected = 1 - (inner_re**2 + inner_im**2) / ref_norm  # psi_norm = 1 exactly
    assert 1e-45 < expected < 1e-42
    assert report["infidelity"] == pytest.approx(float(expected), rel=1e-12)


def test_threshold_leaves_out_tiny_amplitudes():
    ref = np.array([0.8, 0.6, 1e-5, 0.0])
    psi = np.array([0.8, 0.6 + 6e-14, 2e-5, 1e-3])  # 100% and infinite relative errors on the tiny ones
    report = accuracy_report(psi, ref, np.zeros(4), threshold_fraction=1e-3)
    assert report["amplitude_threshold"] == pytest.approx(1e-3 * 0.5)
    assert report["amplitudes_compared"] == 2
    assert report["max_rel_amplitude_error"] == pytest.approx(1e-13, rel=1e-3)
    assert report["mean_rel_amplitude_error"] == pytest.approx(0.5e-13, rel=1e-3)
    nothing = accuracy_report(psi, ref, np.zeros(4), threshold_fraction=10.0)
    assert nothing["amplitudes_compared"] == 0 and math.isnan(nothing["max_rel_amplitude_error"])
    assert math.isnan(accuracy_report(psi[::-1].copy(), ref[::-1].copy(), np.zeros(4))["rel_error_re_amp0"])


def test_non_finite_psi_gives_nan_metrics():
    psi, ref_hi, ref_lo = hand_example()
    psi[1] = np.nan
    report = accuracy_report(psi, ref_hi, ref_lo, chunk_amplitudes=2)
    for key in ("max_rel_amplitude_error", "mean_rel_amplitude_error", "l2_error", "infidelity"):
        assert math.isnan(report[key]), key
    assert report["rel_error_re_amp0"] == 2.0**-39


def test_chunks_do_not_change_the_result(rng):
    psi = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)
    ref = psi + 1e-12 * (rng.standard_normal(1000) + 1j * rng.standard_normal(1000))
    whole = accuracy_report(psi, ref, np.zeros(1000))
    chunked = accuracy_report(psi, ref, np.zeros(1000), chunk_amplitudes=97)
    assert whole["amplitudes_compared"] == chunked["amplitudes_compared"]
    for key in ("max_rel_amplitude_error", "mean_rel_amplitude_error", "l2_error", "infidelity"):
        assert chunked[key] == pytest.approx(whole[key], rel=1e-10)


def test_report_against_a_real_reference():
    circuit = brickwork(10, 3, 5, seed=4)
    ref_hi, ref_lo = reference_state(circuit, progress=False)
    psi = Simulator(device="cpu", progress=False).run(circuit).state
    report = accuracy_report(psi, ref_hi, ref_lo)
    assert 0 < report["rel_error_re_amp0"] < 1e-12
    assert 0 < report["max_rel_amplitude_error"] < 1e-10
    assert report["amplitudes_compared"] > 1000
    # 1 - fidelity = |component of psi - ref orthogonal to ref|^2 / <psi|psi> <= ||psi - ref||^2.
    assert 0 < report["infidelity"] <= report["l2_error"] ** 2 * (1 + 1e-12)
    rounded = accuracy_report(ref_hi, ref_hi, ref_lo)  # psi = the reference rounded to float64
    assert 0 < rounded["infidelity"] <= rounded["l2_error"] ** 2 * (1 + 1e-12) < 1e-31
    noisy_psi = psi + 1e-9 * np.random.default_rng(1).standard_normal(psi.size)  # mostly orthogonal
    noisy = accuracy_report(noisy_psi, ref_hi, ref_lo)
    assert noisy["infidelity"] == pytest.approx(noisy["l2_error"] ** 2, rel=0.05)


def test_report_rejects_bad_input():
    psi = np.zeros(4, complex)
    with pytest.raises(SimulationError, match="one size"):
        accuracy_report(psi, np.zeros(8, complex), np.zeros(8, complex))
    with pytest.raises(SimulationError, match="flat"):
        accuracy_report(psi.reshape(2, 2), psi.reshape(2, 2), psi.reshape(2, 2))
    with pytest.raises(SimulationError, match="threshold_fraction"):
        accuracy_report(psi, psi, psi, threshold_fraction=-1)


# -- compare_backends ------------------------------------------------------------------------
def test_compare_backends_rows():
    circuit = brickwork(8, 3, 4, seed=9)
    report = compare_backends(circuit, ["cublas", "dd"], device="cpu",
                              backend_options={"dd": {"workspace_bytes": 1 << 20}}, progress=False)
    assert report["circuit"] == {"qubits": 8, "gates": len(circuit), "max_gate_qubits": 3}
    assert report["device"] == "cpu" and report["reference"]["time_s"] > 0
    assert report["reference"]["held_on"] == "cpu" and report["reference"]["bytes"] == 32 * 256
    assert [row["backend"] for row in report["rows"]] == ["cublas", "dd"]
    for row in report["rows"]:
        assert row["time_s"] > 0 and row["gate_time_s"] == pytest.approx(row["time_s"] / len(circuit))
        assert row["effective_tflops"] > 0 and row["peak_memory_bytes"] > 0
        assert row["splits"] is None
        assert 0 <= row["rel_error_re_amp0"] < 1e-13 and row["max_rel_amplitude_error"] < 1e-11
        assert row["amplitudes_compared"] == 128  # qubit 7 is idle in this brickwork
        assert 0 <= row["infidelity"] < 1e-28
    assert report["rows"][1]["backend_options"] == {"workspace_bytes": 1 << 20}
    table = format_table(report)
    lines = table.splitlines()
    assert "8 qubits" in lines[0] and "backend" in lines[1] and set(lines[2]) <= {"-", " "}
    assert lines[3].startswith("cublas") and lines[4].startswith("dd")
    assert len({len(line) for line in lines[1:]}) == 1  # aligned columns
    assert "rel err Re a0" in lines[1] and "1 - fidelity" in lines[1]


def test_compare_backends_bad_arguments():
    circuit = brickwork(3, 1, 1)
    with pytest.raises(SimulationError, match="at least one backend"):
        compare_backends(circuit, [], device="cpu")
    with pytest.raises(SimulationError, match="twice"):
        compare_backends(circuit, ["cublas", "cublas"], device="cpu")
    with pytest.raises(SimulationError, match="fp16x2"):
        compare_backends(circuit, ["cublas"], device="cpu", backend_options={"fp16x2": {}})
    with pytest.raises(BackendError, match="unknown backend"):
        compare_backends(circuit, ["nonsense"], device="cpu", progress=False)


def test_splits_summary():
    infos = [{"splits": 9, "targets": [0]}, {"kernel": "x"}, {"splits": 12}, {"splits": 10}]
    assert splits_summary(infos) == {"min": 9, "max": 12, "mean": pytest.approx(31 / 3)}
    assert splits_summary([{"kernel": "zgemm"}]) is None


def fake_report():
    row = {"backend": "cublas", "time_s": 0.5, "rel_error_re_amp0": 1e-15, "infidelity": 0.0}
    return {"circuit": {"qubits": 4, "gates": 3, "max_gate_qubits": 2}, "device": "cpu", "rows": [row]}


def test_plot_without_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(SimulationError, match="pip install matplotlib"):
        plot_accuracy_vs_time(fake_report(), "unused.png")


def test_plot_writes_a_file(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "accuracy.png"
    plot_accuracy_vs_time(fake_report(), path)
    assert path.stat().st_size > 1000


# -- GPU ----------------------------------------------------------------------------------------
@pytest.mark.gpu
@requires_gpu
def test_gpu_report_equals_cpu_report():
    import cupy as cp

    circuit = brickwork(16, 4, 4, seed=3)
    ref_hi, ref_lo = reference_state(circuit, device="cpu", progress=False)
    psi = Simulator(device="cpu", progress=False).run(circuit).state
    cpu = accuracy_report(psi, ref_hi, ref_lo, chunk_amplitudes=1 << 12)
    on_gpu = accuracy_report(cp.asarray(psi), cp.asarray(ref_hi), cp.asarray(ref_lo), chunk_amplitudes=1 << 12)
    reference_on_host = accuracy_report(cp.asarray(psi), ref_hi, ref_lo, chunk_amplitudes=1 << 12)
    for gpu in (on_gpu, reference_on_host):
        assert gpu["amplitudes_compared"] == cpu["amplitudes_compared"]
        for key, value in cpu.items():
            assert gpu[key] == pytest.approx(value, rel=1e-9, abs=1e-33), key


@pytest.mark.gpu
@requires_gpu
def test_gpu_compare_backends():
    report = compare_backends(brickwork(16, 5, 4, seed=1), ["cublas", "dd"], device="gpu", progress=False)
    assert "gpu" in report["device"] and report["reference"]["held_on"] == "cpu"
    for row in report["rows"]:
        assert row["rel_error_re_amp0"] < 1e-12 and row["infidelity"] < 1e-26
