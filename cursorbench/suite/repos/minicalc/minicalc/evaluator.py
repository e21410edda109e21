"""Evaluating syntax trees, with variables and built-in functions."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from .errors import EvalError
from .nodes import Assign, BinOp, Call, Node, Num, UnaryOp, Var
from .parser import parse

BUILTIN_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "min": min,
    "max": max,
    "round": round,
}

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


class Calculator:
    """Evaluates statements, remembering variables between calls.

    >>> calc = Calculator()
    >>> calc.evaluate("r = 2")
    2.0
    >>> calc.evaluate("r ^ 2 * 3")
    12.0
    """

    def __init__(
        self,
        variables: Mapping[str, float] | None = None,
        functions: Mapping[str, Callable[..., float]] | None = None,
    ) -> None:
        self.variables: dict[str, float] = {}
        self.functions = {**BUILTIN_FUNCTIONS, **(functions or {})}
        for name, value in (variables or {}).items():
            self.assign(name, value)

    def assign(self, name: str, value: float) -> float:
        if name in CONSTANTS:
            raise EvalError(f"cannot assign to constant {name!r}")
        if name in self.functions:
            raise EvalError(f"cannot assign to function {name!r}")
        self.variables[name] = float(value)
        return self.variables[name]

    def evaluate(self, source: str) -> float:
        """Parse and evaluate one statement; an assignment returns the value it stored."""
        return self.eval_node(parse(source))

    def eval_node(self, node: Node) -> float:
        if isinstance(node, Num):
            return node.value
        if isinstance(node, Var):
            return self._lookup(node.name)
        if isinstance(node, UnaryOp):
            value = self.eval_node(node.operand)
            return -value if node.op == "-" else value
        if isinstance(node, BinOp):
            return self._binary(node.op, self.eval_node(node.left), self.eval_node(node.right))
        if isinstance(node, Call):
            return self._call(node.name, [self.eval_node(arg) for arg in node.args])
        if isinstance(node, Assign):
            return self.assign(node.name, self.eval_node(node.value))
        raise TypeError(f"not a syntax tree node: {node!r}")

    def _lookup(self, name: str) -> float:
        if name in self.variables:
            return self.variables[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        raise EvalError(f"unknown variable {name!r}")

    def _binary(self, op: str, left: float, right: float) -> float:
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op in "/%" and right == 0:
            raise EvalError("division by zero")
        if op == "/":
            return left / right
        if op == "%":
            return left % right
        if op == "^":
            try:
                result = left**right
            except (OverflowError, ZeroDivisionError) as exc:
                raise EvalError(f"cannot compute {left} ^ {right}: {exc}") from None
            if isinstance(result, complex):
                raise EvalError(f"{left} ^ {right} is not a real number")
            return float(result)
        raise EvalError(f"unknown operator {op!r}")

    def _call(self, name: str, args: list[float]) -> float:
        try:
            function = self.functions[name]
        except KeyError:
            raise EvalError(f"unknown function {name!r}") from None
        try:
            return float(function(*args))
        except TypeError as exc:
            raise EvalError(f"bad call to {name}(): {exc}") from None
        except (ValueError, OverflowError) as exc:
            raise EvalError(f"{name}() failed: {exc}") from None
