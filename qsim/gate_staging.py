"""Gates staged one step ahead on the GPU.

A gate above run_loop.PREPARED_MAX_DIM is uploaded when its step comes. Uploading it then waits
for the device to finish the gate before, and the backend's host work for it (int8-auto's plan of
a 9-qubit gate takes about 13 ms) follows with the device idle. GateStaging does both for the
next such gate on a side stream while the device runs the current one: the host work overlaps
the device's, and the main stream waits only for the staged upload itself (an event).

Memory: a staged matrix is allocated on the side stream, and cupy's pool hands memory freed there
to the side stream's next allocation at once. So a matrix, and what the backend prepared from it,
stays referenced until an event recorded after its gate's kernels has passed on the main stream.
"""
import functools

from gemm_backend import BackendError


@functools.lru_cache(maxsize=None)
def _side_stream(cp, device_id: int):
    """One side stream per device for every run: cupy's pool keeps the blocks freed on a stream
    for that stream, so a new stream per run would strand them (a batch of trajectories runs
    thousands)."""
    return cp.cuda.Stream(non_blocking=True)


class GateStaging:
    """Uploads and prepares (backend.prepare) the gate of a step on a side stream; take() hands
    it to the main stream, done_with() keeps it until its gate has run, close() releases what is
    left (backend.release). Inert on the CPU: nothing is staged and take() returns None."""

    def __init__(self, backend, device):
        self.backend = backend
        self._cp = device.xp if device.on_gpu else None
        self._stream = _side_stream(self._cp, self._cp.cuda.Device().id) if self._cp is not None else None
        self._staged = None  # (step, matrix, event on the side stream after its upload and preparation)
        self._retired = []  # (matrix, event on the main stream after its gate)

    def stage(self, step) -> None:
        """Upload and prepare the gate of step (a run_loop.GateStep whose matrix is uploaded when it
        runs; others, and None, are ignored), replacing a staged gate that was not taken."""
        if self._stream is None or step is None or step.matrix is not None or step.plan is None:
            return
        self._drop_staged()
        self._release_passed()
        matrix = None
        try:
            with self._stream:
                matrix = self._cp.asarray(step.plan.matrix)
                self.backend.prepare(matrix)
                ready = self._stream.record()
        except (MemoryError, BackendError):  # cupy's OutOfMemoryError is a MemoryError
            # not staged: the gate is uploaded and prepared when its step comes, which reports
            # the error with the operation's position, and only if the gate runs at all (a
            # trajectory may skip it)
            if matrix is not None:
                self.backend.release(matrix)
            return
        self._staged = (step, matrix, ready)

    def take(self, step):
        """The staged matrix of step, the main stream ordered after its upload; None when step's
        gate is not the one staged."""
        if self._staged is None or self._staged[0] is not step:
            return None
        _, matrix, ready = self._staged
        self._staged = None
        self._cp.cuda.get_current_stream().wait_event(ready)
        return matrix

    def done_with(self, matrix) -> None:
        """The gate of a taken matrix is enqueued on the main stream: keep it until that work has run."""
        self._retired.append((matrix, self._cp.cuda.get_current_stream().record()))

    def close(self) -> None:
        """Release every matrix (call after the device has finished the run's work)."""
        self._drop_staged()
        for matrix, _ in self._retired:
            self.backend.release(matrix)
        self._retired.clear()

    def _drop_staged(self) -> None:
        # only the side stream used it: its memory is reused in that stream's order
        if self._staged is not None:
            self.backend.release(self._staged[1])
            self._staged = None

    def _release_passed(self) -> None:
        waiting = []
        for matrix, event in self._retired:
            if event.done:
                self.backend.release(matrix)
            else:
                waiting.append((matrix, event))
        self._retired = waiting
