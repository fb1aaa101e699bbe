"""Where a gate's columns sit in a flat state: the layout every in-place gate kernel addresses.

A state of 2^n amplitudes and a gate on the sorted bit positions `targets` (t_0 < ... < t_{d-1})
split into 2^(n-d) columns of K = 2^d amplitudes: column c holds the amplitudes whose index has
the bits of c at the non-target positions (in order) and the gate index a at the targets (bit i
of a at t_i). The kernels (kernels/gate_tiles.cuh, TargetLayout) take the targets packed six bits
each into one 64-bit argument. A C-contiguous (L, K, R) view is the case t_i = log2 R + i.
"""
from .errors import BackendError

BITS_PER_TARGET = 6
MAX_KERNEL_TARGETS = 64 // BITS_PER_TARGET
MAX_STATE_BITS = 1 << BITS_PER_TARGET
# Shared memory a gate kernel reserves for its address tables (gate_tiles.cuh's AddressTables:
# K <= 64 amplitude offsets of 8 bytes, up to 32 in-tile column offsets of 4 bytes).
ADDRESS_TABLE_BYTES = 640


def contiguous_targets(k: int, n_right: int) -> tuple:
    """The targets of an (L, K, R) view: log2 R .. log2 R + log2 K - 1."""
    low = n_right.bit_length() - 1
    return tuple(range(low, low + k.bit_length() - 1))


def view_layout(x) -> tuple:
    """(flat x, targets) for a C-contiguous (L, K, R) cupy or numpy view with K and R powers of two."""
    n_left, k, n_right = x.shape
    if k & (k - 1) or n_right & (n_right - 1) or not x.flags.c_contiguous:
        raise BackendError("the gate kernels need C-contiguous (L, K, R) views with K and R each a power of two")
    return x.reshape(-1), contiguous_targets(k, n_right)


def check_layout(state, k: int, targets) -> tuple:
    """targets as a tuple after checking that they address K-amplitude columns of the flat state:
    log2 K distinct bit positions in ascending order, the state's size a multiple of 2^(top + 1)
    for the top target (a power of two for a whole state; L K R for an (L, K, R) view, any L)."""
    size = state.size
    targets = tuple(int(t) for t in targets)
    if state.ndim != 1 or not state.flags.c_contiguous:
        raise BackendError(f"the gate kernels need a flat C-contiguous state, got shape {state.shape}")
    if 1 << len(targets) != k or len(targets) > MAX_KERNEL_TARGETS:
        raise BackendError(f"a K = {k} gate needs {k.bit_length() - 1} targets (at most {MAX_KERNEL_TARGETS}), "
                           f"got {targets}")
    n_bits = max(size, 1).bit_length() - 1
    if (any(b <= a for a, b in zip(targets, targets[1:])) or targets[0] < 0 or targets[-1] >= MAX_STATE_BITS
            or size % (2 << targets[-1])):
        raise BackendError(f"targets must be ascending distinct bits below {n_bits} (the state's size a multiple of "
                           f"2^(top + 1)), got {targets}")
    return targets


def launch_layout(x, out, k: int, targets) -> tuple:
    """(flat x, flat out, targets) for a kernel launch: without targets x and out are (L, K, R)
    views (view_layout), with them flat states; both checked against the targets (check_layout)."""
    if targets is None:
        (x, targets), out = view_layout(x), view_layout(out)[0]
    targets = check_layout(x, k, targets)
    check_layout(out, k, targets)
    return x, out, targets


def pack_targets(targets) -> int:
    """The kernels' 64-bit argument: target i (gate index bit i, in the gate's order) in bits
    6 i .. 6 i + 5."""
    return sum(int(t) << (BITS_PER_TARGET * i) for i, t in enumerate(targets))


def run_length(targets) -> int:
    """Columns in a contiguous run before the lowest target (2^t_0): the stride R of a view, which
    the launch heuristics measured on."""
    return 1 << targets[0]
