import numpy as np
import pytest

from circuits import CircuitError, brickwork
from circuits.brickwork import brickwork_layer_targets


@pytest.mark.parametrize("n, d", [(10, 3), (12, 5), (7, 2), (9, 4), (6, 6), (5, 1)])
def test_layers_follow_offsets_and_open_boundary(n, d):
    depth = 4
    circuit = brickwork(n, d, depth, seed=3)
    expected = []
    for layer in range(depth):
        offset = 0 if layer % 2 == 0 else d // 2
        starts = range(offset, n - d + 1, d)
        expected += [tuple(range(s, s + d)) for s in starts]
    assert [g.targets for g in circuit.gates] == expected
    assert len(circuit) == sum(len(brickwork_layer_targets(n, d, layer)) for layer in range(depth))


def test_gate_counts_and_idle_qubits():
    # N = 10, d = 3: even layers cover 0..8 (qubit 9 idle), odd layers start at 1 and cover 1..9 (qubit 0 idle).
    even = brickwork_layer_targets(10, 3, 0)
    odd = brickwork_layer_targets(10, 3, 1)
    assert even == [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
    assert odd == [(1, 2, 3), (4, 5, 6), (7, 8, 9)]
    # N = 12, d = 5: odd offset 2, only one gate fits (2..6, 7..11).
    assert brickwork_layer_targets(12, 5, 1) == [(2, 3, 4, 5, 6), (7, 8, 9, 10, 11)]
    assert brickwork_layer_targets(11, 5, 1) == [(2, 3, 4, 5, 6)]


def test_same_seed_same_circuit_other_seed_differs():
    a, b, c = brickwork(8, 3, 3, seed=7), brickwork(8, 3, 3, seed=7), brickwork(8, 3, 3, seed=8)
    assert all(np.array_equal(x.matrix, y.matrix) for x, y in zip(a.gates, b.gates))
    assert not np.allclose(a.gates[0].matrix, c.gates[0].matrix)


def test_gates_are_unitary_and_independent():
    circuit = brickwork(10, 4, 2, seed=0)
    for gate in circuit.gates:
        u = gate.matrix
        assert np.abs(u.conj().T @ u - np.eye(16)).max() < 1e-13
    assert not np.allclose(circuit.gates[0].matrix, circuit.gates[1].matrix)


def test_haar_statistics_are_plausible():
    # For Haar U of dimension n, E|U_00|^2 = 1/n and E|U_00|^4 = 2/(n(n+1)).
    circuit = brickwork(2, 2, 2000, seed=11)
    u00 = np.array([abs(g.matrix[0, 0]) ** 2 for g in circuit.gates])
    assert abs(u00.mean() - 0.25) < 0.02
    assert abs((u00**2).mean() - 2 / 20) < 0.01
    # The phase fix makes the distribution invariant: no bias of the diagonal phases toward the real axis.
    phases = np.array([np.angle(g.matrix[1, 1]) for g in circuit.gates])
    assert abs(np.cos(phases).mean()) < 0.06


@pytest.mark.parametrize(
    "args, message",
    [((4, 5, 1), "exceeds"), ((4, 2, 0), "depth"), ((0, 1, 1), "qubits"), ((4, 0, 1), "gate-size")],
)
def test_bad_arguments(args, message):
    with pytest.raises(CircuitError, match=message):
        brickwork(*args)


# -- monitored brickwork -----------------------------------------------------------------------
def same_circuit(a, b) -> bool:
    def key(op):
        return (type(op), op.name, getattr(op, "targets", None), getattr(op, "qubits", None),
                getattr(op, "clbits", None), op.condition)

    return (a.n_qubits, a.n_clbits, len(a)) == (b.n_qubits, b.n_clbits, len(b)) and all(
        key(x) == key(y) and np.array_equal(getattr(x, "matrix", 0), getattr(y, "matrix", 0))
        for x, y in zip(a.gates, b.gates))


def test_monitored_brickwork_has_brickworks_gates_and_a_measurement_after_layers():
    from circuits import Measure, monitored_brickwork

    plain = brickwork(9, 3, 5, seed=6)
    monitored = monitored_brickwork(9, 3, 5, 0.4, seed=6)
    gates = [op for op in monitored.gates if not isinstance(op, Measure)]
    assert len(gates) == len(plain.gates)
    assert all(g.targets == p.targets and np.array_equal(g.matrix, p.matrix) for g, p in zip(gates, plain.gates))
    measurements = [op for op in monitored.gates if isinstance(op, Measure)]
    clbits = [c for m in measurements for c in m.clbits]
    assert clbits == list(range(monitored.n_clbits)) and monitored.clbit_registers == (("c", monitored.n_clbits),)
    # Every measurement follows the last gate of its layer and precedes the next layer's gates.
    for position, op in enumerate(monitored.gates):
        if isinstance(op, Measure):
            layer = int(op.name.split("_L")[1])
            assert monitored.gates[position - 1].name == f"haar3_L{layer}"
            assert position + 1 == len(monitored.gates) or monitored.gates[position + 1].name == f"haar3_L{layer + 1}"
            assert list(op.qubits) == sorted(op.qubits)
    assert same_circuit(monitored_brickwork(9, 3, 5, 0.4, seed=6), monitored)
    assert not same_circuit(monitored_brickwork(9, 3, 5, 0.4, seed=7), monitored)


def test_monitored_brickwork_rates():
    from circuits import monitored_brickwork

    assert same_circuit(monitored_brickwork(8, 2, 4, 0.0, seed=1), brickwork(8, 2, 4, seed=1))
    everything = monitored_brickwork(8, 2, 4, 1.0, seed=1)
    assert everything.n_clbits == 8 * 4 and everything.is_dynamic
    # 2000 qubit-layers at p = 0.3: the count is binomial, sd ~20.5; allow 5 sd.
    count = monitored_brickwork(50, 2, 40, 0.3, seed=2).n_clbits  # circuits.MAX_QUBITS is 62
    assert abs(count - 600) < 5 * 20.5
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(CircuitError, match="--measure-rate must be between 0 and 1"):
            monitored_brickwork(8, 2, 4, bad, seed=1)


@pytest.mark.parametrize("args, message", [
    ((8.0, 2, 4), "--qubits must be an integer, got 8.0"),
    ((8, np.int64(2), 4.5), "--depth must be an integer, got 4.5"),
    ((8, True, 4), "--gate-size must be an integer, got True"),
    ((8, 2, 4, 1.5), "--seed must be an integer, got 1.5"),
    ((8, 2, 4, -1), "--seed must be >= 0, got -1"),
])
def test_non_integer_shapes_and_seeds_are_refused(args, message):
    """A float or boolean is refused, never truncated into another circuit."""
    with pytest.raises(CircuitError, match=message):
        brickwork(*args)


@pytest.mark.parametrize("rate", ["0.5", True, None])
def test_measure_rate_must_be_a_number(rate):
    from circuits import monitored_brickwork

    with pytest.raises(CircuitError, match="--measure-rate must be between 0 and 1, got"):
        monitored_brickwork(8, 2, 4, rate, seed=1)
