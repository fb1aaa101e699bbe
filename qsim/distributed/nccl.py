"""NCCL transport through cupy.cuda.nccl: one process per GPU.

Point-to-point exchanges are grouped send/recv calls (ncclGroupStart/End around them: NCCL runs
them as one all-to-all step without ordering deadlocks); reductions and gathers are NCCL
collectives on small device buffers. Every call is enqueued on cupy's current stream, so it is
ordered with the packing kernels before and after it.

Inside a job launched by mpirun, use `NcclCommunicator.from_mpi()` (needs the optional mpi4py);
with any other launcher, create the id once with `nccl_unique_id()`, pass it to every rank and
build `NcclCommunicator(rank, world_size, unique_id)`. NCCL_NVLS_ENABLE defaults to 0 (NVLink
multicast off) in every process that builds one.
"""
import os
import pickle

import numpy as np

from gemm_backend.arrays import cupy_module, gpu_available

from ..errors import SimulationError
from .communicator import Communicator, check_reduction

NCCL_ENVIRONMENT = {"NCCL_NVLS_ENABLE": "0"}


def nccl_module():
    """cupy.cuda.nccl, or SimulationError naming what is missing."""
    if not gpu_available():
        raise SimulationError("NCCL needs a CUDA GPU visible to cupy (install the 'gpu' extra); "
                              "use --device cpu for simulated ranks")
    try:
        from cupy.cuda import nccl
    except ImportError as exc:
        raise SimulationError(f"cupy was built without NCCL ({exc}); install the nccl package for your CUDA "
                              "(e.g. pip install nvidia-nccl-cu13)") from None
    if not getattr(nccl, "available", True):
        raise SimulationError("cupy cannot load the NCCL library; install it for your CUDA "
                              "(e.g. pip install nvidia-nccl-cu13)")
    return nccl


def set_nccl_environment() -> None:
    for key, value in NCCL_ENVIRONMENT.items():
        os.environ.setdefault(key, value)


def nccl_unique_id():
    """A new NCCL id; create it once (on rank 0 or the launcher) and give it to every rank."""
    set_nccl_environment()
    return nccl_module().get_unique_id()


class NcclCommunicator(Communicator):
    """Rank `rank` of `world_size` processes, each on its own GPU (`device`, default: rank);
    that GPU becomes the process's current device."""

    needs_gpu = True

    def __init__(self, rank: int, world_size: int, unique_id, device: int = None):
        set_nccl_environment()
        self._nccl = nccl_module()
        cp = cupy_module()
        self.rank, self.world_size = int(rank), int(world_size)
        self.device_id = self.rank if device is None else int(device)
        visible = cp.cuda.runtime.getDeviceCount()
        if not 0 <= self.device_id < visible:
            raise SimulationError(f"rank {self.rank} wants GPU {self.device_id}, but only {visible} GPU(s) are visible")
        cp.cuda.Device(self.device_id).use()
        self._comm = self._nccl.NcclCommunicator(self.world_size, unique_id, self.rank)

    @classmethod
    def from_mpi(cls, mpi_comm=None, device: int = None) -> "NcclCommunicator":
        """The communicator of an MPI job: rank 0 makes the NCCL id and broadcasts it; each rank
        takes GPU (rank mod visible GPUs) unless `device` is given."""
        try:
            from mpi4py import MPI
        except ImportError:
            raise SimulationError(
                "from_mpi needs mpi4py (pip install mpi4py), or launch with `qsim run --gpus`") from None
        mpi_comm = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
        unique_id = mpi_comm.bcast(nccl_unique_id() if rank == 0 else None, root=0)
        if device is None:
            device = rank % cupy_module().cuda.runtime.getDeviceCount()
        return cls(rank, size, unique_id, device)

    # -- collectives ------------------------------------------------------------------------
    def exchange(self, sends, recvs) -> None:
        stream = self._stream()
        nccl = self._nccl
        nccl.groupStart()
        try:
            for peer, buffer in sends:
                self._comm.send(_pointer(buffer), buffer.nbytes, nccl.NCCL_UINT8, peer, stream)
            for peer, buffer in recvs:
                self._comm.recv(_pointer(buffer), buffer.nbytes, nccl.NCCL_UINT8, peer, stream)
        finally:
            nccl.groupEnd()

    def allreduce(self, values, op: str = "sum") -> np.ndarray:
        check_reduction(op)
        cp, nccl = cupy_module(), self._nccl
        buffer = cp.asarray(np.array(values, dtype=np.float64))
        code = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX}[op]
        self._comm.allReduce(buffer.data.ptr, buffer.data.ptr, buffer.size, nccl.NCCL_FLOAT64, code, self._stream())
        return buffer.get()

    def allgather_object(self, obj) -> list:
        cp, nccl = cupy_module(), self._nccl
        payload = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
        sizes = self._allgather(cp.asarray(np.array([payload.size], dtype=np.int64)), nccl.NCCL_INT64).get()
        longest = int(sizes.max())
        padded = cp.zeros(longest, dtype=cp.uint8)
        padded[:payload.size] = cp.asarray(payload)
        gathered = self._allgather(padded, nccl.NCCL_UINT8).get().reshape(self.world_size, longest)
        return [pickle.loads(gathered[r, :int(sizes[r])].tobytes()) for r in range(self.world_size)]

    def close(self) -> None:
        self._comm.destroy()

    # -- helpers ----------------------------------------------------------------------------
    def _allgather(self, send, datatype):
        cp = cupy_module()
        recv = cp.empty(send.size * self.world_size, dtype=send.dtype)
        self._comm.allGather(send.data.ptr, recv.data.ptr, send.size, datatype, self._stream())
        return recv

    @staticmethod
    def _stream() -> int:
        return cupy_module().cuda.get_current_stream().ptr


def _pointer(buffer) -> int:
    if not buffer.flags.c_contiguous:
        raise SimulationError("NCCL buffers must be contiguous")
    return buffer.data.ptr
