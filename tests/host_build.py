"""Host builds of CUDA kernels (tests/host_cuda): g++ compiles a harness that includes a kernel
source with the CUDA execution model emulated around it, and ctypes loads the library."""
import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from gemm_backend.kernel_launch import SHARED_KERNEL_DIR, kernel_path

HOST_CUDA = Path(__file__).resolve().parent / "host_cuda"


def build_host_harness(harness: str, library: Path, options=()) -> ctypes.CDLL:
    """tests/host_cuda/<harness> built by g++ (C++20, a shared library, -lpthread) with `options`
    (optimisation, -D definitions, -I folders) into `library`, loaded. The calling test is skipped
    where g++, or its C++20 <barrier> or std::atomic_ref, is missing; -O1 or more drops the tile
    skeleton's device-only paths that a harness does not take."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("needs g++ (C++20) to build the host emulation of the kernels")
    command = [compiler, "-std=c++20", "-shared", "-fPIC", *options, "-o", str(library), str(HOST_CUDA / harness),
               "-lpthread"]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0 and ("barrier" in built.stderr or "atomic_ref" in built.stderr):
        pytest.skip("this g++ lacks C++20 <barrier> or std::atomic_ref")
    assert built.returncode == 0, built.stderr
    return ctypes.CDLL(str(library))


def kernel_includes(file_name: str) -> tuple:
    """The -I options of a kernel source as installed: its own folder and the shared kernels'."""
    return f"-I{kernel_path(file_name).parent}", f"-I{SHARED_KERNEL_DIR}"


def variant_builder(harness: str, entry: str, folder: Path, options_of):
    """build(launch) -> the function `entry` of the harness built for the launch's kernel variant
    with options_of(launch), each variant (launch.name) built once, into folder."""
    built = {}

    def build(launch):
        if launch.name not in built:
            library = build_host_harness(harness, folder / f"variant{len(built)}.so", options_of(launch))
            built[launch.name] = getattr(library, entry)
        return built[launch.name]
    return build
