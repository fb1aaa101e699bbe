"""OpenQASM program text: a file or the text itself, its version header, and QASM 2 through
qiskit's loader with one-line errors (circuits.qiskit_import.from_qasm uses them)."""
import os
import re

from .errors import CircuitError, one_line

_QASM_HEADER = re.compile(r"OPENQASM\s+(\d+)(?:\.\d+)?\s*;")
_QASM_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def qasm_source(path_or_text) -> tuple:
    """(program text, directory for includes or None)."""
    if isinstance(path_or_text, os.PathLike):
        path_or_text = os.fspath(path_or_text)
    if not isinstance(path_or_text, str):
        raise CircuitError(f"from_qasm takes a file path or OpenQASM text, got {type(path_or_text).__name__}")
    if "OPENQASM" not in path_or_text and os.path.isfile(path_or_text):
        try:
            with open(path_or_text, encoding="utf-8") as source:
                return source.read(), os.path.dirname(os.path.abspath(path_or_text))
        except (OSError, UnicodeDecodeError) as exc:
            raise CircuitError(f"cannot read QASM file {path_or_text!r}: {exc}") from None
    if "OPENQASM" in path_or_text or "\n" in path_or_text or ";" in path_or_text:
        return path_or_text, None
    raise CircuitError(f"{path_or_text!r} is neither an existing file nor OpenQASM text "
                       "(which starts with an 'OPENQASM 2.0;' or 'OPENQASM 3.0;' header)")


def qasm_version(text: str) -> int:
    match = _QASM_HEADER.match(_QASM_COMMENTS.sub("", text).lstrip())
    if match is None:
        raise CircuitError("the QASM program does not start with an OPENQASM version header; "
                           "add 'OPENQASM 2.0;' or 'OPENQASM 3.0;' as its first statement")
    return int(match.group(1))


def load_qasm2(text: str, include_dir):
    from qiskit import qasm2
    from qiskit.exceptions import QiskitError

    include_path = (include_dir,) if include_dir else (".",)
    try:
        return qasm2.loads(text, include_path=include_path, custom_instructions=qasm2.LEGACY_CUSTOM_INSTRUCTIONS)
    except qasm2.QASM2ParseError as exc:
        raise CircuitError(f"OpenQASM 2 parse error: {one_line(exc)}") from None
    except QiskitError as exc:  # building the circuit, e.g. qiskit's CircuitError 'Register size too large.'
        raise CircuitError(f"OpenQASM 2 import error: {one_line(exc).strip(chr(39))} ({type(exc).__name__})") from None
