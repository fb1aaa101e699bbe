"""int8-auto's matmul on the GPU with its scan beside the product it will most likely choose.

The choice of scheme and counts (rules.Fp64Rule.matmul_choice) needs the scan's statistics, so
on the plain path the GPU reads both operands, then waits while the host chooses, and only then
starts the product. When the last product of the same shape took Ozaki-II, the same moduli are
the likely choice again (the choice follows the operands' spans, which the inputs of one shape
in one program tend to share). Then that product runs on the current stream while the scan runs
on a side stream and the host chooses. If the choice is the guess, the product is the result:
the product the plain path would have run, the same bits. Otherwise it is dropped and the chosen
product runs after it.
"""
import collections
import functools

from ..arrays import cupy_module
from ..errors import BackendError

# Shapes whose last Ozaki-II choice is kept (least recently used dropped beyond this).
REMEMBERED_SHAPES = 32


class Ozaki2Guesses:
    """The last Ozaki-II Choice per product shape (m, k, n, is_complex)."""

    def __init__(self):
        self._choices = collections.OrderedDict()

    def get(self, shape: tuple):
        return self._choices.get(shape)

    def remember(self, shape: tuple, choice, is_ozaki2: bool) -> None:
        """Keep `choice` as the guess for `shape` when it is Ozaki-II, else forget the shape."""
        self._choices.pop(shape, None)
        if is_ozaki2:
            self._choices[shape] = choice
            while len(self._choices) > REMEMBERED_SHAPES:
                self._choices.popitem(last=False)


def same_product(choice, guess) -> bool:
    """Whether two Ozaki-II choices run the same product (scheme, moduli and their kind)."""
    return (choice.scheme, choice.moduli, choice.gaussian) == (guess.scheme, guess.moduli, guess.gaussian)


def product_beside_scan(launch_scan, product):
    """(out, scanned): product() on the current stream while launch_scan() (span_scan.launch_scan)
    runs on a side stream, which first waits for the work queued so far (the operands); scanned
    is its collect(). The scan's errors (NaN or Inf in an operand) come first: a BackendError of
    the product is raised only when the scan found nothing."""
    cp = cupy_module()
    side = _side_stream(cp.cuda.Device().id)
    side.wait_event(cp.cuda.get_current_stream().record())
    with side:
        pending = launch_scan()
    try:
        out, failure = product(), None
    except BackendError as error:
        out, failure = None, error
    with side:
        scanned = pending.collect()
    if failure is not None:
        raise failure
    return out, scanned


@functools.lru_cache(maxsize=None)
def _side_stream(device_id: int):
    """One side stream per device (device_id keys the cache; the stream is made on the current device)."""
    return cupy_module().cuda.Stream(non_blocking=True)
