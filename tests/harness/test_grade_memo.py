"""The grade memo keys a report by task and change, and keeps no report the harness's own
trouble ended (the next grading may go through)."""

from __future__ import annotations

from pathlib import Path

from harness.grade_memo import GradeMemo
from harness.grading import GradeReport
from harness.results import Failure
from harness.spec import PreparedTask


def _task(tmp_path: Path, ident: str) -> PreparedTask:
    # only the fields the key reads
    return PreparedTask.model_construct(id=ident, workspace=tmp_path / ident, hidden_dir=tmp_path)


def test_the_same_change_of_the_same_task_is_graded_once(tmp_path: Path) -> None:
    memo, calls = GradeMemo(), []

    def grade() -> GradeReport:
        calls.append(1)
        return GradeReport(resolved=len(calls) == 1, failure=None)

    first, second = _task(tmp_path, "a"), _task(tmp_path, "b")
    assert memo.grade(first, "+x", grade).resolved
    assert memo.grade(first, "+x", grade).resolved and memo.hits == 1
    assert not memo.grade(first, "+y", grade).resolved  # another change
    assert not memo.grade(second, "+x", grade).resolved  # another task
    assert len(calls) == 3


def test_an_infrastructure_failure_is_not_remembered(tmp_path: Path) -> None:
    memo, task = GradeMemo(), _task(tmp_path, "a")
    broken = GradeReport(resolved=False, failure=Failure.INFRA_ERROR, error="sandbox")
    assert memo.grade(task, "+x", lambda: broken) is broken
    fine = GradeReport(resolved=True, failure=None)
    assert memo.grade(task, "+x", lambda: fine) is fine and memo.hits == 0
