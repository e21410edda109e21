"""The grade memo keys a report by what grading reads (the prepared files, by content, and
the verification) and the change, keeps no report the harness's own trouble ended (the next
grading may go through), and, with a folder, shares its reports between memos (an RL run's
processes)."""

from __future__ import annotations

from pathlib import Path

from harness.grading.grade import GradeReport
from harness.grading.memo import GradeMemo
from harness.results import Failure, Score, TestOutcome
from harness.spec import PreparedTask


def _task(tmp_path: Path, ident: str, body: str = "x = 1\n") -> PreparedTask:
    workspace = tmp_path / ident / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "m.py").write_text(body)
    hidden = tmp_path / ident / "hidden"
    hidden.mkdir(exist_ok=True)
    # only the fields the key reads
    return PreparedTask.model_construct(
        id=ident, prompt=f"task {ident}", workspace=workspace, hidden_dir=hidden,
        verification=None, limits=None, python_env=None, restored_functions={},
    )  # fmt: skip


def test_the_same_change_of_the_same_task_is_graded_once(tmp_path: Path) -> None:
    memo, calls = GradeMemo(), []

    def grade() -> GradeReport:
        calls.append(1)
        return GradeReport(resolved=len(calls) == 1, failure=None)

    first, second = _task(tmp_path, "a"), _task(tmp_path, "b", body="x = 2\n")
    assert memo.grade(first, "+x", grade).resolved
    assert memo.grade(first, "+x", grade).resolved and memo.hits == 1
    assert not memo.grade(first, "+y", grade).resolved  # another change
    assert not memo.grade(second, "+x", grade).resolved  # another task's files
    assert len(calls) == 3
    # the same files under another id and prompt (a wording of the same micro-task) share it
    assert memo.grade(_task(tmp_path, "c"), "+x", grade).resolved and memo.hits == 2
    assert len(calls) == 3


def test_an_infrastructure_failure_is_not_remembered(tmp_path: Path) -> None:
    memo, task = GradeMemo(), _task(tmp_path, "a")
    broken = GradeReport(resolved=False, failure=Failure.INFRA_ERROR, error="sandbox")
    assert memo.grade(task, "+x", lambda: broken) is broken
    fine = GradeReport(resolved=True, failure=None)
    assert memo.grade(task, "+x", lambda: fine) is fine and memo.hits == 0


def test_memos_sharing_a_folder_grade_a_change_once(tmp_path: Path) -> None:
    task = _task(tmp_path, "a")
    report = GradeReport(
        resolved=False, failure=Failure.TESTS_FAILED, tests={"t::a": TestOutcome.FAILED},
        output="1 failed", canaries_passed=["t::b"], scores={"q": Score(value=0.5)},
    )  # fmt: skip
    first = GradeMemo(tmp_path / "memo")
    assert first.grade(task, "+x", lambda: report) is report
    other = GradeMemo(tmp_path / "memo")  # another process's

    def never() -> GradeReport:
        raise AssertionError("graded again")

    assert other.grade(task, "+x", never) == report and other.hits == 1
    fresh = GradeReport(resolved=True, failure=None)
    assert GradeMemo(tmp_path / "elsewhere").grade(task, "+x", lambda: fresh) is fresh
