"""The end-of-run table: estimated figures are marked with `~`, costs included."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from cursorbench.report import results_table, run_wall_time
from harness.results import AttemptResult, RunInfo, Status, Usage
from harness.run.summary import summarize

WHEN = datetime(2025, 1, 1, tzinfo=UTC)
RUN = RunInfo(
    id="r1",
    created_at=WHEN,
    model="m",
    base_url="http://x/v1",
    endpoint_label="external",
    suite_version="s",
    config_hash="h",
    config={},
    sandbox="subprocess",
)


def result(task: str, usage: Usage) -> AttemptResult:
    return AttemptResult(
        task_id=task, epoch=0, status=Status.RESOLVED, usage=usage, started_at=WHEN,
        finished_at=WHEN,
    )  # fmt: skip


def rendered(results: list[AttemptResult]) -> str:
    console = Console(width=200, record=True)
    console.print(results_table(RUN, results, planned=len(results)))
    return console.export_text()


def test_a_cost_priced_from_estimated_tokens_is_marked() -> None:
    guessed = result("a", Usage(tokens_in=100, cost_usd=0.25, estimated_calls=1))
    counted = result("b", Usage(tokens_in=100, cost_usd=0.5))
    text = rendered([guessed, counted])
    assert "~$0.2500" in text and "~100" in text  # the estimated attempt's row
    assert " $0.5000" in text and "~$0.5000" not in text  # the counted one's
    assert "~$0.7500" in text  # the total holds an estimate
    assert "~ estimated" in text


def test_counted_costs_carry_no_mark() -> None:
    text = rendered([result("b", Usage(tokens_in=100, cost_usd=0.5))])
    assert "~" not in text


def test_the_wall_time_comes_from_a_measured_summary() -> None:
    results = [result("a", Usage())]
    summary = summarize(results, planned=1, wall_time_s=12.5)
    assert run_wall_time(results, summary) == 12.5
    assert run_wall_time(results, None) == 0.0
