"""The double-double reference: a circuit simulated with ~106-bit amplitudes.

The state is a pair (hi, lo) of flat complex128 arrays, amplitude = hi + lo (real and
imaginary parts separately). Gates are planned exactly as the float64 engine plans them
(qsim.apply.plan_gate: targets sorted, matrix permuted, which only moves entries) and applied
in place by gemm_backend.doubledouble.apply_batched_dd, with the gate matrix taken exactly.
Memory: 32 bytes per amplitude plus a bounded workspace (N = 30: 32 GiB).
"""
from tqdm.auto import tqdm

from circuits import Circuit, CircuitError
from gemm_backend.arrays import array_module
from gemm_backend.doubledouble_gate import apply_batched_dd

from .apply import apply_plan_pair, plan_gate
from .device import Device, resolve_device
from .errors import SimulationError
from .state import MEMORY_FRACTION, initial_state_vector

REFERENCE_BYTES_PER_AMPLITUDE = 32  # hi and lo, complex128 each
DEFAULT_WORKSPACE_BYTES = 1 << 30
GIB = float(1 << 30)


def reference_state(circuit: Circuit, device="cpu", progress=None, initial_state=None, *,
                    workspace_bytes: int = DEFAULT_WORKSPACE_BYTES):
    """Run `circuit` in double-double from |0...0> (or from `initial_state`).

    device: "cpu", "gpu", "auto" or a qsim.device.Device. progress: tqdm bar (None: only on a
    terminal). initial_state: (2^N,) complex unit vector, taken exactly (lo = 0).
    workspace_bytes: scratch for non-contiguous gates (copied out in chunks) and CPU blocks.
    Returns (hi, lo): (2^N,) complex128 arrays on the device.
    Raises SimulationError, before allocating, when the pair does not fit in memory.
    """
    if not isinstance(circuit, Circuit):
        raise CircuitError(f"reference_state() takes a circuits.Circuit, got {type(circuit).__name__}")
    if circuit.is_dynamic:
        raise SimulationError("the double-double reference runs circuits without mid-circuit measurement, reset "
                              "or classical conditions; this circuit has them (its state depends on the trajectory)")
    if workspace_bytes <= 0:
        raise SimulationError(f"workspace_bytes must be positive, got {workspace_bytes}")
    device = device if isinstance(device, Device) else resolve_device(device)
    plans = [plan_gate(circuit.n_qubits, gate.targets, gate.matrix) for gate in circuit.gates]
    check_reference_memory(circuit.n_qubits, device, plans, workspace_bytes)
    hi, lo = _initial_pair(circuit.n_qubits, device, initial_state)
    bar = tqdm(total=len(plans), unit="gate", desc="dd reference", leave=False,
               disable=None if progress is None else not progress)
    for plan in plans:
        apply_reference_gate(plan, hi, lo, workspace_bytes)
        bar.update(1)
    bar.close()
    device.synchronize()
    return hi, lo


def apply_reference_gate(plan, hi, lo, workspace_bytes: int = DEFAULT_WORKSPACE_BYTES) -> None:
    """One planned gate (qsim.apply.plan_gate) on the (hi, lo) pair, in place, in double-double;
    non-contiguous targets go through chunk copies of at most workspace_bytes."""
    u = array_module(hi).asarray(plan.matrix)

    def product(x_hi, x_lo):
        apply_batched_dd(u, x_hi, x_lo, workspace_bytes=workspace_bytes)

    apply_plan_pair(plan, hi, lo, product, max(1, workspace_bytes // REFERENCE_BYTES_PER_AMPLITUDE))


def reference_bytes(n_qubits: int, plans, workspace_bytes: int) -> int:
    """Bytes reference_state allocates: the (hi, lo) pair, plus chunk copies of both when a
    gate has non-contiguous targets (at most workspace_bytes, never more than the pair)."""
    pair = REFERENCE_BYTES_PER_AMPLITUDE << n_qubits
    transposes = any(not plan.contiguous for plan in plans)
    return pair + (min(workspace_bytes, pair) if transposes else 0)


def check_reference_memory(n_qubits: int, device: Device, plans, workspace_bytes: int, held_bytes: int = 0) -> None:
    """SimulationError unless the reference fits in the device's free memory less held_bytes
    (memory something else will still hold while the reference runs, e.g. a run's final state)."""
    needed = reference_bytes(n_qubits, plans, workspace_bytes)
    available = int(device.free_bytes() * MEMORY_FRACTION) - held_bytes
    if needed > available:
        pair = REFERENCE_BYTES_PER_AMPLITUDE << n_qubits
        held = f" beside the {held_bytes / GIB:.2f} GiB state of the run it checks" if held_bytes else ""
        raise SimulationError(
            f"the double-double reference for {n_qubits} qubits needs {needed / GIB:.2f} GiB on the "
            f"{device.kind} (hi and lo state arrays, {pair / GIB:.2f} GiB together, plus workspace), "
            f"but only {max(available, 0) / GIB:.2f} GiB is available{held}; use fewer qubits or a device with "
            "more memory"
        )


def check_reference_fits(circuit: Circuit, device: Device, held_bytes: int = 0,
                         workspace_bytes: int = DEFAULT_WORKSPACE_BYTES) -> None:
    """reference_state's memory check, done before the run it will check (which then holds
    held_bytes, its final state, while the reference runs), so a refusal costs no run time."""
    plans = [plan_gate(circuit.n_qubits, gate.targets, gate.matrix) for gate in circuit.dense_gates()]
    check_reference_memory(circuit.n_qubits, device, plans, workspace_bytes, held_bytes)


def _initial_pair(n_qubits: int, device: Device, initial_state):
    hi = initial_state_vector(n_qubits, device.xp, initial_state)
    return hi, device.xp.zeros_like(hi)
