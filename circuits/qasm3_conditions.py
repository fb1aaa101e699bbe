"""OpenQASM 3 `if` conditions that qiskit-qasm3-import (0.6) refuses, rewritten into ones it takes.

The importer takes only `bit == bool` and `register == int`. Before conversion, every branching
statement of the parsed program is rewritten, recursively, into nested ifs with the same
meaning:
    if (!a) {T} else {E}         ->  if (a) {E} else {T}
    if (x != v) {T} else {E}     ->  if (x == v) {E} else {T}
    if (a && b) {T} else {E}     ->  if (a) { if (b) {T} else {E} } else {E}
    if (a || b) {T} else {E}     ->  if (a) {T} else { if (b) {T} else {E} }
and `c[i] == 0/1` (one bit of a register) becomes `c[i] == false/true`. E is copied where it
appears twice; the branches of one if still exclude each other, so each runs at most once.
"""
import copy


def rewrite_conditions(program) -> None:
    """Rewrite, in place, the if statements of a parsed openqasm3 Program (see the docstring)."""
    program.statements = _statements(program.statements)


def _statements(statements) -> list:
    from openqasm3 import ast

    rewritten = []
    for statement in statements:
        if isinstance(statement, ast.BranchingStatement):
            rewritten.append(_branch(statement.condition, _statements(statement.if_block),
                                     _statements(statement.else_block), statement))
        else:
            for name in ("block", "body"):  # loops and boxes hold statements too
                inner = getattr(statement, name, None)
                if isinstance(inner, list):
                    setattr(statement, name, _statements(inner))
            rewritten.append(statement)
    return rewritten


def _branch(condition, then_block: list, else_block: list, original):
    """One BranchingStatement equivalent to `if (condition) then_block else else_block`."""
    from openqasm3 import ast

    if isinstance(condition, ast.UnaryExpression) and condition.op == ast.UnaryOperator["!"]:
        return _branch(condition.expression, else_block, then_block, original)
    if isinstance(condition, ast.BinaryExpression):
        op = condition.op
        if op == ast.BinaryOperator["&&"]:
            inner = _branch(condition.rhs, then_block, copy.deepcopy(else_block), original)
            return _branch(condition.lhs, [inner], else_block, original)
        if op == ast.BinaryOperator["||"]:
            inner = _branch(condition.rhs, copy.deepcopy(then_block), else_block, original)
            return _branch(condition.lhs, then_block, [inner], original)
        if op == ast.BinaryOperator["!="]:
            equal = ast.BinaryExpression(op=ast.BinaryOperator["=="], lhs=condition.lhs, rhs=condition.rhs)
            return _branch(equal, else_block, then_block, original)
        if op == ast.BinaryOperator["=="]:
            condition = _bit_literal(condition)
    statement = ast.BranchingStatement(condition=condition, if_block=then_block, else_block=else_block)
    statement.span = original.span
    return statement


def _bit_literal(comparison):
    """`c[i] == 0/1` with `true`/`false`, which the importer wants for a single bit."""
    from openqasm3 import ast

    for bit, value in ((comparison.lhs, comparison.rhs), (comparison.rhs, comparison.lhs)):
        single_index = (isinstance(bit, ast.IndexExpression) and isinstance(bit.index, list)
                        and len(bit.index) == 1 and isinstance(bit.index[0], ast.IntegerLiteral))
        if single_index and isinstance(value, ast.IntegerLiteral) and value.value in (0, 1):
            literal = ast.BooleanLiteral(value=bool(value.value))
            return ast.BinaryExpression(op=comparison.op, lhs=bit, rhs=literal)
    return comparison
