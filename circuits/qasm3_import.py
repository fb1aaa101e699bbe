"""OpenQASM 3 text as a qiskit.QuantumCircuit, through the dependency qiskit-qasm3-import.

qiskit-qasm3-import (0.6, and Qiskit's qasm3.loads on top of it) binds the arguments of a call
to a user-defined gate in the order of the definition's Qiskit parameters, which Qiskit sorts
by name, not in the declared order: `gate g(theta, phi) q {...}` called as `g(1, 2) q;` gets
phi = 1 and theta = 2, a wrong circuit without any error. Before conversion every gate
definition's parameters are renamed (in the parsed program) to names that sort in declaration
order, which makes the two orders agree.

Every failure (syntax, unsupported construct, bad index or expression) is a one-line
CircuitError; the parser's own messages on stderr are swallowed.
"""
import contextlib
import importlib.util
import io

from .errors import CircuitError, one_line
from .qasm3_conditions import rewrite_conditions

#: Renamed parameter i of a definition: the index first, fixed width, so names sort as declared.
_RENAMED = "_qsim_{index:04d}_{name}"


def load_qasm3(text: str):
    """The QuantumCircuit of OpenQASM 3 program `text` (its header already checked)."""
    if importlib.util.find_spec("qiskit_qasm3_import") is None:
        raise CircuitError("reading OpenQASM 3 needs qiskit-qasm3-import, a dependency of this project that is "
                           "missing here; reinstall the project (pip install -e .) or pip install qiskit-qasm3-import")
    import openqasm3
    import qiskit_qasm3_import
    from openqasm3.parser import QASM3ParsingError
    from qiskit.exceptions import QiskitError

    with contextlib.redirect_stderr(io.StringIO()):
        try:
            program = openqasm3.parse(text)
            _declared_parameter_order(program)
            rewrite_conditions(program)  # !=, !, && and || as nested ifs the importer takes
            return qiskit_qasm3_import.convert(program)
        except qiskit_qasm3_import.ConversionError as exc:
            raise CircuitError(f"OpenQASM 3 import error: {one_line(exc)}") from None
        except QASM3ParsingError as exc:
            raise CircuitError(f"OpenQASM 3 syntax error{_parse_error_position(exc)}") from None
        except (QiskitError, LookupError, ArithmeticError, TypeError, ValueError) as exc:
            # what the importer lets through from building the circuit: an index outside its
            # register, a repeated qubit, a division by zero in an expression
            raise CircuitError(f"OpenQASM 3 import error: {one_line(exc) or 'failed'} ({type(exc).__name__}); "
                               "check the indices, arguments and expressions of the program") from None


def _declared_parameter_order(program) -> None:
    """Rename, in place, the parameters of every gate definition of the parsed `program` so that
    sorting them by name keeps their declared order (see the module docstring)."""
    from openqasm3 import ast

    for statement in program.statements:
        if isinstance(statement, ast.QuantumGateDefinition) and len(statement.arguments) > 1:
            renamed = {p.name: _RENAMED.format(index=i, name=p.name) for i, p in enumerate(statement.arguments)}
            for parameter in statement.arguments:
                parameter.name = renamed[parameter.name]
            renamer = _identifier_renamer(renamed)
            for body_statement in statement.body:
                renamer.visit(body_statement)


def _identifier_renamer(renamed: dict):
    """A visitor renaming the identifiers of a gate body found in `renamed`; the names of the
    gates it calls are left alone."""
    from openqasm3.visitor import QASMVisitor

    class Renamer(QASMVisitor):
        def visit_Identifier(self, node):
            node.name = renamed.get(node.name, node.name)

        def visit_QuantumGate(self, node):
            called = node.name.name
            self.generic_visit(node)
            node.name.name = called

    return Renamer()


def _parse_error_position(exc) -> str:
    """' at line L, column C (near 'token')' from the ANTLR exception behind a QASM3ParsingError,
    or the error's own text when it has one."""
    if str(exc):
        return f": {one_line(exc)}"
    cause = exc.__cause__
    recognition = cause.args[0] if cause is not None and cause.args else None
    token = getattr(recognition, "offendingToken", None)
    if token is None:
        return ""
    return f" at line {token.line}, column {token.column + 1} (near {token.text!r}); check for a missing ';' or bracket"
