import os
import sys
from pathlib import Path

import numpy as np
import pytest

import circuits
import gemm_backend
import qsim
from gemm_backend.arrays import gpu_available

SOURCE_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (circuits, qsim, gemm_backend)

requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU with cupy")


def pytest_report_header(config):
    return [f"packages from {Path(p.__file__).resolve().parent}" for p in PACKAGES]


def pytest_configure(config):
    """QSIM_TEST_INSTALLED=1 (.ci/run): the packages must come from an install, not from this
    source tree (which `python -m` or pytest's sys.path handling could put first)."""
    if os.environ.get("QSIM_TEST_INSTALLED") != "1":
        return
    shadowed = [p.__name__ for p in PACKAGES if Path(p.__file__).resolve().is_relative_to(SOURCE_ROOT)]
    if shadowed:
        pytest.exit(f"QSIM_TEST_INSTALLED=1, but {', '.join(shadowed)} imported from the source tree "
                    f"{SOURCE_ROOT}, not the install", returncode=2)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU with cupy"))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def workers_import_tests(monkeypatch):
    """Worker processes started by qsim.distributed.launcher (spawn) unpickle a job defined in a
    test module by its name (tests.test_...), with the parent's sys.path: the checkout's root goes
    last on it, so that they find the tests while the packages still come from the install."""
    monkeypatch.setattr(sys, "path", [*sys.path, str(SOURCE_ROOT)])
