"""Hidden tests that pin one implementation's wording: flagged for a reviewer, not refused.

A FAIL_TO_PASS test that compares the answer's output with a long literal string
(`assert f(x) == "3 minutes ago"`, `self.assertEqual(msg, "...")`) judges the exact words
of the implementation the task was cut from: a correct answer worded otherwise fails it.
Some features are their wording (a humanizer's phrases, a formatter's layout), so this is
a note for the review step (`tasks review`), never a validation problem: the validation
record keeps the counts and one example (`TaskValidation.review`), and `VALIDATION.md`
lists the flagged tasks.

A test pins a string when one of its assertions compares, for (in)equality, an expression
with a string literal of at least `MIN_PINNED_CHARS` characters holding a space (prose or
a layout, not an identifier, a key or a short code), written there or given to the
compared parameter by `@pytest.mark.parametrize`. A task is flagged when at least
`FLAG_SHARE` of its FAIL_TO_PASS tests pin one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from harness.pyast import parse_module

MIN_PINNED_CHARS = 12
FLAG_SHARE = 0.5
EQUALITY_ASSERTS = {"assertEqual", "assertEquals", "assertMultiLineEqual", "assertNotEqual"}


@dataclass
class Pins:
    tests: int  # FAIL_TO_PASS tests looked at
    pinned: list[str] = field(default_factory=list)  # those that pin a string
    example: str = ""  # one pinned literal

    @property
    def flagged(self) -> bool:
        return bool(self.tests) and len(self.pinned) >= FLAG_SHARE * self.tests

    def note(self) -> str:
        return (
            f"{len(self.pinned)} of {self.tests} FAIL_TO_PASS tests compare with an exact "
            f"string (e.g. {self.example!r}): an answer worded otherwise fails them"
        )


def _pinned_literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        if len(text) >= MIN_PINNED_CHARS and " " in text.strip():
            return text
    return None


def _compared(node: ast.AST) -> list[ast.AST]:
    """The operands an assertion compares for (in)equality."""
    if isinstance(node, ast.Compare) and all(isinstance(o, ast.Eq | ast.NotEq) for o in node.ops):
        return [node.left, *node.comparators]
    called = node.func if isinstance(node, ast.Call) else None
    if isinstance(called, ast.Attribute) and called.attr in EQUALITY_ASSERTS:
        assert isinstance(node, ast.Call)
        return list(node.args[:2])
    return []


def _argnames(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [name.strip() for name in node.value.split(",")]
    if isinstance(node, ast.List | ast.Tuple):
        return [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return []


def _row(value: ast.AST) -> list[ast.AST]:
    """One parameter set's values (`pytest.param(a, b, id=...)` included)."""
    called = value.func if isinstance(value, ast.Call) else None
    if isinstance(called, ast.Attribute) and called.attr == "param":
        assert isinstance(value, ast.Call)
        return list(value.args)
    return list(value.elts) if isinstance(value, ast.Tuple | ast.List) else [value]


def parametrized_literals(function: ast.AST) -> dict[str, list[str]]:
    """Per parameter of `@pytest.mark.parametrize`, the long literal strings it takes."""
    found: dict[str, list[str]] = {}
    decorators = getattr(function, "decorator_list", [])
    for decorator in decorators:
        call = decorator if isinstance(decorator, ast.Call) else None
        named = call is not None and isinstance(call.func, ast.Attribute)
        if call is None or not named or len(call.args) < 2:
            continue
        assert isinstance(call.func, ast.Attribute)
        values = call.args[1]
        if call.func.attr != "parametrize" or not isinstance(values, ast.List | ast.Tuple):
            continue
        names = _argnames(call.args[0])
        for value in values.elts:
            row = _row(value) if len(names) > 1 else [value]
            for name, item in zip(names, row, strict=False):
                literal = _pinned_literal(item)
                if literal is not None:
                    found.setdefault(name, []).append(literal)
    return found


def pinned_string(function: ast.AST) -> str | None:
    """The first long literal string a test function's assertions compare with, written
    in the assertion or taken from a parameter that `parametrize` gives such strings."""
    parameters = parametrized_literals(function)
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            candidates = _compared(node.test)
        elif isinstance(node, ast.Call):
            candidates = _compared(node)
        else:
            continue
        for operand in candidates:
            literal = _pinned_literal(operand)
            if literal is None and isinstance(operand, ast.Name) and operand.id in parameters:
                literal = parameters[operand.id][0]
            if literal is not None:
                return literal
    return None


def _functions(module: ast.Module) -> dict[str, ast.AST]:
    """Test functions by the name pytest's node id ends with (`Class::test` for methods)."""
    found: dict[str, ast.AST] = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}::{item.name}"] = item
    return found


def find_pins(hidden_dir: Path, fail_to_pass: list[str]) -> Pins:
    """Which FAIL_TO_PASS tests (node ids `file::[Class::]name[params]`) pin a string."""
    pins = Pins(tests=len(fail_to_pass))
    parsed: dict[str, dict[str, ast.AST]] = {}
    for node_id in fail_to_pass:
        path, _, name = node_id.partition("::")
        if path not in parsed:
            source = hidden_dir / path
            try:
                text = source.read_text(encoding="utf-8", errors="replace")
                parsed[path] = _functions(parse_module(text, str(source)))
            except (OSError, SyntaxError):
                parsed[path] = {}
        function = parsed[path].get(name.split("[")[0])
        literal = None if function is None else pinned_string(function)
        if literal is not None:
            pins.pinned.append(node_id)
            pins.example = pins.example or literal
    return pins
