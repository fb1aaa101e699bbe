import numpy as np
import pytest

from gemm_backend.arrays import gpu_available

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU with cupy"))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
