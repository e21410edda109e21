"""Tables a person reads at the end of a run, and from `cursorbench show`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from harness.results import AttemptResult, RunInfo, Status

REFERENCE = "reference-solver"
STATUS_STYLE = {Status.RESOLVED: "green", Status.FAILED: "red", Status.ERROR: "yellow"}


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 120 else f"{value / 60:.1f}m"


def results_table(run: RunInfo, results: list[AttemptResult]) -> Table:
    embedded = run.endpoint_label == REFERENCE
    who = "embedded reference solver, not a model" if embedded else run.base_url
    title = f"{run.model} ({who}) · run {run.id} · sandbox {run.sandbox}"
    table = Table(title=title, title_justify="left", show_footer=True)
    resolved = sum(result.resolved for result in results)
    rate = f"{resolved}/{len(results)} ({resolved / len(results):.0%})" if results else "0/0"
    table.add_column("task", footer="total")
    table.add_column("epoch", justify="right")
    table.add_column("resolved", footer=rate)
    table.add_column("failure", footer=f"{sum(r.status is Status.ERROR for r in results)} errors")
    table.add_column("turns", justify="right", footer=str(sum(r.turns for r in results)))
    tokens = sum(r.usage.tokens for r in results)
    table.add_column("tokens", justify="right", footer=f"{tokens:,}")
    cost = sum(r.usage.cost_usd for r in results)
    table.add_column("cost", justify="right", footer=f"${cost:.4f}")
    wall = sum(r.wall_time_s for r in results)
    table.add_column("time", justify="right", footer=_seconds(wall))
    for result in results:
        style = STATUS_STYLE[result.status]
        table.add_row(
            result.task_id,
            str(result.epoch),
            f"[{style}]{'yes' if result.resolved else 'no'}[/]",
            f"[{style}]{result.failure.value}[/]" if result.failure else "",
            str(result.turns),
            f"{result.usage.tokens:,}",
            f"${result.usage.cost_usd:.4f}",
            _seconds(result.wall_time_s),
        )
    return table


def print_run(console: Console, run: RunInfo, results: list[AttemptResult]) -> None:
    console.print(results_table(run, results))
    for warning in run.warnings:
        console.print(f"[bold yellow]warning:[/] {warning}")
    errors = [r for r in results if r.status is Status.ERROR and r.error]
    if errors:
        console.print(f"[yellow]{len(errors)} attempts ended in error, e.g.:[/] {errors[0].error}")
