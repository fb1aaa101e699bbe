"""How the ranks of a distributed run talk: the interface, and P simulated ranks in one process.

Every method is collective: all ranks call it, in the same order, with matching arguments.
`SimulatedCommunicator` runs each rank in a thread of one process (numpy arrays on the CPU, or
cupy arrays on one GPU), so the engine's SPMD code, exchanges included, runs unchanged in tests;
`qsim.distributed.nccl.NcclCommunicator` is the one-process-per-GPU implementation.
"""
import threading

import numpy as np

from ..errors import SimulationError

DEFAULT_SIMULATED_TIMEOUT_S = 300.0
REDUCTIONS = {"sum": np.sum, "max": np.max}


class PeerLostError(SimulationError):
    """Another rank failed, or did not reach a collective call in time."""


class Communicator:
    """The transport of one rank.

    rank, world_size: this rank and the number of ranks.
    ranks_per_device: how many ranks share this rank's memory (simulated ranks share one).
    needs_gpu: whether the buffers it moves must be GPU arrays.
    """

    rank = 0
    world_size = 1
    ranks_per_device = 1
    needs_gpu = False

    def exchange(self, sends, recvs) -> None:
        """One grouped point-to-point step: sends and recvs are lists of (peer, buffer) with
        contiguous device buffers; each send to a peer matches a recv of the same size there."""
        raise NotImplementedError

    def allreduce(self, values, op: str = "sum") -> np.ndarray:
        """Element-wise sum or max over ranks of a host float64 array; the same on every rank."""
        raise NotImplementedError

    def allgather_object(self, obj) -> list:
        """[obj of rank 0, obj of rank 1, ...] on every rank (small picklable objects)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the transport (the default holds nothing)."""


def check_reduction(op: str) -> None:
    if op not in REDUCTIONS:
        raise SimulationError(f"unknown reduction {op!r}; use one of {', '.join(REDUCTIONS)}")


class SimulatedWorld:
    """The meeting point of the simulated ranks of one run: a barrier and a board where each
    rank posts its contribution to the current collective call."""

    def __init__(self, world_size: int, timeout_s: float = DEFAULT_SIMULATED_TIMEOUT_S):
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise SimulationError(f"world_size must be a positive integer, got {world_size!r}")
        self.world_size = world_size
        self.timeout_s = timeout_s
        self._barrier = threading.Barrier(world_size, timeout=timeout_s)
        self._board = [None] * world_size

    def collective(self, rank: int, kind: str, item, combine):
        """Post `item` for the collective call `kind`, wait for every rank, return combine(all
        items in rank order), and wait again so that nobody posts (or reuses a posted buffer)
        before everyone has combined. Ranks in different calls get a SimulationError."""
        self._board[rank] = (kind, item)
        self._wait(rank)
        try:
            kinds = [posted_kind for posted_kind, _ in self._board]
            if len(set(kinds)) > 1:
                calls = ", ".join(f"rank {r}: {k}" for r, k in enumerate(kinds))
                raise SimulationError(f"the ranks are in different collective calls ({calls}); every rank must make "
                                      "the same calls in the same order")
            return combine([posted for _, posted in self._board])
        finally:
            self._wait(rank)

    def abort(self) -> None:
        """Release every rank waiting now or later with PeerLostError."""
        self._barrier.abort()

    def _wait(self, rank: int) -> None:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise PeerLostError(
                f"rank {rank}: a peer rank failed or did not answer within {self.timeout_s:g} s") from None


class SimulatedCommunicator(Communicator):
    """Rank `rank` of a SimulatedWorld; arrays are exchanged by copies in shared memory."""

    def __init__(self, world: SimulatedWorld, rank: int):
        if not 0 <= rank < world.world_size:
            raise SimulationError(f"rank {rank} is outside 0..{world.world_size - 1}")
        self.world = world
        self.rank = rank
        self.world_size = world.world_size
        self.ranks_per_device = world.world_size

    @classmethod
    def single(cls) -> "SimulatedCommunicator":
        """A world of one rank (no other rank to talk to)."""
        return cls(SimulatedWorld(1), 0)

    def exchange(self, sends, recvs) -> None:
        outgoing = {peer: buffer for peer, buffer in sends}

        def receive(boards):
            for peer, buffer in recvs:
                incoming = boards[peer].get(self.rank) if 0 <= peer < self.world_size else None
                if incoming is None or incoming.size != buffer.size:
                    raise SimulationError(f"rank {self.rank}: receive of {buffer.size} amplitudes from rank {peer} "
                                          f"has no matching send")
                buffer[...] = incoming

        self.world.collective(self.rank, "exchange", outgoing, receive)

    def allreduce(self, values, op: str = "sum") -> np.ndarray:
        check_reduction(op)
        values = np.array(values, dtype=np.float64)
        return self.world.collective(self.rank, f"allreduce {op} of {values.size}", values,
                                     lambda items: REDUCTIONS[op](np.stack(items), axis=0))

    def allgather_object(self, obj) -> list:
        return self.world.collective(self.rank, "allgather_object", obj, list)


def run_simulated(world_size: int, job, *args, timeout_s: float = DEFAULT_SIMULATED_TIMEOUT_S) -> list:
    """Run job(comm, *args) on `world_size` simulated ranks (one thread each); return the
    results in rank order. When a rank raises, the others are released from their collective
    calls and the first rank's error (not a PeerLostError it caused) is raised here."""
    world = SimulatedWorld(world_size, timeout_s)
    results, errors = [None] * world_size, [None] * world_size

    def rank_main(rank):
        try:
            results[rank] = job(SimulatedCommunicator(world, rank), *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors[rank] = exc
            world.abort()

    threads = [threading.Thread(target=rank_main, args=(rank,), name=f"qsim-rank-{rank}", daemon=True)
               for rank in range(world_size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failures = [exc for exc in errors if exc is not None]
    if failures:
        causes = [exc for exc in failures if not isinstance(exc, PeerLostError)]
        raise (causes or failures)[0]
    return results
