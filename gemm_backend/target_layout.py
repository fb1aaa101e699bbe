"""Where a gate's columns sit in a flat state: the layout every in-place gate kernel addresses.

A state of 2^n amplitudes and a gate on the bit positions `targets` (t_0, ..., t_{d-1}; the engine
passes them sorted) split into 2^(n-d) columns of K = 2^d amplitudes: column c holds the
amplitudes whose index has the bits of c at the non-target positions (in order) and the gate
index a at the targets (bit i of a at t_i). The kernels (kernels/gate_tiles.cuh, TargetLayout) take the targets packed six bits
each into one 64-bit argument. A C-contiguous (L, K, R) view is the case t_i = log2 R + i.
"""
from .arrays import array_module
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


def has_view_layout(x) -> bool:
    """Whether the (L, K, R) view x is C-contiguous with K and R powers of two (view_layout takes it)."""
    _, k, n_right = x.shape
    return not (k & (k - 1) or n_right & (n_right - 1)) and x.flags.c_contiguous


def view_layout(x) -> tuple:
    """(flat x, targets) for a C-contiguous (L, K, R) cupy or numpy view with K and R powers of two."""
    if not has_view_layout(x):
        raise BackendError("the gate kernels need C-contiguous (L, K, R) views with K and R each a power of two")
    return x.reshape(-1), contiguous_targets(*x.shape[1:])


def check_layout(state, k: int, targets) -> tuple:
    """targets as a tuple after checking that they address K-amplitude columns of the flat state:
    log2 K distinct bit positions (gate index bit i is state bit targets[i]; the engine passes
    them ascending, packed launches put extra qubits last), the state's size a multiple of
    2^(top + 1) for the top target (a power of two for a whole state; L K R for an (L, K, R)
    view, any L)."""
    size = state.size
    targets = tuple(int(t) for t in targets)
    if state.ndim != 1 or not state.flags.c_contiguous:
        raise BackendError(f"the gate kernels need a flat C-contiguous state, got shape {state.shape}")
    if 1 << len(targets) != k or len(targets) > MAX_KERNEL_TARGETS:
        raise BackendError(f"a K = {k} gate needs {k.bit_length() - 1} targets (at most {MAX_KERNEL_TARGETS}), "
                           f"got {targets}")
    n_bits = max(size, 1).bit_length() - 1
    if (len(set(targets)) != len(targets) or min(targets) < 0 or max(targets) >= MAX_STATE_BITS
            or size % (2 << max(targets))):
        raise BackendError(f"targets must be distinct bits below {n_bits} (the state's size a multiple of "
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
    """Columns in a contiguous run before the lowest target (2^min(targets)): the stride R of a
    view, which the launch heuristics measured on."""
    return 1 << min(targets)


def packing_qubits(targets, n_amplitudes: int, columns: int):
    """The qubits whose values tell apart the `columns` (a power of two) small columns packed into
    one kernel column under I (x) U: the lowest non-target qubits after the lowest one (that one
    is kept for the lanes, which keeps loads coalesced), or None when the state (n_amplitudes, an
    (L, K, R) view's L K R included) has too few whole qubits."""
    needed = columns.bit_length() - 1
    whole_qubits = (n_amplitudes & -n_amplitudes).bit_length() - 1
    free = [q for q in range(whole_qubits) if q not in targets]
    return tuple(free[1:1 + needed]) if len(free) > needed else None


def packed_gate(u, targets, n_amplitudes: int, k: int):
    """(I (x) u, targets then packing qubits) for a kernel of size k (> u's): the columns of u at
    the packing qubits' values side by side, the packing qubits on the top gate index bits; or
    None where the state has too few qubits."""
    columns = k // u.shape[0]
    packing = packing_qubits(targets, n_amplitudes, columns)
    if packing is None:
        return None
    xp = array_module(u)
    return xp.kron(xp.eye(columns, dtype=xp.complex128), u), tuple(targets) + packing
