"""`tasks health`: the reference and the floors regraded under a shifted clock; a task that
rots (a listed test id embeds today's date) is reported with the test responsible."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from cursorbench.tasks.workspace import build
from cursorbench.validation.health import (
    TaskHealth,
    Verdict,
    check_task,
    load_health,
    write_health_report,
)
from cursorbench.validation.perturb import clock_perturbation
from harness.spec import pytest_part
from tests.cli_runner import cursorbench
from tests.cursorbench.sdists import FILES, tiny_task

DATED = (
    "import datetime\n\nimport pytest\n\n\n"
    "@pytest.mark.parametrize('day', [datetime.date.today().isoformat()])\n"
    "def test_today(day):\n    assert len(day) == 10\n"
)


@pytest.mark.slow
def test_the_smoke_sample_stays_healthy_a_day_ahead(cursorbench_home: Path, tmp_path: Path) -> None:
    """What CI runs on every commit: two cheap tasks, the clock a day ahead."""
    done = cursorbench(
        "tasks", "health", "--suite", "smoke", "--tasks", "textkit-slugify",
        "--tasks", "textkit-case-styles", "--clock", "+1d", "--report", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 of 2 tasks changed since validation" in done.stdout
    checks = load_health(tmp_path)
    assert {c.id for c in checks} == {"textkit-slugify", "textkit-case-styles"}
    for check in checks:
        assert check.perturbation.startswith("clock+1d (clock +1d")
        verdicts = {v.who: v.resolved for v in check.verdicts}
        assert verdicts == {"reference": True, "untouched": False, "stub": False}


@pytest.mark.slow
def test_a_v1_sample_stays_healthy_a_year_ahead_at_utc_plus_14(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    """A real package's task on every commit: cachetools' time-aware cache (its pinned sdist,
    the build test_checks' v1 sample shares), a year ahead in Pacific/Kiritimati."""
    done = cursorbench(
        "tasks", "health", "--suite", "v1", "--tasks", "cachetools-tlru", "--clock", "+1y",
        "--tz", "Pacific/Kiritimati", "--report", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 of 1 tasks changed since validation" in done.stdout
    (check,) = load_health(tmp_path)
    assert check.perturbation.startswith("clock+1y-Pacific/Kiritimati")
    verdicts = {v.who: v.resolved for v in check.verdicts}
    assert verdicts == {"reference": True, "untouched": False, "stub": False}


@pytest.mark.slow
def test_a_listed_test_whose_id_embeds_the_date_is_caught_a_day_later(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    """A task validated without perturbation (its P2P lists today's id) rots tomorrow."""
    task = tiny_task(cursorbench_home, tmp_path, {**FILES, "tests/test_dated.py": DATED})
    check = pytest_part(task.verification)
    assert check is not None
    dated = f"tests/test_dated.py::test_today[{dt.date.today().isoformat()}]"
    lists = check.model_copy(update={"pass_to_pass": [*check.pass_to_pass, dated]})
    task = task.model_copy(update={"verification": lists})
    built = build(task)
    today = check_task(built, "auto")
    assert not today.changed
    tomorrow = check_task(built, "auto", clock_perturbation("+1d"))
    assert tomorrow.changed
    reference = next(v for v in tomorrow.verdicts if v.who == "reference")
    assert reference.tests == {dated: "missing"}
    assert [v.who for v in tomorrow.verdicts if v.changed] == ["reference"]


def test_the_health_report_keeps_other_checks_and_replaces_the_same_one(tmp_path: Path) -> None:
    def health(task: str, resolved: bool) -> TaskHealth:
        verdict = Verdict(who="reference", resolved=resolved, expected=True)
        return TaskHealth(id=task, perturbation="p", checked_at="now", verdicts=[verdict])

    write_health_report(tmp_path, [health("a", False), health("b", True)])
    merged = write_health_report(tmp_path, [health("a", True)])
    assert [(c.id, c.changed) for c in merged] == [("a", False), ("b", False)]
    assert "2 checks, 0 changed since validation" in (tmp_path / "HEALTH.md").read_text()
