"""`cursorbench tasks propose`: the task factory's command (`cursorbench/factory/`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from cursorbench.cli.common import EXIT_BAD_INPUT, console
from cursorbench.factory import KINDS


def register(tasks_app: typer.Typer) -> None:
    tasks_app.command("propose")(tasks_propose)
    tasks_app.command("review")(tasks_review)


def tasks_propose(
    release: Annotated[str, typer.Argument(help="The package release, NAME==VERSION.")],
    out: Annotated[Path, typer.Option(help="Folder for tasks/*.yaml and proposals.json.")],
    max_tasks: Annotated[
        int, typer.Option("--max", min=1, help="Tasks to propose (of each kind).")
    ] = 10,
    released_after: Annotated[
        str | None, typer.Option(help="Refuse releases not after this date (YYYY-MM-DD).")
    ] = None,
    kind: Annotated[
        str,
        typer.Option(
            help="deletion (new-feature tasks), bugs (debugging tasks), iterate (follow-ups "
            "to an earlier turn), review (code review of injected bugs), testing (tests for "
            "a module, graded by mutants), usages (which functions use one: understanding), "
            "docs (docstring examples removed: documentation), refactor (a module merged into "
            f"its importer, to split out again), both ({', '.join(KINDS['both'])}), large "
            f"(the kinds whose references are large: {', '.join(KINDS['large'])}) or all."
        ),
    ] = "deletion",
    jobs: Annotated[int, typer.Option(min=1, help="Candidates measured at once.")] = 1,
    executor: Annotated[
        str, typer.Option(help="local (processes) or ray (Ray tasks, `--jobs` at once).")
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(help="With --executor ray: a cluster's address [default: a local one]."),
    ] = None,
    min_statements: Annotated[
        int,
        typer.Option(
            min=1,
            help="Executable lines a deletion or follow-up must remove at least (a suite "
            "of large changes; the factory's own floor is 5).",
        ),
    ] = 5,
    rewrite_prompts: Annotated[
        bool,
        typer.Option(
            help="Write again the prompts of tasks an earlier run in --out proposed (after "
            "the prompt writer changed); their measurements are kept."
        ),
    ] = False,
    requirement: Annotated[
        list[str] | None,
        typer.Option(
            "--requirement",
            "-r",
            help="A pinned NAME==VERSION the tests need, for the tasks' own environment "
            "(repeat it); one is made anyway when the package is installed beside the harness.",
        ),
    ] = None,
    sandbox: Annotated[str, typer.Option(help="auto, bubblewrap or subprocess.")] = "auto",
    endpoint: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL for the prompt writer.")
    ] = None,
    model: Annotated[str, typer.Option(help="The prompt writer's model name.")] = "gpt-4o-mini",
    avoid_suite: Annotated[
        list[Path] | None,
        typer.Option(
            help="A suite folder (repeat it) whose tasks are not proposed again, nor "
            "deletions or follow-ups of what its tasks remove."
        ),
    ] = None,
) -> None:
    """Propose tasks from a release's own test suite; rerun with the same --out to resume
    (see docs/tasks.md)."""
    from cursorbench.factory.release import check_fresh, find_release
    from cursorbench.tasks.sources.base import SourceError
    from harness.home import build_cache

    if executor not in ("local", "ray"):
        console.print(f"[red]error[/] --executor {executor!r}: give local or ray")
        raise typer.Exit(EXIT_BAD_INPUT)
    if kind not in KINDS:
        choices = ", ".join(KINDS)
        console.print(f"[red]error[/] --kind {kind!r}: give {choices}")
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        after = dt.date.fromisoformat(released_after) if released_after else None
        found = find_release(release, build_cache())
        check_fresh(found, after)  # before anything heavy is imported or started
    except (SourceError, ValueError) as error:
        console.print(f"[red]error[/] {error}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    from cursorbench.factory.propose import propose
    from harness.sandbox import choose_backend

    link = (endpoint, model) if endpoint else None
    backend = choose_backend(sandbox)
    outcome = propose(
        found, out, max_tasks, after, backend, link, kind, jobs, requirement or None,
        min_statements, rewrite_prompts, (ray_address or "local") if executor == "ray" else None,
        tuple(avoid_suite or ()),
    )  # fmt: skip
    summary = outcome.summary
    console.print(
        f"{summary['candidates_total']} candidates, {summary['proposed']} proposed "
        f"({summary['measured_now']} measured now, {summary['resumed']} resumed); "
        f"{out / 'proposals.json'}"
    )
    for path in outcome.written:
        console.print(f"  {path}")


def tasks_review(
    folder: Annotated[Path, typer.Argument(help="A folder `tasks propose` wrote.")],
    accept: Annotated[list[str] | None, typer.Option(help="Task ids to accept.")] = None,
    reject: Annotated[list[str] | None, typer.Option(help="Task ids to reject.")] = None,
    edit: Annotated[str | None, typer.Option(help="A task id whose prompt to replace.")] = None,
    prompt: Annotated[str | None, typer.Option(help="The new prompt, with --edit.")] = None,
    reason: Annotated[str, typer.Option(help="Why (kept in review.jsonl).")] = "",
    move_to: Annotated[
        Path | None, typer.Option(help="Suite folder to move the accepted tasks into.")
    ] = None,
    suite_version: Annotated[
        str | None, typer.Option(help="With --move-to: the suite version the moved tasks get.")
    ] = None,
    show: Annotated[
        bool, typer.Option(help="Print each task still to decide, as a reviewer reads it.")
    ] = False,
    drop_invalid: Annotated[
        bool,
        typer.Option(
            help="FOLDER is a suite: move the tasks its validation report holds as not valid "
            "into FOLDER/refused/, a reject with the report's reason in its review log."
        ),
    ] = False,
) -> None:
    """Accept, edit or reject proposed tasks (non-interactively); move accepted ones."""
    from cursorbench.factory import review

    try:
        if drop_invalid:
            for path in review.drop_invalid(folder):
                console.print(f"refused {path}")
        if edit is not None:
            if not prompt:
                raise review.ReviewError("--edit needs --prompt")
            review.edit_prompt(folder, edit, prompt, reason)
        for task_id in accept or []:
            review.record(folder, task_id, "accept", reason)
        for task_id in reject or []:
            review.record(folder, task_id, "reject", reason)
    except review.ReviewError as error:
        console.print(f"[red]error[/] {error}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    for task_id, state in sorted(review.states(folder).items()):
        console.print(f"{state:7} {task_id}")
    if show:
        for path in review.pending(folder):
            for line in review.describe(folder, path):
                console.print(line, highlight=False, markup=False, soft_wrap=True)
    if move_to is not None:
        try:
            moved = review.move_accepted(folder, move_to, suite_version)
        except review.ReviewError as error:
            console.print(f"[red]error[/] {error}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
        for path in moved:
            console.print(f"moved {path}")
