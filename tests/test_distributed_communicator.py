"""Simulated ranks: collectives give the same answer on every rank; a failing rank releases the others."""
import threading
import time

import numpy as np
import pytest

from qsim import SimulationError
from qsim.distributed import PeerLostError, run_simulated
from qsim.distributed.communicator import SimulatedCommunicator, SimulatedWorld


def test_allreduce_and_allgather_agree_on_every_rank():
    def job(comm):
        total = comm.allreduce([comm.rank, 1.0, -comm.rank], "sum")
        largest = comm.allreduce([comm.rank, -comm.rank], "max")
        return total.tolist(), largest.tolist(), comm.allgather_object({"rank": comm.rank})

    results = run_simulated(4, job)
    for total, largest, gathered in results:
        assert total == [6.0, 4.0, -6.0] and largest == [3.0, 0.0]
        assert gathered == [{"rank": r} for r in range(4)]


def test_exchange_delivers_each_peers_buffer():
    def job(comm):
        peers = [p for p in range(comm.world_size) if p != comm.rank]
        sends = [(p, np.full(3, 10 * comm.rank + p, dtype=complex)) for p in peers]
        recvs = [(p, np.empty(3, dtype=complex)) for p in peers]
        comm.exchange(sends, recvs)
        return {p: buffer[0].real for p, buffer in recvs}

    for rank, received in enumerate(run_simulated(4, job)):
        assert received == {p: 10 * p + rank for p in range(4) if p != rank}


def test_unmatched_receive_is_an_error():
    def job(comm):
        recv = np.empty(4, complex)
        comm.exchange([(1 - comm.rank, np.zeros(2, complex))], [(1 - comm.rank, recv)])

    with pytest.raises(SimulationError, match="no matching send"):
        run_simulated(2, job)


def test_ranks_in_different_collectives_get_an_error():
    def job(comm):
        return comm.allgather_object(1) if comm.rank == 0 else comm.allreduce([1.0])

    with pytest.raises(SimulationError, match="different collective calls .rank 0: allgather_object, rank 1: allre"):
        run_simulated(2, job)


def test_a_failing_rank_releases_the_others_and_its_error_is_raised():
    released = []

    def job(comm):
        if comm.rank == 2:
            raise ValueError("rank 2 broke")
        try:
            comm.allreduce([1.0])
        except PeerLostError:
            released.append(comm.rank)
            raise

    with pytest.raises(ValueError, match="rank 2 broke"):
        run_simulated(4, job)
    assert sorted(released) == [0, 1, 3]


def test_a_rank_that_never_arrives_times_out():
    def job(comm):
        if comm.rank == 0:
            time.sleep(1.0)  # misses the collective below by more than the timeout
            return None
        comm.allreduce([1.0])

    start = time.monotonic()
    with pytest.raises(PeerLostError, match="did not answer within 0.2 s"):
        run_simulated(2, job, timeout_s=0.2)
    assert time.monotonic() - start < 5


def test_single_rank_world_and_bad_arguments():
    comm = SimulatedCommunicator.single()
    assert comm.allreduce([2.0, 3.0]).tolist() == [2.0, 3.0] and comm.allgather_object("x") == ["x"]
    with pytest.raises(SimulationError, match="unknown reduction"):
        comm.allreduce([1.0], "min")
    with pytest.raises(SimulationError, match="world_size"):
        SimulatedWorld(0)
    with pytest.raises(SimulationError, match="rank 2 is outside"):
        SimulatedCommunicator(SimulatedWorld(2), 2)


def test_ranks_run_concurrently():
    started = threading.Barrier(3, timeout=5)

    def job(comm):
        started.wait()  # would time out if the ranks ran one after the other
        return comm.rank

    assert run_simulated(3, job) == [0, 1, 2]
