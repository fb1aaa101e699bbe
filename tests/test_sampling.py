"""sample_counts / sample_outcomes: chi-square against exact marginals from qiskit's Statevector,
every outcome against an independent Python-integer inverse CDF of the same fixed-point weights,
independence of the chunk and block sizes, Qiskit's bit order, shot order, seeding, input checks,
and the GPU kernels' outcomes equal to the CPU's for a seed."""
import bisect
import itertools

import numpy as np
import pytest
from qiskit.quantum_info import Statevector
from scipy.stats import chisquare

from gemm_backend.arrays import cupy_module, gpu_available
from qsim import SimulationError, sampling
from qsim.sampling import sample_counts, sample_outcomes, scaled_targets

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")

SHOTS = 100_000
P_VALUE = 0.001


def random_state(n_qubits, seed):
    rng = np.random.default_rng(seed)
    psi = rng.standard_normal(1 << n_qubits) + 1j * rng.standard_normal(1 << n_qubits)
    # Spread the weights out so some outcomes are rare and some frequent.
    psi *= rng.exponential(size=psi.size) ** 2
    return psi / np.linalg.norm(psi)


def assert_matches_marginal(counts, psi, qubits, shots=SHOTS):
    """Chi-square test of counts against Qiskit's marginal (qargs[0] is the rightmost bit)."""
    exact = Statevector(psi).probabilities_dict(qargs=list(qubits))
    assert set(counts) <= set(exact) and sum(counts.values()) == shots
    keys = sorted(exact)
    observed = np.array([counts.get(k, 0) for k in keys])
    expected = np.array([exact[k] for k in keys]) * shots
    assert chisquare(observed, expected).pvalue > P_VALUE


@pytest.mark.parametrize("qubits", [[5, 0, 3], [0, 1, 2, 3, 4, 5, 6, 7], [7], [2, 6, 1, 4]])
def test_counts_follow_the_marginal_distribution(qubits):
    psi = random_state(8, seed=len(qubits))
    assert_matches_marginal(sample_counts(psi, qubits, SHOTS, seed=11), psi, qubits)


@pytest.mark.parametrize("chunk_qubits", [1, 3, 5])
def test_chunked_sampling_follows_the_marginal(monkeypatch, chunk_qubits):
    monkeypatch.setattr(sampling, "CHUNK_QUBITS", chunk_qubits)
    psi = random_state(7, seed=3)
    qubits = [6, 0, 4, 2]  # measured qubits both inside and above a chunk
    assert_matches_marginal(sample_counts(psi, qubits, SHOTS, seed=5), psi, qubits)


def test_first_listed_qubit_is_the_rightmost_character():
    psi = np.zeros(8, complex)
    psi[0b110] = 1.0  # qubits 1 and 2 are 1, qubit 0 is 0
    assert sample_counts(psi, [2, 0], 10, seed=0) == {"01": 10}
    assert sample_counts(psi, [0, 1, 2], 10, seed=0) == {"110": 10}
    assert sample_counts(psi, [1], 10, seed=0) == {"1": 10}


def test_zero_probability_outcomes_never_appear():
    psi = np.zeros(16, complex)
    psi[[0b0000, 0b1111]] = [0.6, 0.8j]
    counts = sample_counts(psi, [0, 1, 2, 3], 20_000, seed=3)
    assert set(counts) == {"0000", "1111"}
    assert abs(counts["1111"] / 20_000 - 0.64) < 0.02


def test_shot_order_is_shuffled_across_chunks(monkeypatch):
    monkeypatch.setattr(sampling, "CHUNK_QUBITS", 2)
    psi = np.zeros(16, complex)
    psi[[0b0000, 0b1000]] = 2**-0.5  # qubit 3 decides the chunk
    outcomes = sample_outcomes(psi, [3], 2000, seed=9)
    assert outcomes.dtype == np.int64 and outcomes.shape == (2000,)
    assert 0.4 < outcomes[:200].mean() < 0.6 and 0.4 < outcomes[-200:].mean() < 0.6


def test_counts_are_the_histogram_of_the_outcomes():
    psi = random_state(5, seed=8)
    outcomes = sample_outcomes(psi, [4, 1], 5000, seed=21)
    values, numbers = np.unique(outcomes, return_counts=True)
    expected = {format(int(v), "02b"): int(n) for v, n in zip(values, numbers)}
    assert sample_counts(psi, [4, 1], 5000, seed=21) == expected


def test_seed_makes_samples_reproducible():
    psi = random_state(6, seed=2)
    first = sample_outcomes(psi, [0, 3, 5], 1000, seed=42)
    assert np.array_equal(first, sample_outcomes(psi, [0, 3, 5], 1000, seed=42))
    assert not np.array_equal(first, sample_outcomes(psi, [0, 3, 5], 1000, seed=43))


def test_unnormalised_state_is_normalised():
    psi = random_state(4, seed=6)
    assert_matches_marginal(sample_counts(psi * (1 + 1e-6), [1, 3], SHOTS, seed=1), psi, [1, 3])


@pytest.mark.parametrize("state, qubits, shots, seed, message", [
    (np.ones(8, complex) / 8**0.5, [0], 0, 1, "shots must be >= 1"),
    (np.ones(8, complex) / 8**0.5, [0], 2.5, 1, "shots must be an integer"),
    (np.ones(8, complex) / 8**0.5, [0], True, 1, "shots must be an integer"),
    (np.ones(8, complex) / 8**0.5, [0], 10, None, "seed must be an integer"),
    (np.ones(8, complex) / 8**0.5, [0], 10, -1, "seed must be >= 0"),
    (np.ones(8, complex) / 8**0.5, [1, 1], 10, 1, "repeat a qubit"),
    (np.ones(8, complex) / 8**0.5, [3], 10, 1, r"outside the state's 0..2"),
    (np.ones(8, complex) / 8**0.5, [], 10, 1, "at least one qubit"),
    (np.ones(8, complex) / 8**0.5, 3, 10, 1, "sequence of qubit indices"),
    (np.ones((2, 4), complex), [0], 10, 1, "flat"),
    (np.ones(6, complex), [0], 10, 1, "2\\^N amplitudes"),
    (np.ones(8), [0], 10, 1, "complex amplitudes"),
    (np.zeros(8, complex), [0], 10, 1, "squared norm"),
    (np.full(8, np.nan, complex), [0], 10, 1, "squared norm"),
])
def test_bad_input_is_rejected(state, qubits, shots, seed, message):
    with pytest.raises(SimulationError, match=message):
        sample_counts(state, qubits, shots, seed)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("chunk_qubits", [24, 3])
def test_gpu_state_gives_the_cpu_samples(monkeypatch, chunk_qubits):
    monkeypatch.setattr(sampling, "CHUNK_QUBITS", chunk_qubits)
    cp = cupy_module()
    psi = random_state(9, seed=4)
    qubits = [8, 0, 5, 2]
    on_gpu = sample_counts(cp.asarray(psi), qubits, SHOTS, seed=13)
    assert_matches_marginal(on_gpu, psi, qubits)
    # Same host random stream; only the last bits of a cumulative sum can differ between devices.
    assert on_gpu == sample_counts(psi, qubits, SHOTS, seed=13)


def reference_outcomes(psi, qubits, shots, seed):
    """Python integers: weight rint((v 2^30)^2) per part (round() ties to even, as rint), the
    running sum, target (int(u 2^53) * total) >> 53, the first index whose running sum exceeds it."""
    floats = psi.view(np.float64).tolist()
    parts = [round((v * 2.0**30) * (v * 2.0**30)) for v in floats]
    running = list(itertools.accumulate(parts[0::2][i] + parts[1::2][i] for i in range(psi.size)))
    uniforms = np.random.default_rng(seed).random(shots)
    outcomes = []
    for u in uniforms.tolist():
        index = bisect.bisect_right(running, (int(u * 2.0**53) * running[-1]) >> 53)
        outcomes.append(sum(((index >> q) & 1) << j for j, q in enumerate(qubits)))
    return outcomes


@pytest.mark.parametrize("n_qubits, qubits", [(1, [0]), (5, [4, 1]), (9, [0, 8, 3]), (10, [9, 0, 5, 2, 7])])
def test_outcomes_equal_the_exact_integer_inverse_cdf(n_qubits, qubits):
    psi = random_state(n_qubits, seed=n_qubits)
    psi[3 % psi.size] = 0  # a zero-weight amplitude is never drawn
    assert sample_outcomes(psi, qubits, 3000, seed=17).tolist() == reference_outcomes(psi, qubits, 3000, 17)


@pytest.mark.parametrize("chunk_qubits, block_qubits", [(1, 6), (3, 2), (8, 6), (24, 1), (24, 9)])
def test_outcomes_do_not_depend_on_the_chunk_or_block_size(monkeypatch, chunk_qubits, block_qubits):
    psi = random_state(9, seed=2)
    qubits = [8, 0, 5, 2]
    whole = sample_outcomes(psi, qubits, 20_000, seed=3)
    monkeypatch.setattr(sampling, "CHUNK_QUBITS", chunk_qubits)
    monkeypatch.setattr(sampling, "SAMPLE_BLOCK_QUBITS", block_qubits)
    monkeypatch.setattr(sampling, "SHOT_BATCH", 777)
    assert np.array_equal(sample_outcomes(psi, qubits, 20_000, seed=3), whole)


def test_scaled_targets_equal_python_integers():
    rng = np.random.default_rng(4)
    uniforms = np.concatenate([rng.random(2000), [0.0, 0.5, 1 - 2.0**-53]])
    for total in [1, 3, 2**40 + 7, 4 << 60, 2**63 - 1]:
        expected = [(int(u * 2.0**53) * total) >> 53 for u in uniforms.tolist()]
        assert scaled_targets(uniforms, total).tolist() == expected


def test_a_state_above_squared_norm_four_is_refused():
    with pytest.raises(SimulationError, match="squared norm"):
        sample_counts(np.full(8, 0.75, complex), [0], 10, seed=1)  # squared norm 4.5
    with pytest.raises(SimulationError, match="squared norm"):
        sample_counts(np.array([3.0, 0, 0, 0], complex), [0], 10, seed=1)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n_qubits", [1, 4, 6, 11, 16])
def test_gpu_outcomes_equal_the_cpu_outcomes(n_qubits):
    cp = cupy_module()
    psi = random_state(n_qubits, seed=n_qubits)
    psi[:: 7] = 0
    qubits = sorted({0, n_qubits - 1, n_qubits // 2}, reverse=True)
    expected = sample_outcomes(psi, qubits, 200_000, seed=5)
    assert np.array_equal(sample_outcomes(cp.asarray(psi), qubits, 200_000, seed=5), expected)


@pytest.mark.gpu
@requires_gpu
def test_gpu_refuses_what_the_cpu_refuses():
    cp = cupy_module()
    for psi in (np.full(8, 0.75, complex), np.array([3.0, 0, 0, 0], complex), np.zeros(64, complex),
                np.full(128, np.nan, complex)):
        with pytest.raises(SimulationError, match="squared norm"):
            sample_counts(cp.asarray(psi), [0], 10, seed=1)


@pytest.mark.gpu
@requires_gpu
def test_pinned_uniforms_are_the_generators_numbers():
    """The GPU path's uniforms, written into page-locked memory, are rng.random(shots) bit for bit."""
    from qsim import sampling_gpu

    pinned = sampling_gpu.host_uniforms(np.random.default_rng(11), 100_003)
    assert np.array_equal(pinned.view(np.uint64), np.random.default_rng(11).random(100_003).view(np.uint64))
