"""The `pytest` kind (the default): pytest over the workspace plus hidden tests decides.

Graded by the shared test run (`testrun.py`): the listed FAIL_TO_PASS and
PASS_TO_PASS tests must all pass, with the protected paths restored from the task; with
the twin run (`twin.py`) where the task's reference restores functions.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from harness.kinds.base import (
    DEFAULT_PROTECTED_PATHS,
    Files,
    Frozen,
    KindExample,
    ListedCounts,
)
from harness.kinds.testrun import GradeReport, grade_tests

if TYPE_CHECKING:
    from harness.kinds.behaviour import BehaviourVerification
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask


class Verification(Frozen):
    """How an attempt is scored: pytest over the workspace plus hidden tests."""

    kind: Literal["pytest"] = "pytest"

    test_args: list[str] = Field(
        default_factory=lambda: ["tests"],
        description="Arguments to pytest (paths or node ids), run from the workspace root.",
    )
    fail_to_pass: list[str] = Field(
        min_length=1, description="pytest node ids that fail before and must pass after."
    )
    pass_to_pass: list[str] = Field(
        default_factory=list, description="pytest node ids that pass before and must still pass."
    )
    hidden_tests: list[str] = Field(
        default_factory=list,
        description="Workspace-relative test files hidden from the agent, added at grading.",
    )
    protected_paths: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PROTECTED_PATHS),
        description="Globs of test files and runner config restored from the task before grading.",
    )
    canary_exempt: list[str] = Field(
        default_factory=list,
        description="Hidden test ids ('path::test_x', 'path::TestC::test_x') that carry no "
        "canary: a copy of each changes state the test reads (validation names them).",
    )


class PytestKind:
    name = "pytest"
    model: type[Verification] = Verification
    in_task_files = True
    takes_behaviour_checks = True
    graded_by_run = True

    def grade(
        self,
        task: PreparedTask,
        check: Verification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        return grade_tests(task, check, patch, backend, scratch, rng, twin_run=True)

    def behaviour(self, check: Verification) -> BehaviourVerification | None:
        return None

    def listed_tests(self, check: Verification) -> Verification | None:
        return check

    def test_counts(self, check: Verification) -> ListedCounts:
        return ListedCounts(len(check.fail_to_pass), len(check.pass_to_pass))

    def reference_files(self, check: Verification, workspace: Path) -> Files | None:
        return None

    def stub_files(self, check: Verification) -> Files | None:
        return None

    def solver_test_args(self, check: Verification, written: list[str]) -> list[str]:
        hidden = set(check.hidden_tests)
        return [arg for arg in check.test_args if arg not in hidden]  # hidden files are not there

    def workspace_problems(self, check: Verification, workspace: Path) -> list[str]:
        return []

    def reference_problems(self, check: Verification, report: GradeReport) -> list[str]:
        return []

    def failing_by_design(self, check: Verification) -> set[str]:
        return set(check.hidden_tests)

    def needs_coverage(self, check: Verification) -> bool:
        return True

    def example(self) -> KindExample:
        return KindExample(
            workspace={"pytest.ini": "[pytest]\npythonpath = .\n", "calc.py": EXAMPLE_BROKEN},
            hidden={"tests/test_calc.py": EXAMPLE_TESTS},
            verification=Verification(
                fail_to_pass=["tests/test_calc.py::test_add", "tests/test_calc.py::test_neg"],
                hidden_tests=["tests/test_calc.py"],
            ),
            reference={"calc.py": EXAMPLE_SOLVED},
            stub={"calc.py": EXAMPLE_STUB},
            tamper={"tests/test_calc.py": EXAMPLE_CHEAT, "pytest.ini": "[pytest]\n"},
        )


EXAMPLE_BROKEN = "def sub(a, b):\n    return a - b\n"
EXAMPLE_SOLVED = EXAMPLE_BROKEN + "\n\ndef add(a, b):\n    return a + b\n"
EXAMPLE_STUB = EXAMPLE_BROKEN + "\n\ndef add(a, b):\n    raise NotImplementedError\n"
EXAMPLE_TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_neg():\n    assert add(-2, -3) == -5\n"
)
EXAMPLE_CHEAT = "def test_add():\n    pass\n\n\ndef test_neg():\n    pass\n"
