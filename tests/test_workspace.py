"""Workspace.run: one second try, with the pool's cache released, for an automatic workspace on the
GPU that ran out of memory; never for a fixed one or on the CPU. for_gate_call: the gate's cap."""
import pytest

from gemm_backend.workspace import GATE_WORKSPACE_LIMIT, TILE_ALIGNMENT, Workspace, even_step


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


def test_a_gate_takes_at_most_the_limit_of_an_automatic_workspace(monkeypatch):
    free = {"bytes": 40 << 30}
    monkeypatch.setattr(Workspace, "for_call", lambda self, on_gpu, release_cache=False:
                        free["bytes"] if self.automatic and on_gpu else self.nominal)
    assert Workspace(automatic=True).for_gate_call(True) == GATE_WORKSPACE_LIMIT
    free["bytes"] = 1 << 29  # less free than the limit: what is free
    assert Workspace(automatic=True).for_gate_call(True) == 1 << 29
    assert Workspace(8 << 30).for_gate_call(True) == 8 << 30  # a fixed workspace is the caller's
    assert Workspace(automatic=True).for_gate_call(False) == Workspace().nominal


def test_a_second_failure_is_raised(measured):
    def body(workspace):
        raise MemoryError("still out of memory")

    with pytest.raises(MemoryError, match="still"):
        Workspace(automatic=True).run(True, body)
    assert measured == [False, True]


@pytest.mark.parametrize("total, most", [(16384, 3640), (16384, 8191), (70000, 5000), (1000, 300)])
def test_large_tiles_are_aligned_even_and_within_the_workspace(total, most):
    step = even_step(total, most)
    pieces = -(-total // step)
    assert step % TILE_ALIGNMENT == 0 and step <= most
    assert pieces == -(-total // (most - most % TILE_ALIGNMENT))  # no more pieces than aligned ones need
    assert pieces * step - total < TILE_ALIGNMENT * pieces  # pieces as even as alignment allows


@pytest.mark.parametrize("total, most, expected", [(100, 1000, 100), (1000, 100, 100), (1000, 300, 256),
                                                   (16384, 3640, 3328), (999, 250, 250)])
def test_tile_steps(total, most, expected):
    assert even_step(total, most) == expected


def test_ozaki1_tiles_are_aligned_where_the_workspace_holds_an_aligned_side():
    """The Ozaki-I tile path cuts B's columns like Ozaki-II (even_step): a workspace that holds
    1821 columns of 16384 gets tiles of 1792, not 1821 (which ran 2.2x slower on the H100)."""
    from gemm_backend.ozaki.plan import plan_products
    from gemm_backend.ozaki.tiles import b_row_bytes, tile_sizes

    plan = plan_products(12, 2 * 16384)
    per_column = 2 * b_row_bytes(plan)
    rows, columns = tile_sizes(16384, 16384, 2, plan, 2 * 1821 * per_column + per_column)
    assert columns % TILE_ALIGNMENT == 0 and columns <= 1821
