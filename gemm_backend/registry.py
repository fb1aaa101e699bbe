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


@dataclass(frozen=True)
class BackendEntry:
    name: str
    module: str
    cls: str
    description: str
    fixed_options: dict = field(default_factory=dict)
    excluded_options: tuple = ()  # options of the class that this name does not take

    def load(self):
        return getattr(importlib.import_module(self.module, __package__), self.cls)


_ENTRIES = [
    BackendEntry("cublas", ".zgemm", "ZgemmBackend", "FP64 complex GEMM (cuBLAS ZGEMM / numpy)"),
    BackendEntry("int8-auto", ".ozaki", "OzakiBackend",
                 "INT8 Ozaki-I or Ozaki-II per GEMM, as accurate as FP64 GEMM by default (options bound, "
                 "target_error, rho)",
                 {"splits": "auto"}),
    BackendEntry("fp16x2", ".multiword", "MultiwordFp16Backend",
                 "double-fp16 words on FP16 tensor cores, blocked FP32/FP64 summation"),
    BackendEntry("fp16", ".multiword", "SingleFp16Backend", "one fp16 word, FP32 accumulation (baseline)"),
    BackendEntry("cgemm", ".cgemm", "CgemmBackend", "complex64 GEMM (cuBLAS CGEMM / numpy), baseline"),
    BackendEntry("dd", ".doubledouble", "DoubleDoubleBackend", "double-double complex GEMM (reference)"),
]
_ALIASES = {"zgemm": "cublas"}
# ASCII digits without a leading zero: "int8-09", "int8-9\n" or another script's digits are not int8-9.
_INT8_FIXED = re.compile(r"int8-([1-9][0-9]*)")
_INT8_CRT = re.compile(r"int8-crt-([1-9][0-9]*)")
# Numbered families: (pattern shown, its letter, the numbers it takes, what it is).
_PATTERNS = [
    ("int8-<s>", "s", INT8_SPLITS, "INT8 Ozaki scheme, fixed s"),
    ("int8-crt-<m>", "m", CRT_MODULI, "INT8 Ozaki-II (Chinese remainder) scheme, fixed number of moduli m"),
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
        return BackendEntry(name, ".ozaki", "OzakiBackend", f"INT8 Ozaki scheme, {splits} splits",
                            {"splits": splits}, excluded_options=("rho",))
    match = _INT8_CRT.fullmatch(name)
    if match:
        moduli = int(match.group(1))
        if moduli not in CRT_MODULI:
            raise BackendError(f"backend {name!r}: the number of moduli must be in {CRT_MODULI.start}..{CRT_MODULI.stop - 1}")
        return BackendEntry(name, ".ozaki_crt", "OzakiCrtBackend",
                            f"INT8 Ozaki-II (Chinese remainder) scheme, {moduli} moduli", {"moduli": moduli})
    raise BackendError(f"unknown backend {name!r}; known: {', '.join(names())} (see `qsim backends`)")


def names() -> list:
    """Backend names, with the numbered families (int8-<s>, int8-crt-<m>) shown as patterns."""
    return [e.name for e in _ENTRIES] + [f"{pattern} ({letter} = {span.start}..{span.stop - 1})"
                                         for pattern, letter, span, _ in _PATTERNS] + [
        f"{alias} (= {target})" for alias, target in _ALIASES.items()
    ]


def accepted_options(name: str) -> tuple:
    """The keyword options backend `name` takes (raises BackendError for an unknown name)."""
    entry = _entry(name)
    return tuple(o for o in entry.load().OPTIONS if o not in entry.excluded_options and o not in entry.fixed_options)


def get(name: str, **options):
    """A new backend instance. Raises BackendError for an unknown name or an option the
    backend does not take (options set to None are ignored)."""
    entry = _entry(name)
    try:
        cls = entry.load()
    except ImportError as exc:
        raise BackendError(f"backend {name!r} cannot load: {exc}") from exc
    options = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(options) - set(cls.OPTIONS))
    if unknown:
        accepted = ", ".join(cls.OPTIONS) or "none"
        raise BackendError(f"backend {name!r} takes no option {', '.join(unknown)} (it takes: {accepted})")
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
        options = [o for o in cls.OPTIONS if o not in entry.fixed_options and o not in entry.excluded_options]
        signature = inspect.signature(cls.__init__)
        defaults = {o: signature.parameters[o].default for o in options if o in signature.parameters}
        rows.append({"name": name, "description": description, "devices": devices, "options": defaults})
    return rows
