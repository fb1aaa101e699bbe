"""The one table mapping backend names to implementations.

Modules are imported on first use, so a backend whose dependencies are missing does not
stop the others from loading.
"""
import importlib
import inspect
import re
from dataclasses import dataclass, field

from .arrays import gpu_available
from .errors import BackendError

INT8_SPLITS = range(3, 19)
CRT_MODULI = range(8, 21)  # int8-crt-<m>: M = 2^64 .. 2^156, bound ~1e-8 .. 1e-21 (crt.error_bound)
GAUSSIAN_MODULI = range(8, 23)  # int8-gcrt-<m>: M = 2^62 .. 2^152 (every Gaussian modulus below 256)


def moduli_counts(gaussian: bool) -> range:
    """The numbers of moduli an Ozaki-II plan may take: GAUSSIAN_MODULI or CRT_MODULI."""
    return GAUSSIAN_MODULI if gaussian else CRT_MODULI


# -- options: how each is written as text, and its command-line flag ---------------------------
def _read_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError("true or false (any case), or 1 or 0")


def _read_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("an integer") from None


def _read_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError("a number") from None


def _read_int_or_auto(text: str):
    return "auto" if text == "auto" else _read_int(text)


@dataclass(frozen=True)
class OptionSpec:
    """One backend option. read: its value from text (name@option=value labels, scripts' --option),
    raising ValueError naming what it expects; flag: its `qsim run` / `qsim compare` flag (None: only
    in a label), whose value times flag_unit (named flag_unit_name) is the option's value."""

    read: object
    help: str
    flag: str = None
    flag_unit: int = 1
    flag_unit_name: str = ""


OPTION_SPECS = {
    "bound": OptionSpec(str, "fp64 (default: as accurate as FP64 GEMM on the same inputs) or worst-case (FP64 "
                        "GEMM's bound gamma_n as the target, the default before the contract)"),
    "target_error": OptionSpec(_read_float, "guaranteed error target relative to ||a_i|| ||b_j|| per entry "
                               "(default: the FP64-accuracy contract)", "--target-error"),
    "rho": OptionSpec(_read_float, "use the seed paper's rule instead: average mantissa bits lost <= rho", "--rho"),
    "block": OptionSpec(_read_int_or_auto, "summation block size along k (0 = unblocked; default auto)", "--block"),
    "accumulate": OptionSpec(str, "precision of the block sums: fp32 or fp64", "--accumulate"),
    "workspace_bytes": OptionSpec(_read_int, "working memory a GEMM may take, in GiB for the flag and bytes in a label "
                                  "(default: 1 GiB; int8-auto, int8-<s> and int8-crt-<m>: three quarters of the free "
                                  "GPU memory at call time)",
                                  "--workspace-gib", 1 << 30, "GiB"),
    "fused": OptionSpec(_read_bool, "use the fused gate kernel on the GPU where it applies (default true)"),
    "large_gates": OptionSpec(str, "scheme of gates above 6 qubits: auto, ozaki2 or ozaki1"),
    "dmma_min_qubits": OptionSpec(_read_int, "gates from this size (up to 6) use the FP64 tensor-core kernel"),
    "small_gate_max_qubits": OptionSpec(_read_int, "other gates up to this size use the CUDA-core register kernel"),
    "min_batched_stride": OptionSpec(_read_int, "gates whose columns lie fewer amplitudes apart (above 1) go to "
                                     "cuBLAS as rows of a transposed copy (default 16; 1: never)"),
}


# -- backends -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BackendEntry:
    """A backend name: its class, the options the name fixes, and the options it takes (OPTION_SPECS
    keys; the registry refuses any other, and `qsim backends` lists exactly these)."""

    name: str
    module: str
    cls: str
    description: str
    options: tuple
    fixed_options: dict = field(default_factory=dict)

    def load(self):
        return getattr(importlib.import_module(self.module, __package__), self.cls)


_WORKSPACE = ("workspace_bytes",)
_ENTRIES = [
    BackendEntry("cublas", ".native.zgemm", "ZgemmBackend", "FP64 complex GEMM (cuBLAS ZGEMM / numpy)",
                 ("dmma_min_qubits", "small_gate_max_qubits", "min_batched_stride", "workspace_bytes")),
    BackendEntry("int8-auto", ".ozaki.backend", "OzakiBackend",
                 "INT8 Ozaki-I or Ozaki-II per GEMM, as accurate as FP64 GEMM by default (options bound, "
                 "target_error, rho)",
                 ("bound", "target_error", "rho", "workspace_bytes", "fused", "large_gates"), {"splits": "auto"}),
    BackendEntry("fp16x2", ".multiword", "MultiwordFp16Backend",
                 "double-fp16 words on FP16 tensor cores, blocked FP32/FP64 summation",
                 ("block", "accumulate", "workspace_bytes", "fused")),
    BackendEntry("fp16", ".multiword", "SingleFp16Backend", "one fp16 word, FP32 accumulation (baseline)", _WORKSPACE),
    BackendEntry("cgemm", ".native.cgemm", "CgemmBackend", "complex64 GEMM (cuBLAS CGEMM / numpy), baseline", _WORKSPACE),
    BackendEntry("dd", ".doubledouble", "DoubleDoubleBackend", "double-double complex GEMM (reference)", _WORKSPACE),
]
# int8-<s> takes neither target_error nor rho (its digits are fixed) nor large_gates (Ozaki-I is
# the only scheme for fixed digits): the class refuses them, so the name does not list them.
_INT8_FIXED_OPTIONS = ("workspace_bytes", "fused")
_ALIASES = {"zgemm": "cublas"}
# ASCII digits without a leading zero: "int8-09", "int8-9\n" or another script's digits are not int8-9.
_INT8_FIXED = re.compile(r"int8-([1-9][0-9]*)")
_INT8_CRT = re.compile(r"int8-(g?)crt-([1-9][0-9]*)")
# Numbered families: (pattern shown, its letter, the numbers it takes, what it is).
_PATTERNS = [
    ("int8-<s>", "s", INT8_SPLITS, "INT8 Ozaki scheme, fixed s"),
    ("int8-crt-<m>", "m", CRT_MODULI, "INT8 Ozaki-II (Chinese remainder) scheme, fixed number of moduli m"),
    ("int8-gcrt-<m>", "m", GAUSSIAN_MODULI,
     "INT8 Ozaki-II on Gaussian moduli (2 INT8 products per modulus for complex inputs, not 3), m moduli"),
]


def _entry(name: str) -> BackendEntry:
    if not isinstance(name, str):
        raise BackendError(f"a backend name must be a string such as 'cublas' or 'int8-auto', got {name!r}")
    name = _ALIASES.get(name, name)
    for entry in _ENTRIES:
        if entry.name == name:
            return entry
    match = _INT8_FIXED.fullmatch(name)
    if match:
        splits = int(match.group(1))
        if splits not in INT8_SPLITS:
            raise BackendError(
                f"backend {name!r}: INT8 splits must be in {INT8_SPLITS.start}..{INT8_SPLITS.stop - 1}"
            )
        return BackendEntry(name, ".ozaki.backend", "OzakiBackend", f"INT8 Ozaki scheme, {splits} splits",
                            _INT8_FIXED_OPTIONS, {"splits": splits})
    match = _INT8_CRT.fullmatch(name)
    if match:
        gaussian, moduli = bool(match.group(1)), int(match.group(2))
        span = moduli_counts(gaussian)
        if moduli not in span:
            raise BackendError(f"backend {name!r}: the number of moduli must be in {span.start}..{span.stop - 1}")
        kind = "Gaussian moduli" if gaussian else "moduli"
        return BackendEntry(name, ".ozaki.crt_backend", "OzakiCrtBackend",
                            f"INT8 Ozaki-II (Chinese remainder) scheme, {moduli} {kind}", _WORKSPACE,
                            {"moduli": moduli, "gaussian": gaussian})
    raise BackendError(f"unknown backend {name!r}; known: {', '.join(names())} (see `qsim backends`)")


def names() -> list:
    """Backend names, with the numbered families (int8-<s>, int8-crt-<m>) shown as patterns."""
    return [e.name for e in _ENTRIES] + [f"{pattern} ({letter} = {span.start}..{span.stop - 1})"
                                         for pattern, letter, span, _ in _PATTERNS] + [
        f"{alias} (= {target})" for alias, target in _ALIASES.items()
    ]


def accepted_options(name: str) -> tuple:
    """The keyword options backend `name` takes (raises BackendError for an unknown name)."""
    return _entry(name).options


def backends_taking(option: str) -> list:
    """Names (numbered families as patterns) of the backends that take `option`."""
    families = [(pattern, _entry(pattern.replace(f"<{letter}>", str(span.start))))
                for pattern, letter, span, _ in _PATTERNS]
    return [name for name, entry in [(e.name, e) for e in _ENTRIES] + families if option in entry.options]


def parse_option(name: str, option: str, text: str):
    """The value of backend `name`'s option written as text (a label's name@option=value): true/false
    in any case or 1/0 for a flag, numbers for numbers. BackendError for an option the backend does
    not take or text that is not a value of the option's kind; the range is the backend's to check."""
    _check_taken(name, _entry(name), [option])
    try:
        return OPTION_SPECS[option].read(text)
    except ValueError as exc:
        raise BackendError(f"backend {name!r}: option {option} must be {exc}, got {text!r}") from None


def parse_label(label: str) -> tuple:
    """(backend name, options) of a backend label "name" or "name@option=value[@option=value]",
    e.g. "int8-auto@rho=0" or "int8-9@fused=false", each value read by parse_option: the one
    syntax of a backend with options in `qsim run --backend`, `qsim compare --backends` and the
    benchmark scripts. BackendError for a malformed label or an option given twice."""
    name, *pairs = label.split("@")
    options = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise BackendError(f"backend label {label!r}: write options as name@option=value")
        if key in options:
            raise BackendError(f"backend label {label!r} gives option {key} twice; give it once")
        options[key] = parse_option(name, key, text)
    return name, options


def _check_taken(name: str, entry: BackendEntry, options) -> None:
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        accepted = ", ".join(entry.options) or "none"
        raise BackendError(f"backend {name!r} takes no option {', '.join(unknown)} (it takes: {accepted})")


def get(name: str, **options):
    """A new backend instance. Raises BackendError for an unknown name or an option the
    backend does not take (options set to None are ignored)."""
    entry = _entry(name)
    options = {k: v for k, v in options.items() if v is not None}
    _check_taken(name, entry, options)
    try:
        cls = entry.load()
    except ImportError as exc:
        raise BackendError(f"backend {name!r} cannot load: {exc}") from exc
    backend = cls(**entry.fixed_options, **options)
    backend.name = entry.name
    return backend


def available() -> list:
    """One dict per backend that loads here: name, description, devices, options."""
    devices = ["cpu"] + (["gpu"] if gpu_available() else [])
    rows = []
    families = [(_entry(pattern.replace(f"<{letter}>", str(span.start))), pattern,
                 f"{what} in {span.start}..{span.stop - 1}") for pattern, letter, span, what in _PATTERNS]
    for entry, name, description in [(e, e.name, e.description) for e in _ENTRIES] + families:
        try:
            cls = entry.load()
        except ImportError:
            continue
        signature = inspect.signature(cls.__init__)
        defaults = {o: signature.parameters[o].default for o in entry.options}
        rows.append({"name": name, "description": description, "devices": devices, "options": defaults})
    return rows
