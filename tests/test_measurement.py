"""qsim.measurement: exact outcome weights (against math.fsum of the same squares and dense
probabilities), independence of the chunking, projection and reset against dense projectors,
and the exact inverse-CDF draw."""
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from gemm_backend.arrays import cupy_module, gpu_available, to_host
from qsim import SimulationError, measurement
from qsim.measurement import (WEIGHT_UNIT_BITS, draw_outcome, flip_to_zero, measure, measurement_workspace_bytes,
                              outcome_weights, project)

from .dense import PAULI_X, dense_operator, projector
from .helpers import crandn


def random_state(rng, n_qubits):
    state = crandn(rng, 1 << n_qubits)
    return state / np.linalg.norm(state)


def dense_probability(state, qubits, outcome):
    kept = projector(int(state.size).bit_length() - 1, qubits, outcome) @ state
    return float(np.vdot(kept, kept).real)


class FixedUniforms:
    """Stands in for a numpy Generator: random() returns the given values in turn."""

    def __init__(self, *values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


@pytest.mark.parametrize("qubits", [(0,), (4,), (8,), (3, 0), (8, 2, 5), (1, 7, 0, 6)])
def test_weights_are_exact_sums_of_the_squares(rng, qubits):
    state = random_state(rng, 9)
    weights = outcome_weights(state, qubits)
    floats = state.view(np.float64)
    index = np.repeat(np.arange(state.size), 2)
    for outcome, weight in enumerate(weights):
        keep = np.ones(index.size, dtype=bool)
        for j, q in enumerate(qubits):
            keep &= ((index >> q) & 1) == ((outcome >> j) & 1)
        exact = math.fsum(v * v for v in floats[keep])
        # Only each fraction's rounding to 2^-88 separates the weight from the exact sum.
        assert abs(math.ldexp(weight, -WEIGHT_UNIT_BITS) - exact) <= keep.sum() * 2.0**-89 + exact * 2**-52
        assert math.ldexp(weight, -WEIGHT_UNIT_BITS) == pytest.approx(dense_probability(state, qubits, outcome),
                                                                      rel=1e-14)


@pytest.mark.parametrize("qubits", [(0,), (5, 2), (8, 2, 5), (1, 7, 0, 6), tuple(range(9))[::-1]])
def test_bins_in_ascending_qubit_order_give_the_weights(rng, qubits):
    """The GPU path's host side: accumulators indexed by the outcome of the ascending qubits (as the
    kernel's bins, built here with numpy) become the weights in the caller's qubit order."""
    state = random_state(rng, 9)
    terms = np.square(state.view(np.float64) * measurement.SQUARE_PRESCALE)
    whole = np.trunc(terms)
    fraction = np.rint((terms - whole) * 2.0**measurement.FRACTION_BITS)
    index = np.repeat(np.arange(state.size), 2)
    ascending = sorted(qubits)
    bins = sum(((index >> q) & 1) << i for i, q in enumerate(ascending))
    whole_sums, fraction_sums = np.zeros((2, 1 << len(qubits)), dtype=np.int64)
    np.add.at(whole_sums, bins, whole.astype(np.int64))  # integer sums, as the kernel's
    np.add.at(fraction_sums, bins, fraction.astype(np.int64))
    assert measurement._host_weights(whole_sums, fraction_sums, qubits, ascending, []) == outcome_weights(state, qubits)


@pytest.mark.parametrize("chunk_qubits", [1, 3, 6, 9])
@pytest.mark.parametrize("row_bits", [1, 3, 10])
def test_weights_do_not_depend_on_the_chunking(rng, monkeypatch, chunk_qubits, row_bits):
    state = random_state(rng, 9)
    qubits = (7, 1, 4, 8)
    whole = outcome_weights(state, qubits)
    monkeypatch.setattr(measurement, "REDUCTION_CHUNK_QUBITS", chunk_qubits)
    monkeypatch.setattr(measurement, "ROW_BITS", row_bits)
    assert outcome_weights(state, qubits) == whole  # integers: equal, not close


def test_weights_follow_the_order_of_the_qubits(rng):
    state = random_state(rng, 6)
    forward = outcome_weights(state, (1, 4))
    backward = outcome_weights(state, (4, 1))
    assert forward == [backward[0], backward[2], backward[1], backward[3]]


def test_project_equals_the_normalised_dense_projection(rng):
    state = random_state(rng, 7)
    qubits, outcome = (5, 0, 3), 0b110
    weights = outcome_weights(state, qubits)
    expected = projector(7, qubits, outcome) @ state
    expected /= np.linalg.norm(expected)
    projected = state.copy()
    project(projected, qubits, outcome, weights[outcome])
    assert np.abs(projected - expected).max() < 1e-15
    assert np.count_nonzero(projected) == state.size // 8
    assert abs(np.linalg.norm(projected) - 1) < 1e-15


def test_flip_to_zero_resets_the_measured_qubits(rng):
    state = random_state(rng, 5)
    qubits, outcome = (4, 1), 0b01  # qubit 4 read 1, qubit 1 read 0
    weights = outcome_weights(state, qubits)
    project(state, qubits, outcome, weights[outcome])
    expected = dense_operator(5, (4,), PAULI_X) @ state
    flip_to_zero(state, qubits, outcome)
    assert np.array_equal(state, expected)
    assert np.abs(projector(5, qubits, 0) @ state - state).max() == 0.0


def test_draw_follows_the_weights_and_never_picks_zero_weights(rng):
    weights = [0, 3 << 80, 0, 1 << 80, 4 << 80, 0]
    draws = [draw_outcome(weights, rng) for _ in range(40_000)]
    counts = np.bincount(draws, minlength=len(weights))
    assert counts[[0, 2, 5]].sum() == 0
    assert chisquare(counts[[1, 3, 4]], np.array([3, 1, 4]) / 8 * len(draws)).pvalue > 1e-4
    # The ends of [0, 1): the first and the last outcome of nonzero weight.
    assert draw_outcome(weights, FixedUniforms(0.0)) == 1
    assert draw_outcome(weights, FixedUniforms(1 - 2.0**-53)) == 4
    # Boundaries: u = 3/8 exactly starts outcome 3.
    assert draw_outcome(weights, FixedUniforms(0.375 - 2.0**-53)) == 1
    assert draw_outcome(weights, FixedUniforms(0.375)) == 3
    with pytest.raises(SimulationError, match="state is zero"):
        draw_outcome([0, 0], rng)


def test_measure_in_groups_gives_the_joint_outcome_probability(rng, monkeypatch):
    monkeypatch.setattr(measurement, "MAX_JOINT_QUBITS", 2)
    qubits = (6, 0, 3, 5, 2)
    for seed in range(5):
        state = random_state(rng, 7)
        before = state.copy()
        outcome, probability = measure(state, qubits, np.random.default_rng(seed))
        assert probability == pytest.approx(dense_probability(before, qubits, outcome), rel=1e-13)
        expected = projector(7, qubits, outcome) @ before
        assert np.abs(state - expected / np.linalg.norm(expected)).max() < 1e-14


def test_a_state_far_from_unit_norm_is_refused(rng):
    state = 3 * random_state(rng, 4)
    with pytest.raises(SimulationError, match="squared norm"):
        outcome_weights(state, (0,))


def test_workspace_grows_with_the_state_up_to_the_chunk():
    assert measurement_workspace_bytes(4, on_gpu=False) == 3 * 8 * 2 * 16
    cap = measurement_workspace_bytes(measurement.REDUCTION_CHUNK_QUBITS, on_gpu=False)
    assert measurement_workspace_bytes(32, on_gpu=False) == cap


def test_gpu_workspace_is_the_bins_of_twelve_qubits_and_a_flag():
    """The GPU path allocates 2^(k+1) int64 bins and one flag, k <= MAX_JOINT_QUBITS."""
    assert measurement_workspace_bytes(3, on_gpu=True) == 8 * (2 * 8 + 1)
    assert measurement_workspace_bytes(30, on_gpu=True) == 8 * (2 * 4096 + 1)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("chunk_qubits", [5, 22])
def test_gpu_weights_projection_and_reset_are_bit_identical_to_cpu(rng, monkeypatch, chunk_qubits):
    monkeypatch.setattr(measurement, "REDUCTION_CHUNK_QUBITS", chunk_qubits)
    cp = cupy_module()
    for qubits in [(0,), (11,), (3, 10, 6), (7, 1, 9, 0, 11)]:
        host = random_state(rng, 12)
        device = cp.asarray(host)
        weights = outcome_weights(host, qubits)
        assert outcome_weights(device, qubits) == weights
        outcome = int(np.argmax(weights))
        for state in (host, device):
            project(state, qubits, outcome, weights[outcome])
            flip_to_zero(state, qubits, outcome)
        assert np.array_equal(to_host(device).view(np.uint64), host.view(np.uint64))
        host = random_state(rng, 12)
        device = cp.asarray(host)
        seeded = [measure(s, qubits, np.random.default_rng(3)) for s in (host, device)]
        assert seeded[0] == seeded[1]
        assert np.array_equal(to_host(device).view(np.uint64), host.view(np.uint64))
