"""Scoring an attempt's change in a clean state: the verdict of the task's verification kind.

Each kind grades in its own module under `harness/kinds/` (`registry.KINDS`):
`pytest` and `docs` by the shared grading pytest run (`kinds/testrun.py`: the
change applied in a fresh sandbox of the run's backend over the prepared
workspace, protected paths restored, hidden tests with canaries laid over it,
pytest run read-only, its JUnit report judged by a pure function); `docs` adds
that each named function's docstring example calls it; `mutants` runs the
agent's tests against hidden mutants; `answer` reads the answer file from the
patch text and checks it against the task's facts (no sandbox, nothing of the
agent's runs). `behaviour` is not graded here: its checks score the attempt.
"""

from __future__ import annotations

import random
from pathlib import Path

from harness.kinds.pytest_kind import Verification
from harness.kinds.registry import kind_of, pytest_part
from harness.kinds.testrun import (
    EMPTY_CONFIG,
    PYTEST_ENV,
    GradeReport,
    judge,
    pytest_argv,
    pytest_config,
)
from harness.kinds.testrun import protected_files as _protected_files
from harness.sandbox.protocol import SandboxBackend
from harness.spec import PreparedTask

__all__ = [
    "EMPTY_CONFIG", "PYTEST_ENV", "GradeReport", "grade", "judge", "protected_files",
    "pytest_argv", "pytest_config", "tests_of",
]  # fmt: skip


def grade(
    task: PreparedTask,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
    rng: random.Random | None = None,
) -> GradeReport:
    """The verdict on `patch` by the task's verification kind."""
    report = kind_of(task.verification).grade(
        task, task.verification, patch, backend, scratch, rng or random.Random()
    )
    if report is None:
        raise ValueError(f"task {task.id}: its verification runs no tests")
    return report


def tests_of(task: PreparedTask) -> Verification:
    """The task's pytest verification; a task without FAIL_TO_PASS lists has none."""
    check = pytest_part(task.verification)
    if check is None:
        raise ValueError(f"task {task.id}: its verification runs no tests")
    return check


def protected_files(task: PreparedTask) -> set[str]:
    """Files of the prepared workspace under the protected patterns, plus the hidden tests."""
    return _protected_files(task.workspace, tests_of(task))
