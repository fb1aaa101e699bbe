"""qsim.gathered_layout: gates through a gathered copy in a permuted qubit layout, checked
against index arithmetic written out bit by bit and dense Kronecker operators (tests/dense.py);
the CPU engine's runs through it against the same references."""
import numpy as np
import pytest

import gemm_backend
from circuits import Circuit, Gate, Measure
from qsim import Simulator
from qsim.apply import plan_gate
from qsim.gathered_layout import (apply_gathered, copy_to_layout, gathered_layout, in_standard_layout,
                                  standard_layout)
from qsim.run_loop import GATHERED

from .dense import dense_operator, dense_state
from .helpers import crandn


def _unitary(rng, k: int) -> np.ndarray:
    q, _ = np.linalg.qr(crandn(rng, k, k))
    return q


def _permuted_by_loops(state, source_layout, target_layout) -> np.ndarray:
    """The copy written out index by index: bit b of a source index holds qubit source_layout[b]."""
    n_qubits = len(source_layout)
    out = np.empty_like(state)
    for index in range(state.size):
        qubit_bits = {source_layout[b]: (index >> b) & 1 for b in range(n_qubits)}
        out[sum(qubit_bits[target_layout[b]] << b for b in range(n_qubits))] = state[index]
    return out


def test_gathered_layout_puts_the_targets_lowest_and_keeps_the_others_in_order():
    assert gathered_layout((0, 1, 2, 3, 4), (1, 3)) == (1, 3, 0, 2, 4)
    assert gathered_layout((4, 2, 0, 1, 3), (0, 3)) == (0, 3, 4, 2, 1)
    assert standard_layout(3) == (0, 1, 2)


@pytest.mark.parametrize("source_layout,target_layout", [
    ((0, 1, 2, 3, 4), (2, 4, 0, 1, 3)),
    ((3, 0, 4, 1, 2), (0, 1, 2, 3, 4)),
    ((1, 0, 2, 4, 3), (4, 3, 2, 1, 0)),
])
def test_copy_to_layout_moves_every_amplitude_to_its_index(source_layout, target_layout):
    rng = np.random.default_rng(1)
    state = crandn(rng, 32)
    target = np.empty_like(state)
    copy_to_layout(state, source_layout, target, target_layout)
    assert np.array_equal(target, _permuted_by_loops(state, source_layout, target_layout))


def test_a_sequence_of_gathered_gates_matches_dense_operators():
    rng = np.random.default_rng(2)
    n_qubits = 7
    state = crandn(rng, 1 << n_qubits)
    state /= np.linalg.norm(state)
    reference = state.copy()
    buffer, spare, layout = state.copy(), np.empty_like(state), standard_layout(n_qubits)
    # scattered, unsorted, already lowest in the permuted layout, contiguous but high, one qubit
    for targets in [(0, 3, 6), (5, 1), (1, 5), (2, 3, 4, 5), (6,), (6, 0, 2, 4, 1)]:
        u = _unitary(rng, 1 << len(targets))
        plan = plan_gate(n_qubits, targets, u)
        buffer, spare, layout = apply_gathered(lambda x, out: np.matmul(plan.matrix, x, out=out), plan,
                                               buffer, spare, layout)
        reference = dense_operator(n_qubits, targets, u) @ reference
    assert layout != standard_layout(n_qubits), "the sequence must end in a permuted layout"
    buffer, spare = in_standard_layout(buffer, spare, layout)
    assert np.max(np.abs(buffer - reference)) < 1e-12


def test_a_gate_already_on_the_lowest_bits_is_not_gathered():
    rng = np.random.default_rng(3)
    state, spare = crandn(rng, 16), np.zeros(16, complex)
    layout = (2, 0, 1, 3)
    plan = plan_gate(4, (0, 2), np.eye(4, dtype=complex))  # sorted targets (0, 2): not bits 0, 1 here
    calls = []

    def product(x, out):
        calls.append(x)
        out[...] = x

    new_state, new_spare, new_layout = apply_gathered(product, plan, state.copy(), spare, layout)
    assert new_layout == (0, 2, 1, 3)
    plan = plan_gate(4, (0, 2), np.eye(4, dtype=complex))
    again_state, again_spare, again_layout = apply_gathered(product, plan, new_state, new_spare, new_layout)
    assert again_layout == new_layout and again_state is new_spare and again_spare is new_state
    assert np.shares_memory(calls[-1], new_state)


def _scattered_circuit(rng, n_qubits: int) -> Circuit:
    target_sets = [(0, 4, 7), (2, 5), (7, 1, 3, 6), (3,), (0, 1, 2), (6, 7), (1, 4, 5, 7, 0)]
    return Circuit(n_qubits, [Gate(t, _unitary(rng, 1 << len(t))) for t in target_sets])


def test_the_cpu_engine_runs_cublas_gates_gathered_and_returns_the_standard_layout():
    rng = np.random.default_rng(4)
    circuit = _scattered_circuit(rng, 8)
    result = Simulator("cublas", device="cpu", progress=False).run(circuit)
    assert {info["layout"] for info in result.gate_info} == {GATHERED}
    assert np.max(np.abs(result.state - dense_state(circuit))) < 1e-12


def test_without_a_spare_buffer_the_engine_takes_the_transposed_route():
    rng = np.random.default_rng(5)
    circuit = _scattered_circuit(rng, 8)
    result = Simulator("cublas", device="cpu", progress=False, out_of_place=False).run(circuit)
    assert GATHERED not in {info["layout"] for info in result.gate_info}
    assert np.max(np.abs(result.state - dense_state(circuit))) < 1e-12


def test_a_measurement_sees_the_state_in_the_standard_layout():
    # Qubit 3 is |1> after the X; gathered gates before the measurement move it off bit 3, so a
    # measurement reading a permuted buffer would find it 0 on some seeds.
    rng = np.random.default_rng(6)
    x_gate = np.array([[0, 1], [1, 0]], dtype=complex)
    gates = [Gate((3,), x_gate), Gate((0, 2), _unitary(rng, 4)), Gate((1, 4), _unitary(rng, 4)),
             Measure((3,), (0,)), Gate((0, 4), _unitary(rng, 4))]
    circuit = Circuit(5, gates, n_clbits=1)
    simulator = Simulator("cublas", device="cpu", progress=False)
    # qubit 3 is 1 with certainty, so the measurement leaves the state as the gates alone make it
    reference = dense_state(Circuit(5, [g for g in gates if isinstance(g, Gate)]))
    for seed in range(8):
        result = simulator.run(circuit, seed=seed)
        assert result.trajectory["clbits_hex"] == "0x1"
        assert np.max(np.abs(result.state - reference)) < 1e-12


def test_only_the_native_backend_on_the_cpu_gathers():
    assert gemm_backend.get("cublas").gathers_layout(on_gpu=False)
    assert not gemm_backend.get("cublas").gathers_layout(on_gpu=True)
    assert not gemm_backend.get("int8-auto").gathers_layout(on_gpu=False)
