"""Hidden tests that change module state: validation refuses their task under both canary
placements, `tasks derive` lists it in `canary_exempt`, and the task is then valid and its
reference resolves at every grading (cursorbench/validation/canary_order.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from cursorbench.tasks.loader import load_task_for_derive
from cursorbench.tasks.suites import suite_path
from cursorbench.tasks.workspace import build
from cursorbench.validation.canary_order import (
    exempt_for_order,
    exempt_problems,
    grade_both_placements,
)
from cursorbench.validation.checks import backend_for, validate_full
from harness.grading.grade import grade
from harness.sandbox import choose_backend
from harness.spec import pytest_part
from tests.cli_runner import cursorbench
from tests.cursorbench.sdists import FILES, tiny_task

# test_vowels wraps the module's function and never undoes it: a canary copy of it that
# runs first wraps it once more, so the original then counts twice as many vowels.
STATEFUL = FILES["tests/test_extra.py"].replace(
    "def test_vowels():\n    assert extra.count_distinctive_vowels_in_text('Banana') == 3\n",
    "def test_vowels():\n"
    "    counted = extra.count_distinctive_vowels_in_text\n"
    "    extra.count_distinctive_vowels_in_text = lambda text: counted(text) * 2\n"
    "    assert extra.count_distinctive_vowels_in_text('Banana') == 6\n",
)
VOWELS = "tests/test_extra.py::test_vowels"
# test_flag cleans up after its assert, which its canary fails, so the flag stays set for
# test_no_flag after it, under either placement: test_flag's canary is to blame.
STATEFUL += (
    "\n\ndef test_flag():\n"
    "    extra.FLAG = 'on'\n"
    "    assert extra.FLAG.upper() == 'ON'\n"
    "    del extra.FLAG\n\n\n"
    "def test_no_flag():\n"
    "    assert not hasattr(extra, 'FLAG')\n"
)
FLAG = "tests/test_extra.py::test_flag"


def write_task(home: Path, folder: Path) -> Path:
    assert FILES["tests/test_extra.py"] != STATEFUL
    task = tiny_task(home, folder, FILES | {"tests/test_extra.py": STATEFUL})
    data = task.model_dump(mode="json", exclude_none=True, exclude={"path"})
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_stateful_hidden_test_is_found_exempted_by_derive_and_then_valid(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    path = write_task(cursorbench_home, tmp_path / "task")
    record = validate_full(build(load_task_for_derive(path)), choose_backend("auto"))
    assert not record.valid and not record.reference_resolved
    assert any(
        VOWELS in p and "only when every canary runs before its original" in p
        for p in record.problems
    ), record.problems

    done = cursorbench("tasks", "derive", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 exempt from canaries" in done.stdout
    check = pytest_part(load_task_for_derive(path).verification)
    assert check is not None and check.canary_exempt == [FLAG, VOWELS]
    assert "tests/test_extra.py::test_no_flag" in check.fail_to_pass

    built = build(load_task_for_derive(path))
    assert exempt_problems(built) == []
    record = validate_full(built, choose_backend("auto"))
    assert record.valid, record.problems
    sandboxes = backend_for(built, choose_backend("auto"))
    for seed in range(4):  # random placements at grading: the reference resolves at each
        report = grade(built.prepared(), built.reference_patch, sandboxes,
                       tmp_path / f"g{seed}", random.Random(seed))  # fmt: skip
        assert report.resolved, (report.error, report.tests)


def test_an_exempt_entry_outside_the_hidden_modules_is_a_problem(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    task = tiny_task(cursorbench_home, tmp_path)
    check = pytest_part(task.verification)
    assert check is not None
    wrong = check.model_copy(update={"canary_exempt": ["tests/test_core.py::test_double"]})
    built = build(task.model_copy(update={"verification": wrong}))
    assert exempt_problems(built) == [
        "canary_exempt names tests/test_core.py::test_double, which is in no hidden test module"
    ]


def test_derive_skips_a_task_without_lists_and_goes_on_past_a_bad_file(tmp_path: Path) -> None:
    review = next(suite_path("v2").glob("tasks/*-review.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed\n", encoding="utf-8")
    before = review.read_text(encoding="utf-8")
    done = cursorbench("tasks", "derive", "--no-lists", str(bad), str(review))
    assert done.returncode == 1
    assert f"PROBLEM {bad}: cannot read" in done.stdout
    assert "graded without test lists, nothing to derive" in done.stdout
    assert review.read_text(encoding="utf-8") == before


@pytest.mark.slow
def test_a_failure_that_is_no_canarys_exempts_nothing(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    """A listed test the reference fails with or without canaries: no test is blamed."""
    failing = (
        FILES["tests/test_extra.py"]
        + "\n\ndef test_wrong():\n    assert extra.reverse_every_word_in_sentence('ab') == 'ab'\n"
    )
    task = tiny_task(cursorbench_home, tmp_path, FILES | {"tests/test_extra.py": failing})
    check = pytest_part(task.verification)
    assert check is not None
    listed = check.model_copy(
        update={"fail_to_pass": [*check.fail_to_pass, "tests/test_extra.py::test_wrong"]}
    )
    built = build(task.model_copy(update={"verification": listed}))
    sandboxes = backend_for(built, choose_backend("auto"))
    exempt, problems = exempt_for_order(built, sandboxes, tmp_path / "scratch")
    assert exempt == []
    assert problems and all("test_wrong" in p for p in problems), problems


LOOSE = FILES["tests/test_extra.py"] + (
    "\n\nclass _Same:  # a library's coercing ==, taken to the extreme\n"
    "    def __init__(self, value):\n"
    "        self.value = value\n\n"
    "    def __eq__(self, other):\n"
    "        return True\n\n\n"
    "def test_loose():\n"
    "    assert _Same(extra.reverse_every_word_in_sentence('ab cd')) == 'ba dc'\n"
)


@pytest.mark.slow
def test_a_canary_honest_code_passes_makes_its_original_exempt(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    """bitstring's `==` parses 'hex=0Xabc,oct=0' as 'hex=0Xabc, oct=0': a canary one
    literal away then passes on the reference, and any grading that drew it would call an
    honest solution tampered with."""
    task = tiny_task(cursorbench_home, tmp_path, FILES | {"tests/test_extra.py": LOOSE})
    check = pytest_part(task.verification)
    assert check is not None
    loose = "tests/test_extra.py::test_loose"
    listed = check.model_copy(update={"fail_to_pass": [*check.fail_to_pass, loose]})
    built = build(task.model_copy(update={"verification": listed}))
    sandboxes = backend_for(built, choose_backend("auto"))
    grades = grade_both_placements(built.prepared(), built.reference_patch, sandboxes,
                                   tmp_path / "before")  # fmt: skip
    assert not grades.resolved
    assert all("tampered" in (r.error or "") for r in grades.reports.values())
    exempt, problems = exempt_for_order(built, sandboxes, tmp_path / "scratch")
    assert (exempt, problems) == ([loose], [])
