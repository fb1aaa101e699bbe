"""qsim.measurement_gpu against the CPU path of qsim.measurement (the specification): the same
integer weights, the same collapsed and reset states bit for bit, and the same seeded outcomes,
on layouts where the kernel's threads loop over unmeasured qubits, where a block holds fewer
threads than the state has, and with measured qubits low, high and interleaved; that package
data ships the kernels. GPU tests skip without a GPU."""
import fnmatch
import tomllib
from pathlib import Path

import numpy as np
import pytest

from gemm_backend.arrays import cupy_module, to_host
from qsim import SimulationError, measurement_gpu
from qsim.kernel_modules import KERNEL_DIR
from qsim.measurement import collapse, measure, outcome_weights

from .helpers import crandn

QUBIT_SETS = [(0,), (1,), (7, 2), (11,), (3, 10, 6), (0, 1, 2, 3, 4), (7, 1, 9, 0, 11),
              (11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), (5, 6, 7, 8, 9, 10, 11, 0, 2, 4, 1, 3)]


def random_state(rng, n_qubits):
    state = crandn(rng, 1 << n_qubits)
    return state / np.linalg.norm(state)


def test_package_data_ships_the_qsim_kernels():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    patterns = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]["qsim"]
    names = sorted("kernels/" + p.name for p in KERNEL_DIR.iterdir() if p.suffix in (".cu", ".cuh"))
    assert {"kernels/measurement.cu", "kernels/sampling.cu"} <= set(names)
    assert [n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in patterns)] == []


@pytest.mark.gpu
@pytest.mark.parametrize("thread_qubits", [22, 9, 5])
@pytest.mark.parametrize("qubits", QUBIT_SETS)
def test_gpu_weights_equal_the_cpu_weights(rng, monkeypatch, thread_qubits, qubits):
    """thread_qubits below N makes each thread loop over the highest unmeasured qubits; 5 gives
    blocks with fewer live threads than THREADS."""
    monkeypatch.setattr(measurement_gpu, "THREAD_QUBITS", max(thread_qubits, len(qubits)))
    cp = cupy_module()
    for n_qubits in (12, 14):
        host = random_state(rng, n_qubits)
        assert outcome_weights(cp.asarray(host), qubits) == outcome_weights(host, qubits)


@pytest.mark.gpu
@pytest.mark.parametrize("n_qubits", [1, 3, 6, 9])
def test_gpu_weights_of_small_states(rng, n_qubits):
    cp = cupy_module()
    host = random_state(rng, n_qubits)
    for qubits in [(0,), tuple(range(n_qubits))[::-1]]:
        assert outcome_weights(cp.asarray(host), qubits) == outcome_weights(host, qubits)


@pytest.mark.gpu
@pytest.mark.parametrize("reset", [False, True])
@pytest.mark.parametrize("qubits", QUBIT_SETS)
def test_gpu_collapse_equals_the_cpu_bits(rng, qubits, reset):
    cp = cupy_module()
    host = random_state(rng, 12)
    weights = outcome_weights(host, qubits)
    for outcome in {0, int(np.argmax(weights)), len(weights) - 1}:
        cpu, gpu = host.copy(), cp.asarray(host)
        collapse(cpu, qubits, outcome, weights[outcome], reset)
        collapse(gpu, qubits, outcome, weights[outcome], reset)
        assert np.array_equal(to_host(gpu).view(np.uint64), cpu.view(np.uint64))
        assert abs(np.linalg.norm(cpu) - 1) < 1e-14


@pytest.mark.gpu
def test_gpu_seeded_measurements_equal_the_cpu(rng):
    cp = cupy_module()
    for qubits in QUBIT_SETS:
        host = random_state(rng, 13)
        gpu = cp.asarray(host)
        for reset in (False, True):
            drawn = [measure(s, qubits, np.random.default_rng(7), reset=reset) for s in (host, gpu)]
            assert drawn[0] == drawn[1]
            assert np.array_equal(to_host(gpu).view(np.uint64), host.view(np.uint64))


@pytest.mark.gpu
@pytest.mark.parametrize("bad", [np.nan, np.inf, 3.0])
def test_gpu_refuses_what_the_cpu_refuses(rng, bad):
    cp = cupy_module()
    host = random_state(rng, 10)
    host[37] = bad
    for state in (host, cp.asarray(host)):
        with pytest.raises(SimulationError, match="squared norm"):
            outcome_weights(state, (3,))
