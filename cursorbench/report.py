"""Tables a person reads at the end of a run, and from `cursorbench show`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from harness.results import AttemptResult, RunInfo, Status, TestOutcome
from harness.run.summary import RunSummary, score_key, score_means

REFERENCE = "reference-solver"
STATUS_STYLE = {Status.RESOLVED: "green", Status.FAILED: "red", Status.ERROR: "yellow"}
ESTIMATED_NOTE = "~ estimated: the endpoint reported no usage (cost priced from estimates)"


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 120 else f"{value / 60:.1f}m"


def _tokens(count: int, estimated: bool) -> str:
    return f"~{count:,}" if estimated else f"{count:,}"


def _cost(usd: float, estimated: bool) -> str:
    return f"~${usd:.4f}" if estimated else f"${usd:.4f}"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else f"{part}/0"


def partial_note(finished: int, planned: int) -> str | None:
    """`PARTIAL: 3 of 12 attempts finished`, or None for a complete run."""
    return f"PARTIAL: {finished} of {planned} attempts finished" if finished < planned else None


def run_wall_time(results: list[AttemptResult], summary: RunSummary | None) -> float:
    """The run's wall time: from its summary where it was measured, else from the first
    attempt's start to the last one's end (never the sum of overlapping attempts)."""
    if summary is not None and summary.attempt_time_s is not None:
        return summary.wall_time_s
    if not results:
        return 0.0
    start = min(result.started_at for result in results)
    return (max(result.finished_at for result in results) - start).total_seconds()


def results_table(
    run: RunInfo,
    results: list[AttemptResult],
    planned: int,
    summary: RunSummary | None = None,
) -> Table:
    embedded = run.endpoint_label == REFERENCE
    who = "embedded reference solver, not a model" if embedded else run.base_url
    title = f"{run.model} ({who}) · run {run.id} · sandbox {run.sandbox}"
    partial = partial_note(len(results), planned)
    if partial:
        title = f"[bold yellow]{partial}[/] · {title}"
    estimated = any(r.usage.estimated_calls for r in results)
    table = Table(
        title=title,
        title_justify="left",
        show_footer=True,
        caption=ESTIMATED_NOTE if estimated else None,
        caption_justify="left",
    )
    resolved = sum(result.resolved for result in results)
    rate = _share(resolved, len(results))
    if partial:
        rate += f"\n{resolved}/{planned} planned ({resolved / planned:.0%})"
    table.add_column("task", footer="PARTIAL total" if partial else "total")
    table.add_column("epoch", justify="right")
    table.add_column("resolved", footer=rate)
    table.add_column("failure", footer=f"{sum(r.status is Status.ERROR for r in results)} errors")
    table.add_column("turns", justify="right", footer=str(sum(r.turns for r in results)))
    tokens = sum(r.usage.tokens for r in results)
    table.add_column("tokens", justify="right", footer=_tokens(tokens, estimated))
    cost = sum(r.usage.cost_usd for r in results)
    cost_estimated = any(r.usage.cost_estimated for r in results)
    table.add_column("cost", justify="right", footer=_cost(cost, cost_estimated))
    wall = run_wall_time(results, summary)
    table.add_column("time", justify="right", footer=f"{_seconds(wall)} wall")
    scored = any(result.scores for result in results)
    if scored:  # behaviour checks (evals): their means are in `scores_table`
        table.add_column("scores")
    for result in results:
        style = STATUS_STYLE[result.status]
        scores = " ".join(
            f"{score_key(k, s.judged)} {s.value:.2f}" for k, s in sorted(result.scores.items())
        )
        table.add_row(
            result.task_id,
            str(result.epoch),
            f"[{style}]{'yes' if result.resolved else 'no'}[/]",
            f"[{style}]{result.failure.value}[/]" if result.failure else "",
            str(result.turns),
            _tokens(result.usage.tokens, result.usage.estimated_calls > 0),
            _cost(result.usage.cost_usd, result.usage.cost_estimated),
            _seconds(result.wall_time_s),
            *([scores] if scored else []),
        )
    return table


def eval_owner(results: list[AttemptResult]) -> dict[str, str]:
    """Each eval attempt's scenario and its eval (the programmatic score it carries)."""
    from evals import EVALS

    return {
        result.task_id: key
        for result in results
        for key, score in result.scores.items()
        if key in EVALS and not score.judged
    }


def scores_table(results: list[AttemptResult]) -> Table | None:
    """Each eval's mean score with its interval clustered by scenario and bounded in [0, 1]
    (`evals.stats.eval_figures`), next to correctness: how many of its attempts resolved
    their task. Judged scores (LLM judge) have their own rows (`name:judged`), plain means."""
    from evals.stats import eval_figures

    means = score_means(results)
    if not means:
        return None
    figures = eval_figures(results, eval_owner(results))
    table = Table(
        "eval", "score", "95% interval", "scenarios", "attempts", "resolved",
        title="behaviour scores", title_justify="left",
    )  # fmt: skip
    for key, mean in means.items():
        eval_figure = figures.get(key)
        interval, scenarios = "", ""
        if eval_figure is not None and not mean.judged:
            mark = " (not measured)" if eval_figure.degenerate else ""
            interval = f"[{eval_figure.low:.3f}, {eval_figure.high:.3f}]{mark}"
            scenarios = str(eval_figure.scenarios)
        table.add_row(
            key,
            f"{eval_figure.mean if eval_figure and not mean.judged else mean.mean:.3f}",
            interval,
            scenarios,
            str(mean.attempts),
            _share(mean.resolved, mean.attempts),
        )
    return table


def detectable_table(results: list[AttemptResult]) -> Table | None:
    """Per eval, the smallest difference in mean score two runs of its size can detect
    (two-sided 5%, 80% power; `evals.stats.detectable_difference`): from the scenarios'
    measured spread, and in the worst case (spread 0.5)."""
    from evals.stats import WORST_SD, detectable_difference, eval_figures

    figures = eval_figures(results, eval_owner(results))
    if not figures:
        return None
    table = Table(
        "eval", "scenarios", "spread", "detectable difference", "worst case",
        title="smallest detectable difference (5% two-sided, 80% power)", title_justify="left",
    )  # fmt: skip
    for name, figure in figures.items():
        spread = "not measured" if figure.degenerate else f"{figure.sd:.3f}"
        table.add_row(
            name,
            str(figure.scenarios),
            spread,
            f"{figure.detectable:.3f}",
            f"{detectable_difference(figure.scenarios, WORST_SD):.3f}",
        )
    return table


def print_run(
    console: Console,
    run: RunInfo,
    results: list[AttemptResult],
    planned: int,
    summary: RunSummary | None = None,
    warnings: bool = True,
) -> None:
    """The table, the behaviour scores, the run's warnings (unless already shown), an
    example error, and whether the run is partial."""
    console.print(results_table(run, results, planned, summary))
    scores = scores_table(results)
    if scores is not None:
        console.print(scores)
    detectable = detectable_table(results)
    if detectable is not None:
        console.print(detectable)
    for warning in run.warnings if warnings else []:
        console.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
    errors = [r for r in results if r.status is Status.ERROR and r.error]
    if errors:
        console.print(f"[yellow]{len(errors)} attempts ended in error, e.g.:[/] {errors[0].error}")
    partial = partial_note(len(results), planned)
    if partial:
        resolved = sum(result.resolved for result in results)
        console.print(
            f"[bold yellow]{partial}[/]: resolved {_share(resolved, len(results))} of those "
            f"finished, {_share(resolved, planned)} of those planned; "
            "run the same `cursorbench run` command again to finish it"
        )


TEST_STYLE = {
    TestOutcome.PASSED: "green",
    TestOutcome.FAILED: "red",
    TestOutcome.ERROR: "red",
    TestOutcome.SKIPPED: "yellow",
    TestOutcome.MISSING: "yellow",
}


def tests_table(results: list[AttemptResult]) -> Table:
    """Each attempt's graded tests and their outcomes (attempts never graded have none)."""
    table = Table(
        "task", "epoch", "test", "outcome", title="per-test outcomes", title_justify="left"
    )
    for result in results:
        if not result.tests:
            reason = result.failure.value if result.failure else "no tests"
            table.add_row(result.task_id, str(result.epoch), f"(not graded: {reason})", "")
        for test, outcome in sorted(result.tests.items()):
            style = TEST_STYLE[outcome]
            table.add_row(result.task_id, str(result.epoch), test, f"[{style}]{outcome.value}[/]")
    return table
