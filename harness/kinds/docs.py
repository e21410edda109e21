"""The `docs` kind: pytest (the module's doctests among the tests) plus a structural
check that each named function's docstring has an example that calls it.

The doctests themselves run in the grading pytest run (the task lists the doctest
items as FAIL_TO_PASS); a doctest that passes without calling its function (`>>> 1 + 1`)
would satisfy that, so `judge_docs` also reads the module as the change left it (read
inside the sandbox) and requires, per named function, an example whose code calls
it by name (`f(...)`, `obj.f(...)`, or for `Class.method` a call of `method`). Pure.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from harness.kinds.base import KindExample
from harness.kinds.pytest_kind import EXAMPLE_BROKEN, PytestKind, Verification
from harness.kinds.testrun import GradeReport, grade_tests
from harness.pyast import parse_module
from harness.results import Failure, TestOutcome

if TYPE_CHECKING:
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask


class DocsVerification(Verification):
    """pytest (the module's doctests among the tests) plus a structural check: each named
    function's docstring has an example that calls it."""

    kind: Literal["docs"] = "docs"  # type: ignore[assignment]
    documented_file: str = Field(min_length=1, description="The module whose API is documented.")
    documented: list[str] = Field(
        min_length=1, description="Functions (`name` or `Class.method`) that need an example."
    )


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
    import doctest  # ~0.1 s (it imports pdb): only grading a docs task pays it

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


class DocsKind(PytestKind):
    name = "docs"
    model: type[Verification] = DocsVerification

    def grade(
        self,
        task: PreparedTask,
        check: Verification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        assert isinstance(check, DocsVerification)  # the registry hands each kind its own model
        refine = partial(judge_docs, check)
        return grade_tests(task, check, patch, backend, scratch, rng, check.documented_file, refine)

    def failing_by_design(self, check: Verification) -> set[str]:
        assert isinstance(check, DocsVerification)
        return {*check.hidden_tests, check.documented_file}  # its doctests fail by design

    def needs_coverage(self, check: Verification) -> bool:
        return False  # the removed lines are docstrings, which coverage does not count

    def example(self) -> KindExample:
        tests = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
        return KindExample(
            workspace={"pytest.ini": "[pytest]\npythonpath = .\n", "calc.py": EXAMPLE_BROKEN},
            hidden={"tests/test_calc.py": tests},
            verification=DocsVerification(
                test_args=["tests", "--doctest-modules", "calc.py"],
                fail_to_pass=["calc.py::calc.sub"],
                pass_to_pass=["tests/test_calc.py::test_sub"],
                hidden_tests=["tests/test_calc.py"],
                documented_file="calc.py",
                documented=["sub"],
            ),
            reference={"calc.py": _documented("    >>> sub(3, 2)\n    1\n")},
            stub={"calc.py": _documented("    >>> 1 + 1\n    2\n")},
            tamper={"conftest.py": _PASS_EVERYTHING},
        )


def _documented(example: str) -> str:
    return f'def sub(a, b):\n    """Subtract.\n\n{example}    """\n    return a - b\n'


_PASS_EVERYTHING = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
