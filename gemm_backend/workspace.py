"""The working memory of a backend: how much one call may take, where that figure comes from, and
how it is cut into chunks of rows.

A Workspace is either fixed (the workspace_bytes option, in bytes) or automatic (int8-auto,
int8-<s> and int8-crt-<m> without the option): then each call on the GPU takes
AUTO_WORKSPACE_FRACTION of the device memory free at that moment (cupy's pool counted as free), at
least MIN_AUTO_WORKSPACE, and DEFAULT_WORKSPACE_BYTES on the CPU; a gate's call (for_gate_call) at
most GATE_WORKSPACE_LIMIT, so that a simulation holds its state and little more. The simulator
leaves reserved() free for it beside the state. Backends give their cost per row of A (workspace_bytes_per_row);
rows() turns it into the rows one chunk holds, even_step into tile sides.
"""
import numbers
from dataclasses import dataclass

from .arrays import cupy_module
from .errors import BackendError

DEFAULT_WORKSPACE_BYTES = 1 << 30
MIN_AUTO_WORKSPACE = 64 << 20
AUTO_WORKSPACE_FRACTION = 0.75
# An automatic workspace serving one gate takes at most this, so that a simulation holds its state
# plus 2 GiB (issue 24: the rest is the run's own, about 80 MB at N = 30). Ozaki-II's gates count
# everything they allocate in it; at N = 30 their chunks cost a few percent of time against 4 GiB
# (BENCHMARKS.md round 14).
GATE_WORKSPACE_LIMIT = 15 << 27
AUTO = "auto"  # how an automatic workspace is reported in a backend's options
TILE_ALIGNMENT = 256  # tile sides in multiples of this where the workspace allows (even_step)


@dataclass(frozen=True)
class Workspace:
    """nominal: bytes of a fixed workspace, or of an automatic one on the CPU (and the figure tiles
    are planned with before a call). automatic: size each GPU call from the free memory."""

    nominal: int = DEFAULT_WORKSPACE_BYTES
    automatic: bool = False

    @classmethod
    def from_option(cls, workspace_bytes, automatic_allowed: bool) -> "Workspace":
        """The workspace of a backend's workspace_bytes option: None means automatic where the
        backend allows it; otherwise a positive integer of bytes, or a clear BackendError."""
        if workspace_bytes is None and automatic_allowed:
            return cls(DEFAULT_WORKSPACE_BYTES, automatic=True)
        if isinstance(workspace_bytes, bool) or not isinstance(workspace_bytes, numbers.Integral) or workspace_bytes <= 0:
            raise BackendError(f"workspace_bytes must be a positive integer (bytes), got {workspace_bytes!r}")
        return cls(int(workspace_bytes))

    def for_call(self, on_gpu: bool, release_cache: bool = False) -> int:
        """Bytes one call may take now: the nominal size, or on the GPU for an automatic
        workspace AUTO_WORKSPACE_FRACTION of the memory free now. release_cache: give the pool's
        cached blocks back to the device first, for a call whose tiles did not fit in them (a
        cached block split by earlier calls can serve only pieces)."""
        if not self.automatic or not on_gpu:
            return self.nominal
        cp = cupy_module()
        pool = cp.get_default_memory_pool()
        if release_cache:
            pool.free_all_blocks()
        free = cp.cuda.runtime.memGetInfo()[0] + pool.free_bytes()
        return max(MIN_AUTO_WORKSPACE, int(free * AUTO_WORKSPACE_FRACTION))

    def for_gate_call(self, on_gpu: bool) -> int:
        """for_call for a gate of the simulator: an automatic workspace at most GATE_WORKSPACE_LIMIT."""
        size = self.for_call(on_gpu)
        return min(size, GATE_WORKSPACE_LIMIT) if self.automatic else size

    def run(self, on_gpu: bool, body):
        """body(bytes), given the bytes one call may take now (for_call). With an automatic
        workspace on the GPU, a body that runs out of memory runs once more with the pool's cached
        blocks given back and the size measured again: blocks that earlier calls split are counted
        as free but serve only pieces. So body must redo all of its work, and its results must not
        depend on the bytes it is given (only its tiling may)."""
        try:
            return body(self.for_call(on_gpu))
        except MemoryError:  # cupy's OutOfMemoryError is one
            if not (self.automatic and on_gpu):
                raise
            return body(self.for_call(on_gpu, release_cache=True))

    def reserved(self) -> int:
        """Bytes the caller must leave free beside the state (an automatic workspace sizes itself
        from what is left at call time, at least MIN_AUTO_WORKSPACE)."""
        return MIN_AUTO_WORKSPACE if self.automatic else self.nominal

    def rows(self, bytes_per_row: int, on_gpu: bool, held_bytes: int = 0) -> int:
        """Rows of bytes_per_row bytes each that one chunk of a call holds beside held_bytes
        (at least one)."""
        return max(1, (self.for_call(on_gpu) - held_bytes) // bytes_per_row)

    def report(self):
        """The option's value for reports: "auto" or the bytes."""
        return AUTO if self.automatic else self.nominal


def even_step(total: int, most: int) -> int:
    """A step of at most `most` for `total` items: `total` itself when it fits; else the even
    split into the fewest pieces of at most `most` (`most` first cut to a multiple of
    TILE_ALIGNMENT when it holds one, which may cost a piece), rounded up to that multiple. The
    INT8 GEMMs of unaligned tiles run slower (BENCHMARKS.md rounds 4 and 9)."""
    if total <= most:
        return total
    if most >= TILE_ALIGNMENT:
        most -= most % TILE_ALIGNMENT
        step = -(-total // -(-total // most))
        return min(most, -(-step // TILE_ALIGNMENT) * TILE_ALIGNMENT)
    return -(-total // -(-total // most))
