"""Compile the gate kernels' variants through NVRTC with the package's own options, on a machine
without a GPU: a check of the CUDA sources (and of the -D definitions gate.py passes) before a
device session. Needs libnvrtc, e.g. from the nvidia-cuda-nvrtc wheel (not a dependency):

    pip download --no-deps -d /tmp/w nvidia-cuda-nvrtc && python -m zipfile -e /tmp/w/*.whl /tmp/nvrtc
    python scripts/dev/nvrtc_compile_check.py --nvrtc /tmp/nvrtc/nvidia/cu13/lib/libnvrtc.so.13

Prints one line per variant (cubin bytes, or the compiler's log) and exits 1 if any fails.
"""
import argparse
import dataclasses
import ctypes
import sys

from gemm_backend.kernel_launch import include_options, kernel_path
from gemm_backend import multiword_gate
from gemm_backend.native import gate as native_gate
from gemm_backend.ozaki.gate import plan_launch, wide_launch
from gemm_backend.ozaki.plan import plan_products

ARCH = "sm_90"  # cupy's target on the H100; a launch's own `arch` (wgmma: sm_90a) where it has one


def variants() -> list:
    """(source, name expression, -D definitions, architecture) of representative variants of
    every gate kernel."""
    ozaki = [plan_launch(64, plan_products(9, 128, 9, 10)), plan_launch(4, plan_products(7, 8)),
             plan_launch(32, plan_products(7, 64), n_tiles=1, prefetch=True, blocks_per_sm=1),
             plan_launch(128, plan_products(9, 256, 8, 10), wgmma=False),
             plan_launch(256, plan_products(9, 512, 9, 11), wgmma=False),
             wide_launch(256, plan_products(9, 512, 9, 11), columns=16, blocks_per_sm=2),
             wide_launch(512, plan_products(9, 1024, 9, 11), wgmma=False)]
    ozaki += [wide_launch(k, plan_products(*plan_args), wgmma=True)
              for k, plan_args in ((64, (9, 128, 8, 10)), (128, (9, 256, 8, 10)), (256, (9, 512, 9, 11)),
                                   (512, (9, 1024, 9, 11)))]
    ozaki.append(dataclasses.replace(ozaki[-1], chunks_in_flight=2))
    rows = [(launch.source, launch.name, launch.definitions, launch.arch or ARCH) for launch in ozaki]
    rows += [("native_gate.cu", native_gate.launch_shape(*shape).name, native_gate.KERNEL_DEFINITIONS, ARCH)
             for shape in ((32, 2, False, 1), (16, 1, True, 2, 8))]
    rows += [("multiword_gate.cu", multiword_gate.plan_launch(k, k, accumulate).name, multiword_gate.KERNEL_DEFINITIONS,
              ARCH) for k, accumulate in ((16, "fp32"), (4, "fp64"), (64, "fp32"))]
    return rows


def compile_variant(nvrtc, source: str, name: str, definitions, arch: str) -> tuple:
    """(ok, message): NVRTC's result for one name expression of the kernel source file."""
    path = kernel_path(source)
    program = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(program), path.read_text().encode(), source.encode(), 0, None, None):
        return False, "nvrtcCreateProgram failed"
    nvrtc.nvrtcAddNameExpression(program, name.encode())
    options = [o.encode() for o in (*include_options(path), *definitions, f"--gpu-architecture={arch}")]
    status = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
    if status:
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        message = log.value.decode(errors="replace").strip()
    else:
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
        message = f"cubin {size.value} bytes"
    nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    return status == 0, message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvrtc", required=True, help="path of libnvrtc.so")
    args = parser.parse_args()
    nvrtc = ctypes.CDLL(args.nvrtc)
    failed = 0
    for source, name, definitions, arch in variants():
        ok, message = compile_variant(nvrtc, source, name, definitions, arch)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {message}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
