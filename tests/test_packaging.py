"""What an install ships: every CUDA file the kernels compile and every header they `#include`
(a plain `pip install .`, not only an editable one, whose source tree hides a missing file).

Checked three ways: on the imported package (in CI that is the installed wheel, .ci/run), on
pyproject.toml's package-data against the source tree's kernel folder (any checkout), and on the
wheel's file list when QSIM_WHEEL names one (CI sets it)."""
import fnmatch
import os
import posixpath
import re
import zipfile
from pathlib import Path

import pytest

import gemm_backend

# `#include "name"` (quotes: a file of ours); `#include <...>` names the toolkit's headers.
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
KERNEL_SUFFIXES = (".cu", ".cuh")
INSTALLED_PACKAGE = Path(gemm_backend.__file__).resolve().parent
SHARED_KERNELS = "kernels"  # the folder of shared headers, the second -I of kernel_launch.include_options
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def missing_includes(files: dict) -> list:
    """(file, include) for every local #include of the kernel files that is not among them.
    files: {path relative to the gemm_backend package, '/'-separated: source text}. Includes resolve
    relative to the including file's folder or to the shared kernel folder (kernel_launch's -I)."""
    missing = []
    for name, text in sorted(files.items()):
        for include in LOCAL_INCLUDE.findall(text):
            beside = posixpath.normpath(posixpath.join(posixpath.dirname(name), include))
            shared = posixpath.normpath(posixpath.join(SHARED_KERNELS, include))
            if beside not in files and shared not in files:
                missing.append((name, include))
    return missing


def kernel_files(folder: Path) -> dict:
    return {path.relative_to(folder).as_posix(): path.read_text()
            for path in folder.rglob("*") if path.suffix in KERNEL_SUFFIXES}


def test_the_check_finds_a_header_left_out():
    files = kernel_files(INSTALLED_PACKAGE)
    assert "kernels/gate_tiles.cuh" in files
    del files["kernels/gate_tiles.cuh"]
    assert ("native/kernels/native_gate.cu", "gate_tiles.cuh") in missing_includes(files)
    assert ("sub/a.cu", "../b.cuh") not in missing_includes({"sub/a.cu": '#include "../b.cuh"', "b.cuh": ""})


def test_the_imported_package_ships_every_included_file():
    files = kernel_files(INSTALLED_PACKAGE)
    includes = [include for text in files.values() for include in LOCAL_INCLUDE.findall(text)]
    assert "gate_tiles.cuh" in includes, f"no kernel in {INSTALLED_PACKAGE} includes gate_tiles.cuh any more"
    assert missing_includes(files) == [], f"{INSTALLED_PACKAGE} lacks files its kernels include"


def test_package_data_covers_every_kernel_file_of_the_source_tree():
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    pyproject = SOURCE_ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip(f"no source checkout around the tests ({pyproject} missing)")
    package_data = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    # Every pattern as a path under gemm_backend/: package gemm_backend.ozaki's "kernels/*.cu" is "ozaki/kernels/*.cu".
    patterns = [posixpath.join(*package.split(".")[1:], pattern) for package, globs in package_data.items()
                if package.split(".")[0] == "gemm_backend" for pattern in globs]
    names = sorted(kernel_files(SOURCE_ROOT / "gemm_backend"))
    assert "kernels/gate_tiles.cuh" in names
    left_out = [name for name in names if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]
    assert left_out == [], f"pyproject.toml's package-data for gemm_backend ({patterns}) leaves out {left_out}"


def test_the_built_wheel_lists_every_kernel_file():
    wheel = os.environ.get("QSIM_WHEEL")
    if not wheel:
        pytest.skip("QSIM_WHEEL names no built wheel (.ci/run sets it)")
    prefix = "gemm_backend/"
    with zipfile.ZipFile(wheel) as archive:
        files = {name[len(prefix):]: archive.read(name).decode() for name in archive.namelist()
                 if name.startswith(prefix) and name.endswith(KERNEL_SUFFIXES)}
    assert "kernels/gate_tiles.cuh" in files
    assert missing_includes(files) == [], f"{wheel} lacks files its kernels include"
    source = SOURCE_ROOT / "gemm_backend"
    if source.is_dir():
        assert sorted(set(kernel_files(source)) - set(files)) == [], f"{wheel} lacks kernel files of the source tree"
