"""Turning syntax trees back into source text, with as few parentheses as possible."""

from __future__ import annotations

import math

from .nodes import Assign, BinOp, Call, Node, Num, UnaryOp, Var
from .parser import parse

# Binding strength, loosest first; must agree with the grammar in parser.py.
_ASSIGN, _ADDITIVE, _MULTIPLICATIVE, _UNARY, _POWER, _ATOM = range(6)

_BINARY_PRECEDENCE = {
    "+": _ADDITIVE,
    "-": _ADDITIVE,
    "*": _MULTIPLICATIVE,
    "/": _MULTIPLICATIVE,
    "%": _MULTIPLICATIVE,
    "^": _POWER,
}


def _format_number(value: float) -> str:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot write {value!r} as a minicalc number")
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _precedence(node: Node) -> int:
    if isinstance(node, Assign):
        return _ASSIGN
    if isinstance(node, BinOp):
        return _BINARY_PRECEDENCE[node.op]
    if isinstance(node, UnaryOp) or (isinstance(node, Num) and node.value < 0):
        return _UNARY
    return _ATOM


def _operand(node: Node, needs_parens: bool) -> str:
    text = to_source(node)
    return f"({text})" if needs_parens else text


def to_source(node: Node) -> str:
    """Write ``node`` as minicalc source, so that ``parse(to_source(node)) == node``.

    Binary operators get one space on each side, unary operators and call
    arguments none (``-x``, ``max(a, b)``), and parentheses appear only where
    precedence or associativity require them: ``(a + b) * c``, ``a - (b - c)``,
    ``(a ^ b) ^ c``, ``(-2) ^ 2``. Integral numbers are written without a
    fractional part (``3``, not ``3.0``).
    """
    if isinstance(node, Num):
        return _format_number(node.value)
    if isinstance(node, Var):
        return node.name
    if isinstance(node, Call):
        return f"{node.name}({', '.join(to_source(arg) for arg in node.args)})"
    if isinstance(node, Assign):
        return f"{node.name} = {to_source(node.value)}"
    if isinstance(node, UnaryOp):
        return node.op + _operand(node.operand, _precedence(node.operand) < _UNARY)
    if isinstance(node, BinOp):
        prec = _BINARY_PRECEDENCE[node.op]
        left_prec, right_prec = _precedence(node.left), _precedence(node.right)
        if node.op == "^":
            # Right-associative, and the exponent may carry a unary sign: 2 ^ -1.
            left = _operand(node.left, left_prec <= prec)
            right = _operand(node.right, right_prec < _UNARY)
        else:
            left = _operand(node.left, left_prec < prec)
            right = _operand(node.right, right_prec <= prec)
        return f"{left} {node.op} {right}"
    raise TypeError(f"not a syntax tree node: {node!r}")


def format_expression(source: str) -> str:
    """Parse ``source`` and write it back in canonical form."""
    return to_source(parse(source))
