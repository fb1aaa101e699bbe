"""Qiskit's for_loop, while_loop and switch as operations of circuits.qiskit_import's walk.

for_loop is unrolled: its body once per value of the index set, with the loop parameter bound
to that value (break_loop / continue_loop inside it are refused: whether they run can depend on
measurements). while_loop is unrolled to `max_iterations` copies of its body, each under the
loop's condition, followed by a LoopLimit under it: copy k runs exactly when the loop would run
its k-th iteration (once the condition is false nothing in the later copies runs, so the bits
and the condition stay as they are), so each trajectory or shot branch loops as often as its
own measurements say, and one that would loop beyond the limit stops with an error. As for
if/else, a measurement in the body that writes a bit the condition reads must be the body's last
operation (later ones would see the condition change mid-iteration); break_loop and
continue_loop are refused. switch becomes one conditioned copy of each case body per case value (register
== value; the copies' conditions exclude one another) and the default case's body under
"register != every listed value". A measurement in a case body that writes a bit of the target
is refused unless it is the switch's last operation, as for if/else.
condition_tests reads an if_else condition: a (clbit or register, value) pair or a classical
expression (==, !=, logical not of a bit, logical and).
"""
from .errors import CircuitError
from .operations import ClbitTest, Condition, LoopLimit


def for_loop(walk, operation, qubits, clbits, condition, where) -> None:
    """Append the unrolled loop `operation` (a qiskit ForLoopOp) to walk's operations."""
    indexset, parameter, body = operation.params
    _refuse_loop_exits(body, where, "for")
    for value in indexset:
        bound = body.assign_parameters({parameter: value}) if parameter is not None and parameter in body.parameters \
            else body
        walk._body(bound, qubits, clbits, condition, f"{where} (iteration {value})")


def while_loop(walk, operation, qubits, clbits, condition, where, scope, max_iterations: int) -> None:
    """Append `operation` (a qiskit WhileLoopOp) unrolled to max_iterations conditioned copies of
    its body and a LoopLimit (see the module docstring)."""
    body = operation.blocks[0]
    _refuse_loop_exits(body, where, "while")
    tests = condition_tests(operation.condition, *scope, where)
    inside = condition.also(*tests) if condition is not None else Condition(tests)
    read = frozenset(c for test in tests for c in test.clbits)
    for iteration in range(max_iterations):
        walk.open_condition(read, where)
        walk._body(body, qubits, clbits, inside, f"{where} (iteration {iteration})")
        walk.close_condition()
    walk.operations.append(LoopLimit(inside, max_iterations, where))


def switch(walk, operation, qubits, clbits, condition, where, scope) -> None:
    """Append the cases of `operation` (a qiskit SwitchCaseOp) as conditioned operations."""
    from qiskit.circuit.controlflow import CASE_DEFAULT

    target_bits = _target_bits(operation.target, *scope, where)
    listed = [value for values, _ in operation.cases_specifier() for value in values if value is not CASE_DEFAULT]
    walk.open_condition(frozenset(target_bits), where)
    for values, body in operation.cases_specifier():
        for value in values:
            if value is CASE_DEFAULT:
                tests = tuple(ClbitTest(target_bits, int(v), equal=False) for v in listed)
            else:
                tests = (ClbitTest(target_bits, int(value)),)
            if not tests:  # a switch with only a default case: always taken
                walk._body(body, qubits, clbits, condition, where)
                continue
            inside = condition.also(*tests) if condition is not None else Condition(tests)
            walk._body(body, qubits, clbits, inside, where)
    walk.close_condition()


def _target_bits(target, circuit, clbit_of, where) -> tuple:
    """Top-level classical-bit indices of a switch target (a Clbit, a register or a bare var)."""
    from qiskit.circuit.classical import expr

    if isinstance(target, expr.Var) and not target.standalone:
        target = target.var
    if isinstance(target, expr.Expr):
        raise CircuitError(f"instruction {where} switches on the expression {target}; switch on a classical bit "
                           "or register")
    bits = [target] if not hasattr(target, "size") else list(target)
    return tuple(clbit_of[circuit.find_bit(bit).index] for bit in bits)


def _refuse_loop_exits(body, where, kind: str) -> None:
    for instruction in body.data:
        name = instruction.operation.name
        if name in ("break_loop", "continue_loop"):
            raise CircuitError(f"instruction {where} holds {name}, which is not supported in a {kind} loop; "
                               "write the loop without it")
        for block in getattr(instruction.operation, "blocks", ()):
            _refuse_loop_exits(block, where, kind)


def condition_tests(condition, circuit, clbit_of, where) -> tuple:
    """The ClbitTests (all must hold) of an IfElseOp condition: a (Clbit or ClassicalRegister,
    value) pair or a classical expression, with bits taken in `circuit`, mapped to top-level
    indices."""
    from qiskit.circuit.classical import expr, types

    def index(bit):
        return clbit_of[circuit.find_bit(bit).index]

    def bits_of(target):
        return (index(target),) if not hasattr(target, "size") else tuple(index(b) for b in target)

    if isinstance(condition, tuple):
        target, value = condition
        return (ClbitTest(bits_of(target), int(value)),)
    tests = _expr_tests(condition, bits_of, expr, types)
    if tests is None:
        raise CircuitError(f"instruction {where} has the condition {condition}, which is not supported; use "
                           "comparisons (==, !=) of a classical bit or register with a constant, 'not' of a bit, "
                           "and 'and' of those")
    return tests


def _expr_tests(node, bits_of, expr, types):
    """A classical expression as a tuple of ClbitTest that must all hold, or None."""
    if isinstance(node, expr.Var) and not node.standalone and node.type.kind is types.Bool:
        return (ClbitTest(bits_of(node.var), 1),)
    if isinstance(node, expr.Unary) and node.op is expr.Unary.Op.LOGIC_NOT:
        inner = _expr_tests(node.operand, bits_of, expr, types)
        return (inner[0].negated(),) if inner is not None and len(inner) == 1 else None
    if not isinstance(node, expr.Binary):
        return None
    if node.op is expr.Binary.Op.LOGIC_AND:
        left, right = (_expr_tests(side, bits_of, expr, types) for side in (node.left, node.right))
        return left + right if left is not None and right is not None else None
    if node.op not in (expr.Binary.Op.EQUAL, expr.Binary.Op.NOT_EQUAL):
        return None
    var, value = (node.left, node.right) if isinstance(node.right, expr.Value) else (node.right, node.left)
    if not (isinstance(var, expr.Var) and not var.standalone and isinstance(value, expr.Value)):
        return None
    return (ClbitTest(bits_of(var.var), int(value.value), node.op is expr.Binary.Op.EQUAL),)
