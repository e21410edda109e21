"""The `docs` kind: pytest (the module's doctests among the tests) plus a check, observed
at run time, that each named function's docstring examples show what it does.

The doctests themselves run in the grading pytest run (the task lists the doctest
items as FAIL_TO_PASS); a doctest that passes without calling its function (`>>> 1 + 1`,
or `>>> if False: f()`, which holds a call that never runs), or that calls it and shows
nothing of it (`>>> try: f(None)` / `... except Exception: pass`, `>>> print(3)`, an
expected `...`), would satisfy that. So a second run in a fresh sandbox over the same
change (`harness/kinds/docs_probe.py`) imports the module and runs each name's examples,
as the source has them, under a profiler that counts calls of that function's code, then
again with the function's code swapped for each of two stand-ins (with its parameters:
one returns a fresh object, one raises a fresh exception): a name needs an example, run
once the function was called, whose expected output no longer matches under either, so
that what it shows depends on the function's result or effect. Whether the examples pass
is the pytest run's (the doctest items, under the task's options). The host never
parses the agent's module; `judge_docs` turns the probe's report into one `docs:NAME`
outcome per name: a pure function.

Not defended: code in the module that forges the probe's report from inside its process
(the same limit as any in-process test run; the report must echo a nonce the probe read
before the module was imported, which stops a fixed forged report, not a module that
reads the probe's memory).
"""

from __future__ import annotations

import random
import re
import secrets
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationError

from harness.grading.blame import harness_step
from harness.kinds.base import KindExample
from harness.kinds.pytest_kind import EXAMPLE_BROKEN, PytestKind, Verification
from harness.kinds.testrun import GradeReport, grade_tests, protected_files
from harness.patch import grading_change
from harness.results import Failure, TestOutcome
from harness.sandbox.command import Command
from harness.sandbox.process import REPORT_PLACEHOLDER

if TYPE_CHECKING:
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask

PROBE = Path(__file__).with_name("docs_probe.py")
MAX_PROBE_REPORT = 1_000_000
PROBED_AFTER = (None, Failure.TESTS_FAILED)  # a run that ended otherwise is the verdict
NOT_SHOWN = (
    "no example's output shows what it returns or does (each still matches when it "
    "returns another object or raises)"
)


class DocsVerification(Verification):
    """pytest (the module's doctests among the tests) plus a check at run time: each named
    function's docstring examples call it and show its result."""

    kind: Literal["docs"] = "docs"  # type: ignore[assignment]
    documented_file: str = Field(min_length=1, description="The module whose API is documented.")
    documented: list[str] = Field(
        min_length=1, description="Functions (`name` or `Class.method`) that need an example."
    )


class Example(BaseModel):
    """What the probe found for one name: calls its examples made, how many examples show
    it (fail under every stand-in), or why it has none."""

    calls: int = Field(ge=0)
    shown: int = Field(default=0, ge=0)
    problem: str | None = None


class ProbeReport(BaseModel):
    nonce: str
    names: dict[str, Example]


def read_probe(report: bytes | None, nonce: str) -> ProbeReport | None:
    """The probe's report, or None when there is no well-formed one echoing `nonce`."""
    if not report or len(report) > MAX_PROBE_REPORT:
        return None
    try:
        parsed = ProbeReport.model_validate_json(report)
    except (ValidationError, ValueError):
        return None
    return parsed if parsed.nonce == nonce else None


def example_problem(probe: ProbeReport | None, dotted: str) -> str | None:
    """Why `dotted` lacks an example that calls it and shows its result; None when it has one."""
    found = None if probe is None else probe.names.get(dotted)
    if found is None:
        return "its examples could not be run (no report from the example check)"
    if found.problem is not None:
        return found.problem[:200]
    if found.calls == 0:
        return "running its examples never calls it"
    if found.shown == 0:
        return NOT_SHOWN
    return None


def run_probe(
    task: PreparedTask,
    check: DocsVerification,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
) -> ProbeReport | None:
    """The change applied in a fresh sandbox, the probe run read-only over it."""
    with harness_step("the docs example check"):
        source = PROBE.read_text(encoding="utf-8")
    change = grading_change(patch, check.protected_paths, protected_files(task.workspace, check))
    nonce = secrets.token_hex(16)
    sandbox = backend.open(
        task.workspace, scratch / "sandbox", track_changes=False, python_env=task.python_env
    )
    try:
        sandbox.apply_patch(change.patch)
        argv = [sys.executable, "-P", "-c", source, REPORT_PLACEHOLDER, sandbox.root,
                check.documented_file, *check.documented]  # fmt: skip
        command = Command(
            argv, timeout=task.limits.test_timeout_s, stdin=f"{nonce}\n".encode(),
            read_only=True, report=True, env={"PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        done = sandbox.execute(command)
    finally:
        sandbox.close()
    return None if done.timed_out else read_probe(done.report, nonce)


def judge_docs(
    check: DocsVerification, report: GradeReport, probe: ProbeReport | None
) -> GradeReport:
    """The pytest verdict plus one `docs:NAME` outcome per documented function: pure."""
    tests = dict(report.tests)
    problems = []
    for dotted in check.documented:
        problem = example_problem(probe, dotted)
        tests[f"docs:{dotted}"] = TestOutcome.FAILED if problem else TestOutcome.PASSED
        if problem:
            problems.append(f"{dotted}: {problem}")
    if report.failure is not None or not problems:
        return replace(report, tests=tests)
    error = f"{len(problems)} functions lack an example showing them: " + "; ".join(problems)
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
        report = grade_tests(task, check, patch, backend, scratch / "tests", rng)
        if report.failure not in PROBED_AFTER:
            return report
        probe = run_probe(task, check, patch, backend, scratch / "examples")
        judged = judge_docs(check, report, probe)
        judged.duration_s = report.duration_s
        return judged

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
            stub={"calc.py": _documented(_SWALLOWED)},
            tamper={"conftest.py": _PASS_EVERYTHING},
        )


def _documented(example: str) -> str:
    return f'def sub(a, b):\n    """Subtract.\n\n{example}    """\n    return a - b\n'


# calls sub, passes, and shows nothing of it: the output is the same whatever sub does
_SWALLOWED = (
    "    >>> try:\n    ...     _ = sub(3, 2)\n    ... except Exception:\n    ...     pass\n"
)
_PASS_EVERYTHING = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
