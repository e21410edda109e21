"""The progress display: live counts on a terminal, one line per attempt in a log; and the
lines task builds print (`build_many`; the build log: tests/cursorbench/tasks/test_build_log.py)."""

from __future__ import annotations

import functools
import io
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from cursorbench.cli.progress import RunProgress
from cursorbench.tasks.loader import bundled_suite, load_tasks, select_tasks
from cursorbench.tasks.suites import build_many
from cursorbench.tasks.workspace import build
from harness.model.chat import RetryNotice
from harness.results import AttemptResult, Failure, Status, Usage

WHEN = datetime(2025, 1, 1, tzinfo=UTC)


def result(task: str, failure: Failure | None, retries: int = 0) -> AttemptResult:
    return AttemptResult(
        task_id=task,
        epoch=0,
        status=Status.RESOLVED if failure is None else failure.status,
        failure=failure,
        error=None if failure is None else "why",
        usage=Usage(tokens_in=1000, tokens_out=234, cost_usd=0.5, retries=retries),
        turns=3,
        wall_time_s=2.5,
        started_at=WHEN,
        finished_at=WHEN,
    )


def test_on_a_terminal_the_bar_counts_everything() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with RunProgress(console, done=1, total=4) as progress:
        progress(result("a", None, retries=2))
        progress(result("b", Failure.TESTS_FAILED))
        progress(result("c", Failure.MODEL_API_ERROR))
        description = progress.bar.tasks[0].description  # type: ignore[union-attr]
    assert "1 resolved" in description and "1 failed" in description
    assert "1 error" in description and "2 retries" in description
    assert "3,702 tokens" in description and "$1.5000" in description
    assert progress.done == 4


def test_in_a_log_each_attempt_and_retry_is_one_plain_line() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, soft_wrap=True)
    with RunProgress(console, done=0, total=2) as progress:
        progress.retry(
            RetryNotice(attempt="a#0", retry=1, max_retries=4, wait_s=2, reason="HTTP 429: slow")
        )
        progress(result("a", Failure.EMPTY_DIFF, retries=1))
    lines = out.getvalue().splitlines()
    assert lines[0] == "retry 1/4 for a#0 in 2.0s: HTTP 429: slow"
    assert lines[1].startswith("[1/2] a#0 failed (empty_diff: why) · 3 turns · 1,234 tokens")
    assert re.search(r"0 resolved, 1 failed, 0 error · 1 retries · elapsed \d+s · ETA", lines[1])
    assert len(lines) == 2


def test_task_builds_print_progress_lines_when_stderr_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build_many` (what `cursorbench run` and `build` call) under a log: one line per
    uncached build started and finished; a second call, all cached, prints nothing."""
    monkeypatch.setenv("CURSORBENCH_BUILD_CACHE", str(tmp_path / "cache"))  # nothing built yet
    tasks = select_tasks(load_tasks([bundled_suite()]), ["textkit-*"])
    unscanned = functools.partial(build, scan=False)  # the leak scan is not what is shown
    built = build_many(tasks, build_one=unscanned)
    assert [b.task.id for b in built] == [t.id for t in tasks]
    lines = capsys.readouterr().err.splitlines()
    assert sorted(line.split()[2] for line in lines) == sorted(2 * [t.id for t in tasks])
    assert sum(line.endswith("started") for line in lines) == 2
    assert sum(" built in " in line for line in lines) == 2
    build_many(tasks, build_one=unscanned)
    assert capsys.readouterr().err == ""
