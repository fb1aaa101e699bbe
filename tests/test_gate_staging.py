import numpy as np
import pytest

from circuits import Circuit, Condition, Gate, Measure, brickwork
from gemm_backend import BackendError
from qsim import Simulator
from qsim.device import Device
from qsim.gate_staging import GateStaging
from qsim.run_loop import Action, GateStep, _upcoming_gates

from .conftest import requires_gpu
from .helpers import same_bits


class _Plan:
    def __init__(self, k):
        self.k, self.matrix = k, np.eye(k, dtype=complex)


def test_each_step_stages_the_next_gate_step_past_actions():
    gates = [GateStep(0, _Plan(128)), Action("exchange", print), GateStep(1, _Plan(4), matrix="prepared"),
             GateStep(2, _Plan(256)), Action("exchange", print)]
    assert _upcoming_gates(gates) == (gates[0], [gates[2], gates[2], gates[3], None, None])
    assert _upcoming_gates([Action("exchange", print)]) == (None, [None])
    assert _upcoming_gates([]) == (None, [])


def test_staging_is_inert_on_the_cpu():
    calls = []

    class Backend:
        def prepare(self, u):
            calls.append(u)

    staging = GateStaging(Backend(), Device("cpu"))
    step = GateStep(0, _Plan(128))
    staging.stage(step)
    assert staging.take(step) is None and not calls
    staging.close()


def _mixed_circuit() -> Circuit:
    """Gates of 7 and 8 qubits (uploaded per step, so staged one step ahead on the GPU) between
    small prepared ones."""
    return Circuit(10, brickwork(10, 7, 3, seed=4).gates + brickwork(10, 2, 2, seed=5).gates
                   + brickwork(10, 8, 1, seed=6).gates)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("backend, options", [("int8-auto", {}), ("int8-auto", {"target_error": 1e-10}),
                                              ("int8-crt-14", {}), ("int8-9", {})])
def test_gpu_runs_with_staged_gates_have_the_cpus_bits(backend, options):
    gpu, cpu = (Simulator(backend, device, progress=False, **options).run(_mixed_circuit()) for device in ("gpu", "cpu"))
    assert same_bits(gpu.state_vector(), cpu.state_vector())


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("backend", ["cublas", "fp16x2"])
def test_gpu_runs_with_staged_gates_match_the_cpu(backend):
    gpu, cpu = (Simulator(backend, device, progress=False).run(_mixed_circuit()) for device in ("gpu", "cpu"))
    tolerance = 1e-12 if backend == "cublas" else 1e-5
    assert np.abs(gpu.state_vector() - cpu.state_vector()).max() < tolerance


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_gpu_staging_prepares_every_large_gate_once_and_releases_it(monkeypatch, seed):
    """int8-auto plans each staged gate once, in prepare (on the side stream), and keeps nothing
    after the run; the conditional gate a trajectory skips was staged and is released too. The
    state has the CPU's bits."""
    import gemm_backend.ozaki.backend as ozaki_backend

    calls = {"prepare": [], "release": [], "_gate_choice": []}
    for name, log in calls.items():
        original = getattr(ozaki_backend.OzakiBackend, name)
        monkeypatch.setattr(ozaki_backend.OzakiBackend, name,
                            lambda self, u, *rest, _log=log, _f=original: (_log.append(u), _f(self, u, *rest))[1])
    low, high = tuple(range(7)), tuple(range(2, 9))
    circuit = Circuit(9, [Gate(low, _haar(128, 1)), Gate((7, 8), _haar(4, 2)), Measure((0,), (0,)),
                          Gate(high, _haar(128, 3), condition=Condition.equals((0,), 0)),
                          Gate(high, _haar(128, 4), condition=Condition.equals((0,), 1)),
                          Gate(tuple(range(1, 9)), _haar(256, 5))], n_clbits=1)
    simulator = Simulator(backend="int8-auto", device="gpu", progress=False)
    result = simulator.run(circuit, seed=seed)
    staged = [u for u in calls["prepare"] if u.shape[0] > 64]
    assert [u.shape[0] for u in staged] == [128, 128, 128, 256]  # every large gate, the skipped one too
    assert sorted(map(id, staged)) == sorted(id(u) for u in calls["release"] if u.shape[0] > 64)
    for u in staged:  # planned in prepare only: apply_batched took that choice
        assert sum(v is u for v in calls["_gate_choice"]) == 1
    assert not simulator.backend._prepared
    reference = Simulator(backend="int8-auto", device="cpu", progress=False).run(circuit, seed=seed)
    assert same_bits(result.state_vector(), reference.state_vector())


def _haar(k, seed):
    from scipy.stats import unitary_group

    return unitary_group.rvs(k, random_state=seed)


class _FakeCupy:
    """The few cupy calls GateStaging makes, on the host: streams whose events pass when told."""

    def __init__(self, fail_upload=False):
        self.log, self.fail_upload = [], fail_upload
        fake = self

        class Event:
            def __init__(self):
                self.done = False
                fake.events.append(self)

        class Stream:
            def __init__(self, non_blocking=False):
                self.non_blocking = non_blocking

            def __enter__(self):
                fake.log.append("side")
                return self

            def __exit__(self, *exc):
                fake.log.append("main")

            def record(self):
                return Event()

            def wait_event(self, event):
                fake.log.append(("wait", event))

        class Device:
            id = 0

        class Cuda:
            pass

        self.events = []
        self.cuda = Cuda()
        self.cuda.Stream, self.cuda.Device = Stream, Device
        self.cuda.get_current_stream = lambda: Stream()

    def asarray(self, matrix):
        if self.fail_upload:
            raise MemoryError("out of memory")
        return np.array(matrix)


class _Device:
    on_gpu = True

    def __init__(self, xp):
        self.xp = xp


class _Backend:
    def __init__(self):
        self.prepared, self.released = [], []

    def prepare(self, u):
        self.prepared.append(u)

    def release(self, u):
        self.released.append(u)


def test_staging_order_with_host_streams():
    """A staged gate is uploaded and prepared on the side stream, taken for its own step only
    (the main stream waits for it), kept until its gate's event passes, and released; a staged
    gate that is not taken is released when the next is staged."""
    fake, backend = _FakeCupy(), _Backend()
    staging = GateStaging(backend, _Device(fake))
    first, second, third = GateStep(0, _Plan(128)), GateStep(1, _Plan(256)), GateStep(2, _Plan(128))
    staging.stage(first)
    assert fake.log == ["side", "main"] and len(backend.prepared) == 1
    assert staging.take(second) is None  # not the staged step
    taken = staging.take(first)
    assert taken is backend.prepared[0] and fake.log[-1] == ("wait", fake.events[0])
    staging.done_with(taken)
    staging.stage(second)
    assert backend.released == []  # first's gate has not run yet
    fake.events[1].done = True  # the main stream's event after first's gate
    staging.stage(third)  # second was never taken: released; first's gate has passed: released
    assert [u.shape[0] for u in backend.released] == [256, 128] and backend.released[1] is taken
    staging.close()
    assert [u.shape[0] for u in backend.released] == [256, 128, 128]


def test_staging_that_runs_out_of_memory_leaves_the_gate_to_its_step():
    backend = _Backend()
    staging = GateStaging(backend, _Device(_FakeCupy(fail_upload=True)))
    step = GateStep(0, _Plan(128))
    staging.stage(step)
    assert staging.take(step) is None and backend.prepared == [] and backend.released == []


@pytest.mark.parametrize("error", [MemoryError("out of memory"), BackendError("no INT8 plan meets target_error")])
def test_a_gate_whose_preparation_fails_is_left_to_its_step(error):
    """prepare() failing while the gate is staged stages nothing and releases the upload: the
    gate's own step raises the error (with its position), and only if the gate runs at all."""
    class Failing(_Backend):
        def prepare(self, u):
            super().prepare(u)
            raise error

    backend = Failing()
    staging = GateStaging(backend, _Device(_FakeCupy()))
    step = GateStep(0, _Plan(128))
    staging.stage(step)
    assert staging.take(step) is None and backend.released == backend.prepared and len(backend.prepared) == 1
