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

`grade` is the judge boundary (`harness.grading.blame`): an exception while a kind judges what
the agent produced is the agent's `failed/unjudgeable`; only the harness's own steps (its
prepared files, the sandbox backend) fail as errors.
"""

from __future__ import annotations

import random
from pathlib import Path

from harness.grading.blame import guarded, harness_step, judging
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
from harness.results import Failure
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
    """The verdict on `patch` by the task's verification kind; whose fault an exception
    is: `harness.grading.blame` (a `HarnessFault` is raised on)."""
    kind = kind_of(task.verification)
    if not kind.graded_by_run:
        raise ValueError(f"task {task.id}: its verification runs no tests")
    with harness_step(f"task {task.id}: its prepared workspace"):
        if not task.workspace.is_dir():
            raise FileNotFoundError(task.workspace)
    sandboxes, draw = guarded(backend), rng or random.Random()
    report = judging(
        lambda: kind.grade(task, task.verification, patch, sandboxes, scratch, draw), _unjudged
    )
    if report is None:
        raise ValueError(f"task {task.id}: its verification graded nothing")
    return report


def _unjudged(failure: Failure, message: str) -> GradeReport | None:
    return GradeReport(False, failure, error=message)


def tests_of(task: PreparedTask) -> Verification:
    """The task's pytest verification; a task without FAIL_TO_PASS lists has none."""
    check = pytest_part(task.verification)
    if check is None:
        raise ValueError(f"task {task.id}: its verification runs no tests")
    return check


def protected_files(task: PreparedTask) -> set[str]:
    """Files of the prepared workspace under the protected patterns, plus the hidden tests."""
    return _protected_files(task.workspace, tests_of(task))
