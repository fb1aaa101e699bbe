"""Workspace.run: one second try, with the pool's cache released, for an automatic workspace on the
GPU that ran out of memory; never for a fixed one or on the CPU."""
import pytest

from gemm_backend.workspace import Workspace


@pytest.fixture
def measured(monkeypatch):
    """for_call replaced by a recorder (the real one asks cupy for the free memory)."""
    calls = []

    def for_call(self, on_gpu, release_cache=False):
        calls.append(release_cache)
        return 1000 if release_cache else 3000

    monkeypatch.setattr(Workspace, "for_call", for_call)
    return calls


def failing_once(given):
    def body(workspace):
        given.append(workspace)
        if len(given) == 1:
            raise MemoryError("out of memory in cached blocks")
        return "done"
    return body


def test_automatic_gpu_workspace_retries_once_with_the_cache_released(measured):
    given = []
    assert Workspace(automatic=True).run(True, failing_once(given)) == "done"
    assert given == [3000, 1000] and measured == [False, True]


@pytest.mark.parametrize("workspace, on_gpu", [(Workspace(automatic=True), False), (Workspace(1 << 20), True)])
def test_no_second_try_for_a_fixed_workspace_or_on_the_cpu(workspace, on_gpu, measured):
    given = []
    with pytest.raises(MemoryError):
        workspace.run(on_gpu, failing_once(given))
    assert len(given) == 1 and measured == [False]


def test_a_second_failure_is_raised(measured):
    def body(workspace):
        raise MemoryError("still out of memory")

    with pytest.raises(MemoryError, match="still"):
        Workspace(automatic=True).run(True, body)
    assert measured == [False, True]
