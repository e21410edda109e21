"""Validation reports merge: one run per task (or per machine) becomes one suite report."""

from __future__ import annotations

import datetime as dt
import json
import signal
import sys
from pathlib import Path

import pytest

from cursorbench.cli.app import main
from cursorbench.tasks.stats import (
    load_validation,
    merge_validation_reports,
    write_validation_report,
)
from cursorbench.validation.checks import TaskValidation


def record(task_id: str, valid: bool = True) -> TaskValidation:
    return TaskValidation(
        id=task_id,
        category="new_feature",
        package="pkg==1.0",
        valid=valid,
        problems=[] if valid else ["the untouched workspace resolves the task"],
    )


def report(folder: Path, when: str, minutes: float, *records: TaskValidation) -> Path:
    started = dt.datetime.fromisoformat(when)
    write_validation_report(folder, list(records), started, minutes * 60)
    return folder


def test_merging_keeps_every_task_once_and_the_later_run_wins(tmp_path: Path) -> None:
    first = report(tmp_path / "a", "2026-11-30T10:00:00+00:00", 5, record("a"), record("b", False))
    second = report(tmp_path / "b", "2026-11-30T12:00:00+00:00", 2, record("b"))
    merged = merge_validation_reports([second, first / "validation.json"], tmp_path / "suite")
    assert [(r.id, r.valid) for r in merged] == [("a", True), ("b", True)]
    data = json.loads((tmp_path / "suite" / "validation.json").read_text())
    assert data["date"].startswith("2026-11-30T10:00") and data["duration_s"] == 420.0
    assert [run["tasks"] for run in data["runs"]] == [["a", "b"], ["b"]]
    assert set(load_validation(tmp_path / "suite")) == {"a", "b"}
    header = (tmp_path / "suite" / "VALIDATION.md").read_text().splitlines()[2]
    assert "Merged from 2" in header and "2 of 2 tasks valid" in header


def test_a_merged_report_merges_again_with_its_runs(tmp_path: Path) -> None:
    one = report(tmp_path / "1", "2026-11-30T10:00:00+00:00", 1, record("a"))
    two = report(tmp_path / "2", "2026-11-30T11:00:00+00:00", 1, record("b"))
    merge_validation_reports([one, two], tmp_path / "m")
    three = report(tmp_path / "3", "2026-11-30T12:00:00+00:00", 1, record("c"))
    merged = merge_validation_reports([tmp_path / "m", three], tmp_path / "all")
    assert [r.id for r in merged] == ["a", "b", "c"]
    assert len(json.loads((tmp_path / "all" / "validation.json").read_text())["runs"]) == 3


def test_a_file_that_is_not_a_report_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "validation.json"
    bad.write_text("{}")
    argv = ["tasks", "merge-reports", str(bad), "--into", str(tmp_path / "out")]
    monkeypatch.setattr(sys, "argv", ["cursorbench", *argv])  # the CLI, in-process
    handler = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as done:
            main()
    finally:
        signal.signal(signal.SIGTERM, handler)
    stderr = capsys.readouterr().err
    assert done.value.code == 2
    assert stderr.strip().count("\n") == 0 and "not a validation report" in stderr
    assert not (tmp_path / "out").exists()


def test_tasks_flagged_for_review_are_listed_and_kept(tmp_path: Path) -> None:
    flagged = record("words").model_copy(update={"review": ["9 of 10 pin"], "pinned_tests": 9})
    folder = report(tmp_path, "2026-12-01T10:00:00+00:00", 1, record("plain"), flagged)
    text = (folder / "VALIDATION.md").read_text()
    assert "## Flagged for review" in text and "- words: 9 of 10 pin" in text
    assert "plain:" not in text.split("## Flagged for review")[1]
    again = load_validation(folder)
    assert again["words"].pinned_tests == 9 and again["plain"].review == []
