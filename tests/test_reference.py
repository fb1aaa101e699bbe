"""The double-double reference simulation: against exact rational arithmetic, the float64
engine, an independent dense simulation and the norm the float64 gate matrices allow."""
import math
from fractions import Fraction

import numpy as np
import pytest

from circuits import Circuit, CircuitError, Gate, brickwork, haar_unitary
from gemm_backend.arrays import gpu_available
from gemm_backend.doubledouble import dd_add, dd_mul, dd_sum, matmul_dd
from qsim import SimulationError, Simulator
from qsim.device import Device
from qsim.reference import reference_state

from .dense import dense_state

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")


def dd_norm_squared(hi, lo) -> Fraction:
    """sum |hi + lo|^2 computed in double-double; its dd result as an exact Fraction."""
    re = dd_mul(hi.real, lo.real, hi.real, lo.real)
    im = dd_mul(hi.imag, lo.imag, hi.imag, lo.imag)
    total_hi, total_lo = dd_sum(*dd_add(*re, *im))
    return Fraction(float(total_hi)) + Fraction(float(total_lo))


def apply_on_targets(state, n_qubits: int, targets, matrix):
    """matrix (index bit j = qubit targets[j]) applied to a flat state through a tensor contraction
    (tensor axis a is qubit N-1-a), independently of the engine's views."""
    axes = [n_qubits - 1 - t for t in reversed(targets)]  # most significant target first
    tensor = np.moveaxis(state.reshape((2,) * n_qubits), axes, range(len(targets)))
    moved_shape = tensor.shape
    product = (matrix @ tensor.reshape(len(matrix), -1)).reshape(moved_shape)
    return np.moveaxis(product, range(len(targets)), axes).reshape(-1)


def exact_circuit_state(circuit) -> list:
    """The circuit run on |0...0> in exact rational arithmetic: a list of (re, im) Fractions."""
    size = 1 << circuit.n_qubits
    state = [(Fraction(0), Fraction(0)) for _ in range(size)]
    state[0] = (Fraction(1), Fraction(0))
    for gate in circuit.gates:
        u = [[(Fraction(float(x.real)), Fraction(float(x.imag))) for x in row] for row in gate.matrix]
        mask = sum(1 << t for t in gate.targets)
        new = [None] * size
        for index in range(size):
            row = sum(((index >> t) & 1) << j for j, t in enumerate(gate.targets))
            base = index & ~mask
            re = im = Fraction(0)
            for column in range(len(u)):
                source = base | sum(((column >> j) & 1) << t for j, t in enumerate(gate.targets))
                (ur, ui), (xr, xi) = u[row][column], state[source]
                re += ur * xr - ui * xi
                im += ur * xi + ui * xr
            new[index] = (re, im)
        state = new
    return state


def relative_error_vs_exact(hi, lo, exact) -> float:
    error = norm = Fraction(0)
    for i, (re, im) in enumerate(exact):
        dr = Fraction(float(hi[i].real)) + Fraction(float(lo[i].real)) - re
        di = Fraction(float(hi[i].imag)) + Fraction(float(lo[i].imag)) - im
        error += dr * dr + di * di
        norm += re * re + im * im
    return math.sqrt(float(error / norm))


def mixed_target_circuit(n_qubits: int, seed: int) -> Circuit:
    """Unsorted and non-contiguous targets, plus contiguous ones and a single-qubit gate."""
    rng = np.random.default_rng(seed)
    targets = [(2, 0), (4, 1, 3), (0,), (1, 2), (3, 0, 4), (n_qubits - 1, 0), (4, 3, 2, 1)]
    return Circuit(n_qubits, [Gate(t, haar_unitary(1 << len(t), rng)) for t in targets])


def test_reference_equals_exact_rational_simulation():
    circuit = mixed_target_circuit(5, seed=11)
    hi, lo = reference_state(circuit, progress=False)
    assert hi.dtype == np.complex128 and lo.shape == (32,)
    assert relative_error_vs_exact(hi, lo, exact_circuit_state(circuit)) <= 1e-30


def test_non_contiguous_and_unsorted_targets_agree_with_float64_engine():
    circuit = mixed_target_circuit(9, seed=3)
    hi, lo = reference_state(circuit, device="cpu", progress=False)
    engine = Simulator(device="cpu", progress=False).run(circuit).state
    assert np.abs(hi - engine).max() < 1e-13
    assert np.abs(hi - dense_state(circuit)).max() < 1e-13
    # Chunked copies of the transposed state (the memory-bounded path) give the same bits.
    chunked = reference_state(circuit, device=Device("cpu"), progress=False, workspace_bytes=32 * 8)
    assert np.array_equal(chunked[0], hi) and np.array_equal(chunked[1], lo)


@pytest.mark.parametrize("n_qubits, gate_size, depth", [(12, 3, 6), (11, 5, 4), (12, 1, 3)])
def test_brickwork_reference_agrees_with_float64_run(n_qubits, gate_size, depth):
    circuit = brickwork(n_qubits, gate_size, depth, seed=gate_size)
    hi, lo = reference_state(circuit, progress=False)
    float64 = Simulator("cublas", device="cpu", progress=False).run(circuit).state
    assert np.abs(hi - float64).max() < 1e-13
    assert np.abs(lo).max() < 1e-15 * np.abs(hi).max()  # lo really is the low part


def test_brickwork_reference_keeps_the_norm_the_gates_allow():
    """Haar gates from a float64 QR are unitary only to ~1e-16, so the exact evolution moves the
    norm by sum_g x_g^H (U_g^H U_g - I) x_g ~ 1e-15. The dd norm must match that to 1e-28: it
    stays at 1 to 1e-28 apart from the gates' own (known, computed) non-unitarity."""
    circuit = brickwork(10, 3, 6, seed=7)
    hi, lo = reference_state(circuit, progress=False)
    predicted = Fraction(1)
    state = np.zeros(1 << circuit.n_qubits, complex)
    state[0] = 1.0
    for gate in circuit.gates:
        gram_hi, gram_lo = matmul_dd(gate.matrix.conj().T, gate.matrix)
        deviation = (gram_hi - np.eye(len(gate.matrix))) + gram_lo  # U^H U - I, exact to ~1e-32
        shift = np.vdot(state, apply_on_targets(state, circuit.n_qubits, gate.targets, deviation))
        predicted += Fraction(float(shift.real))
        state = apply_on_targets(state, circuit.n_qubits, gate.targets, gate.matrix)
    assert np.abs(state - hi).max() < 1e-13
    norm_squared = dd_norm_squared(hi, lo)
    assert 1e-17 < abs(float(predicted - 1)) < 1e-13  # the drift is real, far above 1e-28
    assert abs(float(norm_squared - predicted)) <= 1e-28


def test_initial_state_is_used_and_checked(rng):
    psi = rng.standard_normal(64) + 1j * rng.standard_normal(64)
    psi /= np.linalg.norm(psi)
    circuit = brickwork(6, 2, 3, seed=2)
    hi, lo = reference_state(circuit, progress=False, initial_state=psi)
    assert np.abs(hi - dense_state(circuit, psi)).max() < 1e-13
    with pytest.raises(SimulationError, match="64"):
        reference_state(circuit, initial_state=psi[:32])
    with pytest.raises(SimulationError, match="unit norm"):
        reference_state(circuit, initial_state=3 * psi)


def test_too_large_reference_is_refused_before_allocating():
    circuit = Circuit(40, [Gate((0, 1), np.eye(4))])
    with pytest.raises(SimulationError, match=r"40 qubits needs 32768\.00 GiB on the cpu"):
        reference_state(circuit, device="cpu", progress=False)


def test_bad_arguments():
    with pytest.raises(CircuitError, match="Circuit"):
        reference_state([Gate((0,), np.eye(2))])
    with pytest.raises(SimulationError, match="unknown device"):
        reference_state(brickwork(2, 1, 1), device="tpu")
    with pytest.raises(SimulationError, match="workspace_bytes"):
        reference_state(brickwork(2, 1, 1), workspace_bytes=0)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("gate_size", [3, 4, 5])
def test_gpu_reference_equals_cpu_reference_n18(gate_size):
    circuit = brickwork(18, gate_size, 4, seed=gate_size)
    cpu_hi, cpu_lo = reference_state(circuit, device="cpu", progress=False)
    gpu_hi, gpu_lo = reference_state(circuit, device="gpu", progress=False)
    difference = (gpu_hi.get() - cpu_hi) + (gpu_lo.get() - cpu_lo)
    assert np.abs(difference).max() <= 1e-28 * np.abs(cpu_hi).max()


@pytest.mark.gpu
@requires_gpu
def test_gpu_reference_non_contiguous_chunks_equal_cpu():
    rng = np.random.default_rng(5)
    circuit = Circuit(18, [Gate((0, 9, 4), haar_unitary(8, rng)), Gate((17, 3), haar_unitary(4, rng)),
                           Gate((12, 11, 13, 10, 14, 15), haar_unitary(64, rng)), Gate((5, 6), haar_unitary(4, rng))])
    cpu_hi, cpu_lo = reference_state(circuit, device="cpu", progress=False)
    gpu_hi, gpu_lo = reference_state(circuit, device="gpu", progress=False, workspace_bytes=1 << 20)
    difference = (gpu_hi.get() - cpu_hi) + (gpu_lo.get() - cpu_lo)
    assert np.abs(difference).max() <= 1e-28 * np.abs(cpu_hi).max()


@pytest.mark.gpu
@requires_gpu
def test_gpu_too_large_reference_is_refused():
    with pytest.raises(SimulationError, match="GiB on the gpu"):
        reference_state(Circuit(36, [Gate((0,), np.eye(2))]), device="gpu", progress=False)
