"""The CUDA kernels of qsim (qsim/kernels/*.cu), compiled once per device with cupy.RawModule."""
import functools
from pathlib import Path

from gemm_backend.arrays import cupy_module

KERNEL_DIR = Path(__file__).with_name("kernels")


def kernel_function(file_name: str, name: str):
    """The extern "C" kernel `name` of qsim/kernels/<file_name>, for the current device."""
    return _module(file_name, cupy_module().cuda.Device().id).get_function(name)


@functools.cache
def _module(file_name: str, device_id: int):
    cp = cupy_module()
    with cp.cuda.Device(device_id):
        module = cp.RawModule(code=(KERNEL_DIR / file_name).read_text(), options=("--std=c++17",))
        module.compile()
    return module
