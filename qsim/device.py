"""Where the state lives: device names, array modules and free memory."""
import functools
import glob
import os
import shutil
from dataclasses import dataclass

import numpy as np

from gemm_backend.arrays import cupy_module, gpu_available

from .errors import SimulationError

DEVICES = ("auto", "cpu", "gpu")
COPY_BYTES = 1 << 30  # the copy that measures the bandwidth of the memory floor


@dataclass(frozen=True)
class Device:
    kind: str  # "cpu" or "gpu"

    @property
    def xp(self):
        return np if self.kind == "cpu" else cupy_module()

    @property
    def on_gpu(self) -> bool:
        return self.kind == "gpu"

    def name(self) -> str:
        if self.kind == "cpu":
            return "cpu"
        cp = cupy_module()
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        return f"gpu ({props['name'].decode()})"

    def free_bytes(self) -> int:
        """Memory a new allocation can take: free device memory plus what cupy's pool holds
        unused, or MemAvailable on the host."""
        if self.kind == "gpu":
            cp = cupy_module()
            free, _total = cp.cuda.runtime.memGetInfo()
            pool = cp.get_default_memory_pool()
            return int(free + pool.free_bytes())
        return host_available_bytes()

    def copy_bandwidth(self):
        """Device copy bandwidth in bytes/s (read + write), measured on the GPU once per process and
        copy size (a copy of 1 GiB, or of a quarter of the free memory when less, median of 5 after a
        warm-up: small copies understate the bandwidth); None on the CPU."""
        if self.kind != "gpu":
            return None
        return _gpu_copy_bandwidth(min(COPY_BYTES, self.free_bytes() // 4) >> 20 << 20)

    def synchronize(self) -> None:
        if self.kind == "gpu":
            cupy_module().cuda.Device().synchronize()


@functools.lru_cache(maxsize=None)
def _gpu_copy_bandwidth(nbytes: int) -> float:
    cp = cupy_module()
    source = cp.ones(nbytes // 8, dtype=cp.float64)
    target = cp.empty_like(source)
    times = []
    for repeat in range(6):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        cp.copyto(target, source)
        stop.record()
        stop.synchronize()
        if repeat:
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return 2 * source.nbytes / float(np.median(times))


def host_available_bytes() -> int:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def nvidia_gpu_present() -> bool:
    """Whether this machine shows an NVIDIA GPU without asking CUDA: a /dev/nvidia<k> device node
    or nvidia-smi on the PATH (cheap; true on a machine whose GPU cupy cannot use)."""
    return bool(glob.glob("/dev/nvidia[0-9]*")) or shutil.which("nvidia-smi") is not None


def unused_gpu_note():
    """One line for a machine with an NVIDIA GPU that --device auto will not use (cupy missing, or
    seeing no CUDA device), naming what to do; None where the GPU is used or there is none."""
    if gpu_available() or not nvidia_gpu_present():
        return None
    if cupy_module() is None:
        return ("an NVIDIA GPU is present but cupy is not installed, so this runs on the CPU; install the gpu "
                "extra: pip install 'qsim-emulated[gpu]' (cupy-cuda13x; for CUDA 12 pip install cupy-cuda12x)")
    return ("an NVIDIA GPU is present but cupy sees no CUDA device (check the driver and that the cupy-cuda<major> "
            "package matches its CUDA version), so this runs on the CPU")


def resolve_device(name: str) -> Device:
    """'auto' -> the GPU when cupy sees one, else the CPU."""
    if name not in DEVICES:
        raise SimulationError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")
    if name == "auto":
        return Device("gpu" if gpu_available() else "cpu")
    if name == "gpu" and not gpu_available():
        raise SimulationError(
            "device 'gpu' asked for, but no CUDA GPU is visible to cupy "
            "(install the 'gpu' extra, or use --device cpu)"
        )
    return Device(name)
