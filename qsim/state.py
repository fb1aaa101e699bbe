"""The starting state of a run, shared by the float64 engine and the double-double reference."""
import numpy as np

from .errors import SimulationError

MEMORY_FRACTION = 0.95  # share of free device memory a run may plan to use
INITIAL_NORM_TOLERANCE = 1e-8
NORM_CHUNK = 1 << 24  # amplitudes per step of squared_norm (cupy's vdot copies its conjugated operand)


def squared_norm(vector) -> float:
    """sum |v_i|^2 of a flat complex vector (numpy or cupy), with no state-sized temporary: on the
    GPU in chunks (cupy's vdot allocates the conjugate of its first operand), summed on the device."""
    if isinstance(vector, np.ndarray):
        return float(np.vdot(vector, vector).real)
    chunks = [vector[i:i + NORM_CHUNK] for i in range(0, vector.size, NORM_CHUNK)]
    return float(sum(chunk.real @ chunk.real + chunk.imag @ chunk.imag for chunk in chunks)) if chunks else 0.0


def initial_state_vector(n_qubits: int, xp, initial_state=None):
    """(2^N,) complex128 on the array module xp: |0...0>, or a copy of `initial_state`, which must
    have 2^N amplitudes and unit norm (to INITIAL_NORM_TOLERANCE)."""
    size = 1 << n_qubits
    if initial_state is None:
        state = xp.zeros(size, dtype=xp.complex128)
        state[0] = 1.0
        return state
    given = initial_state if hasattr(initial_state, "dtype") else np.asarray(initial_state)  # numpy or cupy
    if given.dtype.kind not in "iufc" or given.ndim != 1:
        raise SimulationError(f"initial_state must be a flat array of {size} numbers (amplitudes), got shape "
                              f"{given.shape} and dtype {given.dtype}")
    vector = xp.array(given, dtype=xp.complex128)
    if vector.size != size:
        raise SimulationError(f"initial_state has {vector.size} amplitudes; {n_qubits} qubits need {size}")
    norm = float(xp.linalg.norm(vector))
    if not np.isfinite(norm) or abs(norm - 1.0) > INITIAL_NORM_TOLERANCE:
        raise SimulationError(f"initial_state must have unit norm, got {norm!r}")
    return vector
