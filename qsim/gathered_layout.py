"""Gates on the CPU through a gathered copy whose qubit layout stays permuted between gates.

On the CPU the cheapest gate is one GEMM of the (L, K) rows of a buffer whose lowest index bits
are the targets, written into a second buffer. A gate on other targets is first gathered: the
state is copied into the spare buffer in a layout that puts its targets on the lowest bits (the
other qubits keep their relative order), then multiplied back into the first buffer. The state
stays in that permuted layout for the next gate instead of being scattered back, so a gate costs
one strided copy and one GEMM, against a gather, a GEMM and a strided scatter through qsim.apply's
transposed copy (the scatter's strided writes are the slowest of the three). The standard layout
is restored once, before anything but a gate reads the state.

A layout is a tuple: layout[b] is the qubit held at index bit b of the buffer.
"""
import numpy as np


def standard_layout(n_qubits: int) -> tuple:
    """The layout of a state in the engine's order: qubit b at index bit b."""
    return tuple(range(n_qubits))


def gathered_layout(layout: tuple, targets) -> tuple:
    """The layout with `targets` (ascending, GatePlan.targets) on index bits 0.. in that order and
    the other qubits above them, in the order they had in `layout`."""
    chosen = set(targets)
    return tuple(targets) + tuple(q for q in layout if q not in chosen)


def copy_to_layout(source, source_layout: tuple, target, target_layout: tuple) -> None:
    """Copy the state held in `source` (flat, in source_layout) into `target` (flat, same size,
    another buffer) in target_layout."""
    n_qubits = len(source_layout)
    bit_of = {qubit: bit for bit, qubit in enumerate(source_layout)}
    # Axis a of a (2,)*N view is index bit N-1-a.
    axes = [n_qubits - 1 - bit_of[target_layout[n_qubits - 1 - a]] for a in range(n_qubits)]
    np.copyto(target.reshape((2,) * n_qubits), source.reshape((2,) * n_qubits).transpose(axes))


def apply_gathered(product, plan, state, spare, layout: tuple) -> tuple:
    """Apply the gate of `plan` (qsim.apply.GatePlan) to the state held in `state` in `layout`;
    spare: a second buffer of the same size. product(x, out) must set out[l] = U @ x[l] on
    (L, K, 1) views, out another buffer. Returns (state, spare, layout) after the gate: the two
    buffers swap where the product lands in the spare one."""
    view_shape = (state.size // plan.k, plan.k, 1)
    if layout[:len(plan.targets)] == plan.targets:
        product(state.reshape(view_shape), spare.reshape(view_shape))
        return spare, state, layout
    moved = gathered_layout(layout, plan.targets)
    copy_to_layout(state, layout, spare, moved)
    product(spare.reshape(view_shape), state.reshape(view_shape))
    return state, spare, moved


def in_standard_layout(state, spare, layout: tuple) -> tuple:
    """(state, spare) with the state in the standard layout (copied through the spare buffer
    where `layout` is another)."""
    standard = standard_layout(len(layout))
    if layout == standard:
        return state, spare
    copy_to_layout(state, layout, spare, standard)
    return spare, state
