"""kernel_launch's NVRTC cache for architecture-specific kernels (arch_kernel), with a stand-in for
cupy's NVRTC bindings so that it runs without a GPU: compile once per source, name and options,
whole files only, and a compile error as one BackendError with NVRTC's log."""
import sys
import types

import pytest

from gemm_backend import BackendError
from gemm_backend.kernel_launch import _cached_cubin, kernel_path


class _FakeNvrtc(types.ModuleType):
    """The calls _cached_cubin makes, recording the compiles."""

    class NVRTCError(Exception):
        pass

    def __init__(self):
        super().__init__("nvrtc")
        self.compiled = []  # (name expression, options) per compile
        self.failing = False
        self.names = {}

    def getVersion(self):
        return (13, 5)

    def createProgram(self, source, file_name, headers, include_names):
        assert source and not headers and not include_names
        return len(self.compiled) + 1

    def addNameExpression(self, program, name):
        self.names[program] = name

    def compileProgram(self, program, options):
        self.compiled.append((self.names[program], tuple(options)))
        if self.failing:
            raise self.NVRTCError("NVRTC_ERROR_COMPILATION (6)")

    def getProgramLog(self, program):
        return "kern.cu(3): error: identifier \"wgmma\" is undefined"

    def getCUBIN(self, program):
        return b"cubin of " + repr(self.compiled[-1]).encode()

    def getLoweredName(self, program, name):
        return f"_Z_lowered_{len(name)}"

    def destroyProgram(self, program):
        self.names.pop(program)


@pytest.fixture
def nvrtc(monkeypatch, tmp_path):
    fake = _FakeNvrtc()
    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.nvrtc = fake
    for name, module in [("cupy_backends", types.ModuleType("cupy_backends")),
                         ("cupy_backends.cuda", types.ModuleType("cupy_backends.cuda")),
                         ("cupy_backends.cuda.libs", libs), ("cupy_backends.cuda.libs.nvrtc", fake)]:
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    return fake


def test_a_kernel_is_compiled_once_per_name_and_options(nvrtc, tmp_path):
    path = kernel_path("ozaki_gate_wide.cu")
    name = "ozaki_gate_wide<128, 9, 8, 10, 2040ULL, 32, 4, 3, true, 1, true, 1>"
    options = ("--std=c++17", "-DWIDE_WARPS=8", "-arch=sm_90a")
    cubin, lowered = _cached_cubin(path, name, options)
    assert cubin.parent == tmp_path / "arch_specific" and lowered == f"_Z_lowered_{len(name)}"
    assert cubin.read_bytes() == b"cubin of " + repr((name, options)).encode()
    assert _cached_cubin(path, name, options) == (cubin, lowered)  # from the disk
    assert len(nvrtc.compiled) == 1
    other, _ = _cached_cubin(path, name, options[:-1] + ("-arch=sm_100a",))
    other_name, _ = _cached_cubin(path, name.replace("true, 1>", "true, 2>"), options)
    assert len({cubin, other, other_name}) == 3 and len(nvrtc.compiled) == 3
    assert not list((tmp_path / "arch_specific").glob("*.partial"))


def test_a_compile_error_is_one_backend_error_with_the_log(nvrtc, tmp_path):
    nvrtc.failing = True
    with pytest.raises(BackendError, match=r"(?s)NVRTC could not compile ozaki_gate_wide.cu for k<1>.*"
                                           r"NVRTC_ERROR_COMPILATION.*identifier \"wgmma\" is undefined"):
        _cached_cubin(kernel_path("ozaki_gate_wide.cu"), "k<1>", ("-arch=sm_90a",))
    assert not nvrtc.names  # the program was destroyed
    assert not (tmp_path / "arch_specific").exists() or not list((tmp_path / "arch_specific").iterdir())
