"""Validation under perturbation: tests whose id or outcome depends on the date, the time
zone, the order or the load are dropped with their reason, inside the real sandbox."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from cursorbench.tasks.workspace import build
from cursorbench.validation.checks import validate_full
from cursorbench.validation.perturb import (
    VALIDATION_PERTURBATIONS,
    Perturbation,
    PerturbationUnavailable,
    clock_perturbation,
    compare,
    probe,
    pytest_position,
)
from harness.results import TestOutcome as Outcome
from harness.sandbox import SandboxSettings, choose_backend, open_backend
from tests.cursorbench.sdists import FILES, tiny_task

PASSED, FAILED = Outcome.PASSED, Outcome.FAILED

DATED = (
    "import datetime\n\nimport pytest\n\n\n"
    "@pytest.mark.parametrize('day', [datetime.date.today().isoformat()])\n"
    "def test_today(day):\n    assert len(day) == 10\n"
)
ORDERED = (
    "seen = []\n\n\n"
    "def test_first():\n    seen.append(1)\n\n\n"
    "def test_second():\n    assert seen == [1]\n"
)


def test_a_test_whose_id_changes_is_dropped_with_the_id_it_became() -> None:
    today, tomorrow = "t.py::test_day[2026-11-30]", "t.py::test_day[2026-12-01]"
    base = {today: PASSED, "t.py::test_ok": PASSED}
    stable, dropped = compare(
        [base, base], {"day-ahead": {tomorrow: PASSED, "t.py::test_ok": PASSED}}
    )
    assert stable == ["t.py::test_ok"]
    assert dropped == {today: f"its id changes under day-ahead (there: {tomorrow})"}


def test_outcomes_that_differ_anywhere_are_dropped_and_the_first_reason_is_kept() -> None:
    base = {"a": PASSED, "b": PASSED, "c": FAILED, "d": PASSED}
    flaky = {"a": PASSED, "b": FAILED, "c": FAILED, "d": PASSED}
    stable, dropped = compare(
        [base, flaky, base], {"one": {"a": PASSED, "d": FAILED}, "two": {"a": PASSED}}
    )
    assert stable == ["a"]
    assert dropped == {
        "b": "differs between the 3 pristine runs: passed, failed, passed",
        "d": "failed under one",
    }  # c never passed: not stable, and no flake either


def test_clock_words_become_libfaketime_offsets() -> None:
    assert clock_perturbation("+1d").clock == "+1d"
    assert clock_perturbation("+1mo").clock == "+31d"
    assert clock_perturbation("+1y").clock == "+366d"
    assert clock_perturbation("-2days").clock == "-2d"
    assert clock_perturbation("+1y").clock_seconds() == 366 * 86400
    with pytest.raises(ValueError, match=r"give e\.g\."):
        clock_perturbation("+1 fortnight")


def test_the_order_plugin_goes_right_after_dash_m_pytest() -> None:
    assert pytest_position(["python", "-P", "-m", "pytest", "tests"]) == 4
    assert pytest_position(["python", "-c", "print(1)"]) is None


@pytest.mark.slow
@pytest.mark.parametrize("perturbation", VALIDATION_PERTURBATIONS, ids=lambda p: p.name)
def test_each_perturbation_shows_inside_the_sandbox(
    perturbation: Perturbation, tmp_path: Path
) -> None:
    probe(open_backend(choose_backend("auto"), SandboxSettings()), perturbation, tmp_path)


@pytest.mark.slow
def test_a_time_zone_the_sandbox_lacks_is_refused_not_ignored(tmp_path: Path) -> None:
    backend = open_backend(choose_backend("auto"), SandboxSettings())
    with pytest.raises(PerturbationUnavailable, match="no time zone 'Mars/Olympus'"):
        probe(backend, Perturbation(name="mars", tz="Mars/Olympus"), tmp_path)


@pytest.mark.slow
def test_validation_drops_a_dated_test_id_and_an_order_dependent_test(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    files = {**FILES, "tests/test_dated.py": DATED, "tests/test_ordered.py": ORDERED}
    record = validate_full(build(tiny_task(cursorbench_home, tmp_path, files)), "auto")
    assert record.problems == []
    today = dt.date.today().isoformat()
    day_ahead = VALIDATION_PERTURBATIONS[0].describe()
    dated = record.dropped[f"tests/test_dated.py::test_today[{today}]"]
    assert dated.startswith(f"its id changes under {day_ahead} (there: tests/test_dated.py::")
    assert record.dropped["tests/test_ordered.py::test_second"] == f"failed under {day_ahead}"
    assert set(record.dropped) == {
        f"tests/test_dated.py::test_today[{today}]",
        "tests/test_ordered.py::test_second",
    }
    assert record.perturbations == [p.describe() for p in VALIDATION_PERTURBATIONS]
    assert record.stable_tests == 10  # 6 hidden, 3 core, test_first


@pytest.mark.slow
def test_a_task_left_with_too_few_stable_hidden_tests_is_refused(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    dated = "@pytest.mark.parametrize('day', [datetime.date.today().isoformat()])\n"
    extra = "import datetime\n\nimport pytest\n\n" + FILES["tests/test_extra.py"]
    for name in ("vowels", "longest"):
        extra = extra.replace(f"def test_{name}():", f"{dated}def test_{name}(day):")
    files = {**FILES, "tests/test_extra.py": extra}
    record = validate_full(build(tiny_task(cursorbench_home, tmp_path, files)), "auto")
    assert not record.valid
    need = "only 4 stable tests inside the hidden files fail on the broken tree (need 5)"
    assert need in record.problems
    today = dt.date.today().isoformat()
    assert "its id changes under" in record.dropped[f"tests/test_extra.py::test_vowels[{today}]"]
