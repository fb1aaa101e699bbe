"""Gate fusion: runs of small gates merged into dense blocks of at most max_qubits qubits.

A gate on d <= 5 qubits costs about one pass over the state whatever d is (design brief
section 3), so fewer, wider gates mean fewer passes. Blocks are emitted in the order they were
opened. A gate may join block B only when no block opened after B touches its qubits: then
every earlier gate on those qubits sits in B or before it, every gate it overtakes acts on other
qubits (and commutes with it), and the product is exactly that of the original order.

Dynamic circuits: a measurement or reset is a block of its own that nothing joins, so no gate
moves across it on its qubits. A conditioned gate joins only a block of gates with the same
condition, opened after the last measurement writing a classical bit the condition reads; an
unconditioned gate never joins a conditioned block.
"""
import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .errors import CircuitError
from .gate import Circuit, Gate
from .operations import Measure


@dataclass
class _Block:
    qubits: set
    gates: list = field(default_factory=list)
    condition: object = None
    joinable: bool = True  # False for a measurement or reset, emitted as it is


def fuse(circuit: Circuit, max_qubits: int = 5) -> Circuit:
    """The same circuit with consecutive gates merged greedily into dense blocks of at most
    `max_qubits` qubits. A block's targets are its qubits in ascending order; its matrix is the
    exact product of its gates (complex128). A gate wider than max_qubits stays as it is.
    Everything but the operations (measured, classical bits) is carried over."""
    blocks = _blocks(circuit, max_qubits)
    return dataclasses.replace(circuit, gates=[_block_gate(block) for block in blocks])


def _blocks(circuit: Circuit, max_qubits: int) -> list:
    """fuse's blocks of `circuit`, in the order they were opened, before any matrix is built."""
    if isinstance(max_qubits, bool) or not isinstance(max_qubits, (int, np.integer)) or max_qubits < 1:
        raise CircuitError(f"fusion max_qubits must be an integer >= 1, got {max_qubits!r}")
    if not isinstance(circuit, Circuit):
        raise CircuitError(f"fuse takes a circuits.Circuit, got {type(circuit).__name__}")
    max_qubits = int(max_qubits)
    blocks = []
    newest_block_on = {}  # qubit -> index of the most recently opened block that touches it
    newest_write_of = {}  # classical bit -> index of the most recent measurement writing it
    for operation in circuit.gates:
        if isinstance(operation, Gate):
            index = _block_to_join(blocks, newest_block_on, newest_write_of, operation, max_qubits)
            qubits = operation.targets
        else:
            index, qubits = None, operation.qubits
        if index is None:
            blocks.append(_Block(set(), condition=operation.condition, joinable=isinstance(operation, Gate)))
            index = len(blocks) - 1
        blocks[index].qubits.update(qubits)
        blocks[index].gates.append(operation)
        for qubit in qubits:
            newest_block_on[qubit] = index
        if isinstance(operation, Measure):
            newest_write_of.update((clbit, index) for clbit in operation.clbits)
    return blocks


AUTO_FUSION_SIZES = (1, 2, 3, 4, 5, 6)  # the block sizes automatic fusion tries


@dataclass(frozen=True)
class FusionChoice:
    """The outcome of fuse_by_cost: the fused circuit, the block size it was fused to, and the
    estimated cost of the circuit at every block size tried (in the gate_cost callable's units)."""

    circuit: Circuit
    max_qubits: int
    estimated_cost: dict


def fuse_by_cost(circuit: Circuit, gate_cost, sizes=AUTO_FUSION_SIZES) -> FusionChoice:
    """The circuit fused to the block size in `sizes` whose fused gates cost least in total, with
    gate_cost(targets) -> float the estimated time of one gate on the qubits `targets` (e.g.
    passes over the state, from the backend that will run it). Ties go to the smaller size (fewer
    dense products to build). Measurements and resets cost the same at every size and are not
    counted. Sizes are costed on their blocks' qubits; only the chosen size's matrices are built."""
    sizes = sorted(set(sizes))
    if not sizes:
        raise CircuitError("automatic fusion needs at least one block size to try")
    costs = {}
    for size in sizes:
        costs[size] = float(sum(gate_cost(_block_targets(block)) for block in _blocks(circuit, size)
                                if block.joinable))
    best = min(sizes, key=lambda size: (costs[size], size))
    return FusionChoice(fuse(circuit, best), best, costs)


def _block_targets(block: _Block) -> tuple:
    """The targets of the gate a block becomes (_block_gate): a lone gate's own, else sorted."""
    return block.gates[0].targets if len(block.gates) == 1 else tuple(sorted(block.qubits))


def _block_to_join(blocks, newest_block_on, newest_write_of, gate, max_qubits):
    """Index of the block the gate joins, or None for a new block.

    Only blocks from `floor` (the newest block touching the targets, or for a conditioned gate
    the newest measurement writing a bit it reads) onwards are allowed; the floor block itself
    is preferred (shared qubits), then the newest later one that fits.
    """
    floor = max((newest_block_on.get(q, -1) for q in gate.targets), default=-1)
    if gate.condition is not None:
        floor = max([floor] + [newest_write_of.get(c, -1) for c in gate.condition.clbits])
    for index in [floor] + list(range(len(blocks) - 1, floor, -1)):
        if index < 0:
            continue
        block = blocks[index]
        if (block.joinable and block.condition == gate.condition
                and len(block.qubits.union(gate.targets)) <= max_qubits):
            return index
    return None


def _block_gate(block: _Block):
    if len(block.gates) == 1:
        return block.gates[0]
    targets = sorted(block.qubits)
    position = {qubit: bit for bit, qubit in enumerate(targets)}
    matrix = np.eye(1 << len(targets), dtype=np.complex128)
    for gate in block.gates:
        matrix = apply_to_rows(matrix, [position[q] for q in gate.targets], gate.matrix)
    return Gate(tuple(targets), matrix, name=f"fused{len(block.gates)}", condition=block.condition)


def apply_to_rows(matrix: np.ndarray, bits, gate_matrix: np.ndarray) -> np.ndarray:
    """(U embedded) @ matrix, where U acts on row-index bits `bits` (U's index bit j is row bit
    bits[j]) and as the identity on the other bits.

    matrix: (2^m, C) complex128; gate_matrix: (2^d, 2^d). Returns a new (2^m, C) array.
    """
    m = matrix.shape[0].bit_length() - 1
    d = len(bits)
    # Tensor axis a of a (2,)*m row view is bit m-1-a; U's most significant bit (j = d-1) first.
    axes = [m - 1 - bits[j] for j in reversed(range(d))]
    # transposes with explicit orders: np.moveaxis's axis checks cost more than these small products
    order = axes + [a for a in range(m + 1) if a not in axes]
    tensor = matrix.reshape((2,) * m + (-1,)).transpose(order)
    product = (gate_matrix @ tensor.reshape(1 << d, -1)).reshape(tensor.shape)
    return product.transpose(np.argsort(order)).reshape(matrix.shape)
