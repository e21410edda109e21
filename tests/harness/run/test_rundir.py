"""The run folder: opening, resuming, refusing another configuration, torn lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.results import AttemptResult, Failure, RunInfo, Status, Usage
from harness.results import TestOutcome as Outcome
from harness.run.rundir import ATTEMPTS_FILE, RUN_FILE, RunDir, RunDirError, config_differences
from harness.run.summary import summarize

WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
CONFIG = {"model": "m", "epochs": 2, "sandbox": "bubblewrap", "tasks": {"a": "d1"}}


def run_info(run_id: str = "run1", **config_changes: object) -> RunInfo:
    config = {**CONFIG, **config_changes}
    return RunInfo(
        id=run_id,
        created_at=WHEN,
        model="m",
        base_url="http://127.0.0.1:1/v1",
        endpoint_label="external",
        suite_version="v1",
        config_hash=json.dumps(config, sort_keys=True),
        config=config,
        sandbox="bubblewrap",
    )


def result(task: str, epoch: int, status: Status = Status.RESOLVED) -> AttemptResult:
    failure = {Status.FAILED: Failure.TESTS_FAILED, Status.ERROR: Failure.INFRA_ERROR}.get(status)
    return AttemptResult(
        task_id=task,
        epoch=epoch,
        status=status,
        failure=failure,
        tests={"tests/test_a.py::test_x": Outcome.PASSED},
        usage=Usage(tokens_in=10, tokens_out=5, cost_usd=0.001, model_calls=1),
        turns=2,
        started_at=WHEN,
        finished_at=WHEN,
    )


def test_open_new_folder_writes_run_json(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path / "out")
    fresh = run_info()
    assert run_dir.existing_run() is None
    assert run_dir.open(fresh) == fresh
    assert (tmp_path / "out" / "trajectories").is_dir()
    assert RunInfo.model_validate_json((tmp_path / "out" / RUN_FILE).read_text()) == fresh
    assert run_dir.finished() == {}


def test_reopen_with_the_same_config_returns_the_stored_run(tmp_path: Path) -> None:
    first = RunDir(tmp_path / "out").open(run_info("first"))
    again = RunDir(tmp_path / "out").open(run_info("second"))
    assert again.id == "first"
    assert again == first


def test_reopen_with_another_config_names_the_differing_key(tmp_path: Path) -> None:
    RunDir(tmp_path / "out").open(run_info())
    with pytest.raises(RunDirError) as caught:
        RunDir(tmp_path / "out").open(run_info("other", epochs=3))
    message = str(caught.value)
    assert "\n" not in message
    assert "epochs: 2 -> 3" in message
    assert "model" not in message.split("(", 1)[1]  # only what differs is named
    # The stored run is untouched.
    assert RunDir(tmp_path / "out").existing_run() == run_info()


def test_a_foreign_run_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / RUN_FILE).write_text('{"hello": "world"}')
    with pytest.raises(RunDirError, match="not a CursorBench run file"):
        RunDir(tmp_path).open(run_info())
    (tmp_path / RUN_FILE).write_text("{torn")
    with pytest.raises(RunDirError, match="not a CursorBench run file"):
        RunDir(tmp_path).existing_run()


def test_config_differences_lists_added_removed_changed() -> None:
    old = {"a": 1, "b": 2, "c": 3}
    new = {"a": 1, "b": 5, "d": 4}
    assert config_differences(old, new) == ["b: 2 -> 5", "c: 3 -> None", "d: None -> 4"]
    assert config_differences(old, dict(old)) == []


def test_append_then_finished_round_trip(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.open(run_info())
    written = [result("a", 0), result("a", 1, Status.FAILED), result("b", 0, Status.ERROR)]
    for item in written:
        run_dir.append(item)
    finished = RunDir(tmp_path).finished()
    assert list(finished) == ["a#0", "a#1", "b#0"]
    assert list(finished.values()) == written
    assert len((tmp_path / ATTEMPTS_FILE).read_text().splitlines()) == 3


def test_a_torn_last_line_is_cut_off_and_earlier_results_survive(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.open(run_info())
    run_dir.append(result("a", 0))
    run_dir.append(result("b", 0))
    attempts = tmp_path / ATTEMPTS_FILE
    good = attempts.read_bytes()
    torn = result("c", 0).model_dump_json()[:40]
    attempts.write_bytes(good + torn.encode())
    finished = run_dir.finished()
    assert list(finished) == ["a#0", "b#0"]
    assert attempts.read_bytes() == good  # the torn tail is gone from the file
    # Appending after the repair gives a well-formed file again.
    run_dir.append(result("c", 0))
    assert list(RunDir(tmp_path).finished()) == ["a#0", "b#0", "c#0"]


def test_a_complete_but_invalid_last_line_is_cut_off(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.open(run_info())
    run_dir.append(result("a", 0))
    attempts = tmp_path / ATTEMPTS_FILE
    good = attempts.read_bytes()
    attempts.write_bytes(good + b'{"task_id": "x"}\n')
    assert list(run_dir.finished()) == ["a#0"]
    assert attempts.read_bytes() == good


def test_the_same_attempt_twice_keeps_the_last(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.open(run_info())
    run_dir.append(result("a", 0, Status.ERROR))
    run_dir.append(result("a", 0, Status.RESOLVED))
    assert run_dir.finished()["a#0"].status is Status.RESOLVED


def test_write_summary_is_json_and_reads_back(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.open(run_info())
    summary = summarize([result("a", 0, Status.RESOLVED)], planned=2, wall_time_s=1.5)
    run_dir.write_summary(summary)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["attempts"] == 1 and data["planned"] == 2 and data["complete"] is False
    assert "scores" not in data and "run_id" not in data  # unset optional figures left out
    assert not (tmp_path / "summary.json.tmp").exists()
    assert run_dir.summary() == summary and run_dir.wall_time_s() == 1.5


def test_an_older_summary_still_reads(tmp_path: Path) -> None:
    """A summary.json from before planned/attempt_time_s (its wall time: the attempts' sum)."""
    run_dir = RunDir(tmp_path)
    run_dir.open(run_info())
    old = {"attempts": 3, "resolved": 2, "resolved_rate": 2 / 3, "wall_time_s": 9.0}
    (tmp_path / "summary.json").write_text(json.dumps(old))
    summary = run_dir.summary()
    assert summary is not None and (summary.attempts, summary.resolved) == (3, 2)
    assert summary.attempt_time_s is None and run_dir.wall_time_s() == 0.0
    (tmp_path / "summary.json").write_text('{"not": "a summary"}')
    assert run_dir.summary() is None


def test_lock_refuses_a_second_holder_until_unlocked(tmp_path: Path) -> None:
    first, second = RunDir(tmp_path / "out"), RunDir(tmp_path / "out")
    first.lock()
    try:
        with pytest.raises(RunDirError, match="is in use by another cursorbench run"):
            second.lock()
    finally:
        first.unlock()
    second.lock()  # free again
    second.unlock()
    second.unlock()  # twice is harmless
