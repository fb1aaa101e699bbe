"""QsimBackend's run options: defaults, AerSimulator's spellings, checks and parameter binds.

| option | values |
| --- | --- |
| shots | int >= 1; None means 1024, as in Aer |
| seed_simulator | int in [0, 2^62) or None (a fresh seed, reported per experiment) |
| backend, backend_options | the GEMM backend's registry name and its keyword options |
| device | "auto", "cpu", "gpu" (Aer's "CPU", "GPU" accepted) |
| fusion_max_qubits | "auto" or a block size (0: no fusion) |
| memory | per-shot outcomes in the result |
| statevector | the final state in the result as a qiskit Statevector (a dynamic circuit's: the last shot's) |
| method | Aer's "automatic" or "statevector" (the only method here) |
| precision | "double" (states are complex128; "single" is refused) |
| max_parallel_threads | None or 0 (all threads numpy's BLAS was started with); other counts are refused |
| max_branch_states | states a dynamic circuit's shot branching may hold at once (None: what fits) |
| max_while_iterations | int >= 1: iterations a while loop may run per shot (default 100); beyond, the run stops with an error |
| parameter_binds (run only) | one {Parameter: [values, ...]} per circuit: one experiment per value |

Any other option, Aer's noise_model included, is refused with one line naming it.
"""
from circuits.qiskit_import import MAX_WHILE_ITERATIONS

from .errors import SimulationError
from .fusion import AUTO, fusion_setting

SEED_LIMIT = 2**62  # seeds stay below it so that seed + circuit index fits in an int64
AER_DEFAULT_SHOTS = 1024
_METHODS = ("automatic", "statevector")


def default_options() -> dict:
    return {"shots": AER_DEFAULT_SHOTS, "seed_simulator": None, "backend": "cublas", "backend_options": None,
            "device": "auto", "fusion_max_qubits": AUTO, "memory": False, "statevector": False,
            "method": "automatic", "precision": "double", "max_parallel_threads": None, "max_branch_states": None,
            "max_while_iterations": MAX_WHILE_ITERATIONS}


def refuse_unknown(fields: dict, known, where: str) -> None:
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise SimulationError(f"{where} takes no option {', '.join(unknown)} (not available in this simulator); "
                              f"it takes {', '.join(sorted(known))}")


def checked_settings(settings: dict) -> dict:
    """The settings with Aer's spellings normalised; SimulationError naming a bad option."""
    settings = dict(settings)
    if settings["shots"] is None:
        settings["shots"] = AER_DEFAULT_SHOTS
    check_int(settings["shots"], "shots", 1)
    try:
        fusion_setting(settings["fusion_max_qubits"], "fusion_max_qubits")
    except Exception as exc:  # CircuitError
        raise SimulationError(str(exc)) from None
    if settings["seed_simulator"] is not None:
        check_int(settings["seed_simulator"], "seed_simulator", 0)
        if settings["seed_simulator"] >= SEED_LIMIT:
            raise SimulationError(f"seed_simulator must be below 2^62, got {settings['seed_simulator']}")
    if settings["backend_options"] is not None and not isinstance(settings["backend_options"], dict):
        raise SimulationError(f"backend_options must be a dict, got {type(settings['backend_options']).__name__}")
    for flag in ("memory", "statevector"):
        if not isinstance(settings[flag], bool) and type(settings[flag]).__name__ != "bool_":
            raise SimulationError(f"{flag} must be True or False, got {settings[flag]!r}")
    if isinstance(settings["device"], str) and settings["device"] in ("CPU", "GPU"):
        settings["device"] = settings["device"].lower()
    if settings["method"] not in _METHODS:
        raise SimulationError(f"method {settings['method']!r} is not available: this is a state-vector simulator; "
                              "use method='statevector' or 'automatic'")
    if settings["precision"] != "double":
        raise SimulationError(f"precision {settings['precision']!r} is not available: states are complex128; "
                              "use precision='double' (backend='cgemm' runs complex64 gate products)")
    if settings["max_parallel_threads"] not in (None, 0):
        raise SimulationError(f"max_parallel_threads={settings['max_parallel_threads']!r} cannot be honoured: "
                              "numpy's BLAS fixes its threads at start; set OMP_NUM_THREADS before starting Python")
    if settings["max_branch_states"] is not None:
        check_int(settings["max_branch_states"], "max_branch_states", 1)
    check_int(settings["max_while_iterations"], "max_while_iterations", 1)
    return settings


def bound_circuits(circuits: list, parameter_binds) -> list:
    """[(circuit, bound circuit), ...]: Aer's parameter_binds (one {Parameter: [values]} per
    circuit, every list of one length m) give m experiments per circuit, in value order."""
    if parameter_binds is None:
        return [(qc, qc) for qc in circuits]
    if not isinstance(parameter_binds, (list, tuple)) or len(parameter_binds) != len(circuits):
        raise SimulationError(f"parameter_binds needs one dict per circuit ({len(circuits)}), got {parameter_binds!r}")
    experiments = []
    for position, (qc, binds) in enumerate(zip(circuits, parameter_binds)):
        if not isinstance(binds, dict):
            raise SimulationError(f"parameter_binds[{position}] must be a dict {{Parameter: [values]}}, "
                                  f"got {type(binds).__name__}")
        lengths = {len(values) if isinstance(values, (list, tuple)) else -1 for values in binds.values()}
        if len(lengths) > 1 or -1 in lengths:
            raise SimulationError(f"parameter_binds[{position}] must map every parameter to a list of values of "
                                  f"one length, got lengths {sorted(lengths)}")
        count = lengths.pop() if lengths else 1
        for index in range(count):
            try:
                bound = qc.assign_parameters({p: values[index] for p, values in binds.items()})
            except Exception as exc:  # qiskit's CircuitError: a parameter not in the circuit, a bad value
                raise SimulationError(f"parameter_binds[{position}]: {' '.join(str(exc).split())}") from None
            experiments.append((qc, bound))
    return experiments


def check_int(value, what: str, minimum: int) -> None:
    if isinstance(value, bool) or not hasattr(value, "__index__") or value < minimum:
        raise SimulationError(f"{what} must be an integer >= {minimum}, got {value!r}")
