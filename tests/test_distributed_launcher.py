"""The multi-process launcher on the CPU: worker processes with a stand-in communicator, so the
parent's watch (results, errors, lost peers, timeouts) is tested without GPUs or NCCL."""
import multiprocessing
import os
import time

import pytest

from gemm_backend.arrays import gpu_available
from qsim import SimulationError
from qsim.distributed.launcher import launch, one_line

pytestmark = pytest.mark.usefixtures("workers_import_tests")

SLEEP_S = 60  # how long a healthy worker waits for a peer that never comes


class StandInCommunicator:
    def __init__(self, rank, world_size):
        self.rank, self.world_size = rank, world_size

    def close(self):
        pass


def stand_in(rank, world_size):
    return StandInCommunicator(rank, world_size)


def square(comm, value):
    return comm.rank, comm.world_size, value * value, os.environ.get("NCCL_NVLS_ENABLE")


def fails_on_rank_1(comm):
    if comm.rank == 1:
        raise SimulationError("rank 1 ran out of luck\n(second line)")
    time.sleep(SLEEP_S)


def rank_1_dies(comm):
    if comm.rank == 1:
        os._exit(9)
    time.sleep(SLEEP_S)


def hangs(comm):
    time.sleep(SLEEP_S)


def returns_something_unpicklable(comm):
    return lambda: None


def test_rank_0_value_comes_back_and_nccl_multicast_is_off():
    assert launch(2, square, (7,), connect=stand_in) == (0, 2, 49, "0")


def timed_failure(job, **options):
    start = time.monotonic()
    with pytest.raises(SimulationError) as error:
        launch(2, job, connect=stand_in, **options)
    assert time.monotonic() - start < SLEEP_S / 2, "the healthy rank must be stopped, not waited for"
    assert multiprocessing.active_children() == []
    return str(error.value)


def test_an_error_on_one_rank_ends_every_rank_with_one_line():
    message = timed_failure(fails_on_rank_1)
    assert message == "rank 1: rank 1 ran out of luck (second line); every rank was stopped"


def test_a_lost_peer_ends_every_rank():
    assert "rank 1 exited with code 9 without a result (lost peer)" in timed_failure(rank_1_dies)


def test_timeout_stops_every_rank():
    assert "did not finish within 2 s (ranks [0, 1] still running)" in timed_failure(hangs, timeout_s=2)


def test_a_result_that_cannot_be_sent_is_an_error():
    assert "rank 0:" in timed_failure(returns_something_unpicklable)


def test_world_size_is_checked_before_starting_processes():
    with pytest.raises(SimulationError, match="power of two"):
        launch(3, square, (1,), connect=stand_in)


@pytest.mark.skipif(gpu_available(), reason="a GPU is present")
def test_nccl_without_gpu_is_a_clear_error():
    with pytest.raises(SimulationError, match="NCCL needs a CUDA GPU"):
        launch(2, square, (1,))


def test_one_line_messages():
    assert one_line(SimulationError("a\n b")) == "a b"
    assert one_line(RuntimeError("x")) == "RuntimeError: x"
    assert one_line(KeyboardInterrupt()) == "KeyboardInterrupt"
