"""The structural half of a documentation task: each named function has an example
in its docstring that calls it.

The doctests themselves run in the grading pytest run (the task lists the doctest
items as FAIL_TO_PASS); a doctest that passes without calling its function (`>>> 1 + 1`)
would satisfy that, so `judge_docs` also reads the module as the change left it (read
inside the sandbox) and requires, per named function, an example whose code calls
it by name (`f(...)`, `obj.f(...)`, or for `Class.method` a call of `method`). Pure.
"""

from __future__ import annotations

import ast
import doctest
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.pyast import parse_module
from harness.results import Failure, TestOutcome
from harness.spec import DocsVerification

if TYPE_CHECKING:
    from harness.grading import GradeReport

MAX_MODULE_CHARS = 2_000_000


def _definition(module: ast.Module, dotted: str) -> ast.AST | None:
    body: list[ast.stmt] = module.body
    node: ast.AST | None = None
    for part in dotted.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = getattr(node, "body", [])
    return node


def _calls(source: str, name: str) -> bool:
    try:
        tree = parse_module(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == name:
                return True
            if isinstance(func, ast.Attribute) and func.attr == name:
                return True
    return False


def example_problem(module_text: str, dotted: str) -> str | None:
    """Why `dotted` lacks an example calling it; None when it has one."""
    try:
        module = parse_module(module_text)
    except SyntaxError:
        return "the module does not parse"
    node = _definition(module, dotted)
    if node is None:
        return "not defined any more"
    docstring = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
    if not docstring:
        return "no docstring"
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError as error:
        return f"its docstring's examples do not parse: {error}"
    if not examples:
        return "no example in its docstring"
    name = dotted.rsplit(".", 1)[-1]
    if not any(_calls(example.source, name) for example in examples):
        return f"no example calls {name}"
    return None


def judge_docs(
    check: DocsVerification, report: GradeReport, module_text: str | None
) -> GradeReport:
    """The pytest verdict plus one `docs:NAME` outcome per documented function."""
    tests = dict(report.tests)
    problems = []
    for dotted in check.documented:
        problem = "the module could not be read" if module_text is None else None
        problem = problem or example_problem(module_text or "", dotted)
        tests[f"docs:{dotted}"] = TestOutcome.FAILED if problem else TestOutcome.PASSED
        if problem:
            problems.append(f"{dotted}: {problem}")
    if report.failure is not None or not problems:
        return replace(report, tests=tests)
    error = f"{len(problems)} functions lack an example calling them: " + "; ".join(problems)
    return replace(report, resolved=False, failure=Failure.TESTS_FAILED, tests=tests,
                   error=re.sub(r"\s+", " ", error)[:500])  # fmt: skip
