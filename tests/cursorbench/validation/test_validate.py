"""Every bundled task is valid: its tests tell the reference from the mutated workspace."""

from __future__ import annotations

import pytest

from cursorbench.tasks.loader import bundled_suite, load_tasks
from cursorbench.tasks.workspace import build
from cursorbench.validation.validate import validate_task
from harness.sandbox import choose_backend
from harness.spec import pytest_part

TASKS = load_tasks([bundled_suite()])


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=[task.id for task in TASKS])
def test_bundled_task_is_valid(task) -> None:
    assert validate_task(build(task), choose_backend("auto"), repeat=2) == []


def test_a_task_whose_tests_do_not_fail_is_reported() -> None:
    task = next(t for t in TASKS if t.id == "textkit-slugify")
    check = pytest_part(task.verification)
    assert check is not None
    broken = task.model_copy(
        update={
            "verification": check.model_copy(
                update={"fail_to_pass": [check.pass_to_pass[0]], "pass_to_pass": []}
            )
        }
    )
    problems = validate_task(build(broken), choose_backend("auto"), repeat=1)
    assert problems == [f"run 1: unsolved workspace passes FAIL_TO_PASS {check.pass_to_pass[0]}"]
