"""The state helpers: the squared norm without state-sized temporaries."""
import numpy as np
import pytest

from qsim import state as state_module
from .helpers import crandn


def test_squared_norm_on_the_cpu(rng):
    vector = crandn(rng, 1000)
    assert state_module.squared_norm(vector) == pytest.approx(float(np.sum(np.abs(vector) ** 2)), rel=1e-14)


@pytest.mark.gpu
def test_squared_norm_on_the_gpu_in_chunks(rng, monkeypatch):
    import cupy as cp

    monkeypatch.setattr(state_module, "NORM_CHUNK", 64)  # several chunks and a short last one
    vector = crandn(rng, 64 * 5 + 7)
    assert state_module.squared_norm(cp.asarray(vector)) == pytest.approx(float(np.vdot(vector, vector).real),
                                                                          rel=1e-14)
    assert state_module.squared_norm(cp.zeros(0, cp.complex128)) == 0.0
