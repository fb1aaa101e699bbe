"""One process per GPU, started and watched by the calling process.

launch(world_size, job, args) spawns world_size processes (multiprocessing, spawn start method:
no CUDA state is inherited). The parent makes the NCCL id and passes it to every worker; worker r
takes GPU r, builds its NcclCommunicator and returns job(comm, *args) to the parent through a
pipe (rank 0's value is kept). The parent waits on the pipes and the processes together: the
first worker error, a worker that exits without a result (killed, out of memory, a crash in
NCCL), or the timeout ends every worker and raises a one-line SimulationError naming the rank.
So a lost peer never leaves the others hanging in a collective.
"""
import multiprocessing
import os
import signal
import sys
import time
import traceback
from multiprocessing.connection import wait

from ..errors import SimulationError
from .layout import global_qubit_count
from .nccl import NCCL_ENVIRONMENT, NcclCommunicator, nccl_module, nccl_unique_id

TERMINATE_GRACE_S = 5.0


class NcclConnect:
    """Builds the NCCL communicator of a worker; made in the parent, where the id is created."""

    def __init__(self, world_size: int):
        nccl_module()
        from gemm_backend.arrays import cupy_module

        visible = cupy_module().cuda.runtime.getDeviceCount()
        if world_size > visible:
            raise SimulationError(f"{world_size} GPUs asked for, but {visible} are visible; use --gpus {visible} "
                                  "or fewer (a power of two)")
        self.unique_id = nccl_unique_id()

    def __call__(self, rank: int, world_size: int):
        return NcclCommunicator(rank, world_size, self.unique_id, device=rank)


def launch(world_size: int, job, args=(), *, timeout_s: float = None, connect=None):
    """Run job(comm, *args) in world_size fresh processes; return rank 0's value.

    job and args must be picklable (job a module-level function). connect(rank, world_size)
    builds each worker's communicator (default: NCCL on GPU rank). timeout_s: the longest the
    whole run may take (None: no limit). Raises SimulationError when any worker fails.
    """
    global_qubit_count(world_size)
    connect = NcclConnect(world_size) if connect is None else connect
    for key, value in NCCL_ENVIRONMENT.items():
        os.environ.setdefault(key, value)  # inherited by the workers
    context = multiprocessing.get_context("spawn")
    workers = []
    try:
        for rank in range(world_size):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_worker, args=(rank, world_size, connect, job, args, sender),
                                      name=f"qsim-rank-{rank}", daemon=True)
            process.start()
            sender.close()
            workers.append(_Worker(rank, process, receiver))
        return _watch(workers, timeout_s)
    finally:
        _stop(workers)


class _Worker:
    def __init__(self, rank, process, pipe):
        self.rank, self.process, self.pipe = rank, process, pipe
        self.reply = None

    def read(self) -> None:
        """Take the worker's reply when one is waiting (or note a closed pipe)."""
        if self.reply is None and self.pipe.poll():
            try:
                self.reply = self.pipe.recv()
            except (EOFError, OSError):
                self.reply = ("lost", None)

    def failure(self):
        """A one-line description when this worker failed, else None."""
        kind = None if self.reply is None else self.reply[0]
        if kind == "error":
            return f"rank {self.rank}: {self.reply[1]}"
        if kind == "ok" or (kind is None and self.process.exitcode is None):
            return None
        self.process.join(TERMINATE_GRACE_S)  # its pipe closed: it is exiting
        code = self.process.exitcode
        if code is None:
            return f"rank {self.rank} closed its pipe without a result and stopped answering (lost peer)"
        return f"rank {self.rank} exited with code {code}{_signal_name(code)} without a result (lost peer)"


def _watch(workers, timeout_s):
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not all(w.reply is not None and w.reply[0] == "ok" for w in workers):
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            running = [w.rank for w in workers if w.reply is None]
            raise SimulationError(f"the distributed run did not finish within {timeout_s:g} s (ranks {running} still "
                                  "running); every worker was stopped")
        pending = [w for w in workers if w.reply is None]
        wait([w.pipe for w in pending] + [w.process.sentinel for w in pending], remaining)
        for w in pending:
            w.read()
            if w.reply is None and not w.process.is_alive():
                w.read()  # a reply may have arrived just before the exit
        failures = [f for f in (w.failure() for w in workers) if f]
        if failures:
            raise SimulationError(failures[0] + "; every rank was stopped")
    return workers[0].reply[1]


def _stop(workers) -> None:
    for w in workers:
        if w.process.is_alive():
            w.process.terminate()
    deadline = time.monotonic() + TERMINATE_GRACE_S
    for w in workers:
        w.process.join(max(0.0, deadline - time.monotonic()))
        if w.process.is_alive():
            w.process.kill()
            w.process.join()
        w.pipe.close()


def _signal_name(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f" ({signal.Signals(-code).name})"
        except ValueError:
            return ""
    return ""


def _worker(rank, world_size, connect, job, args, pipe) -> None:
    """A worker's whole life: communicator, job, reply; any error goes back as one line."""
    try:
        comm = connect(rank, world_size)
        value = job(comm, *args)
        pipe.send(("ok", value if rank == 0 else None))
        comm.close()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which stops the others
        if os.environ.get("QSIM_WORKER_TRACEBACK") and not isinstance(exc, SimulationError):
            traceback.print_exc()  # for developers: where an unexpected error came from
        try:
            pipe.send(("error", one_line(exc)))
        except OSError:
            pass  # the parent is gone: nobody to tell
        sys.exit(1)


def one_line(exc: BaseException) -> str:
    """The error as one line; its type is named unless it is one of the expected input errors."""
    text = " ".join(str(exc).split())
    if not text:
        return type(exc).__name__
    return text if isinstance(exc, (SimulationError, ValueError)) else f"{type(exc).__name__}: {text}"
