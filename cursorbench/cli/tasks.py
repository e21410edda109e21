"""`cursorbench tasks ...`: list, show, build, derive, validate, health-check, export and
count the tasks of a suite (exit status as in `cli`: 1 when `validate` or `health` finds a
task invalid or changed, 2 bad input)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cursorbench.cli.common import EXIT_BAD_INPUT, SuiteOption, TasksOption, console
from harness.errors import ConfigError

if TYPE_CHECKING:
    from cursorbench.tasks.workspace import BuiltTask

tasks_app = typer.Typer(
    no_args_is_help=True,
    help="List, show, validate and health-check tasks.",
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    from cursorbench.cli import factory as cli_factory

    cli_factory.register(tasks_app)
    app.add_typer(tasks_app, name="tasks")


@tasks_app.command("list")
def tasks_list(tasks: TasksOption = None, suite: SuiteOption = None) -> None:
    """List tasks: id, category, suite version, prompt length. Task files that do not load
    are reported on stderr, one line each, and the exit status is then 2."""
    from rich.table import Table

    from cursorbench.tasks.loader import tasks_from_options_reporting
    from cursorbench.tasks.suites import suite_options
    from harness.kinds.registry import kind_of

    found, problems = tasks_from_options_reporting(suite_options(suite, tasks))
    table = Table("id", "category", "suite", "prompt chars", "fail->pass", "pass->pass")
    for task in found:
        counts = kind_of(task.verification).test_counts(task.verification)
        table.add_row(
            task.id,
            task.category.value,
            task.suite_version,
            str(len(task.prompt)),
            str(counts.fail_to_pass),  # mutants/answer tasks list none
            str(counts.pass_to_pass),
        )
    console.print(table)
    _print_problems(problems)
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)


def _print_problems(problems: list[str]) -> None:
    """One line on stderr per task file that does not load, naming the file and field."""
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)


@tasks_app.command("show")
def tasks_show(task_id: str, tasks: TasksOption = None, suite: SuiteOption = None) -> None:
    """Show one task: its prompt, source, mutation, verification and limits."""
    from cursorbench.tasks.loader import TaskFileError, tasks_from_options
    from cursorbench.tasks.suites import suite_options

    paths = [value for value in suite_options(suite, tasks) if Path(value).exists()]
    found = tasks_from_options([*paths, task_id])
    if len(found) != 1:
        names = ", ".join(task.id for task in found)
        raise TaskFileError(f"{task_id!r} matches {len(found)} tasks ({names}); name one")
    console.print_json(found[0].model_dump_json())


@tasks_app.command("merge-reports")
def tasks_merge_reports(
    reports: Annotated[list[Path], typer.Argument(help="validation.json files or their folders.")],
    into: Annotated[
        Path, typer.Option(help="Folder for the merged VALIDATION.md and validation.json.")
    ],
) -> None:
    """Merge validation reports (one run per task, or runs on several machines) into one; the
    later run's record of a task wins."""
    from cursorbench.tasks.stats import merge_validation_reports

    try:
        merged = merge_validation_reports(reports, into)
    except ValueError as error:
        raise ConfigError(str(error)) from error
    valid = sum(r.valid for r in merged)
    console.print(f"{valid} of {len(merged)} tasks valid; report: {into / 'VALIDATION.md'}")


@tasks_app.command("validate")
def tasks_validate(
    tasks: TasksOption = None,
    suite: SuiteOption = None,
    repeat: Annotated[int, typer.Option(min=1, help="Runs of each check (--quick).")] = 2,
    sandbox: Annotated[str, typer.Option(help="auto, bubblewrap, docker or subprocess.")] = "auto",
    quick: Annotated[
        bool, typer.Option(help="Only grade the reference and the untouched workspace.")
    ] = False,
    report: Annotated[
        Path | None, typer.Option(help="Folder for VALIDATION.md and validation.json.")
    ] = None,
    perturb: Annotated[
        bool,
        typer.Option(
            help="Also run the pristine tests under a shifted clock, far time zones, another "
            "locale, hash seeds, reordered and under load (--no-perturb: a quick look only)."
        ),
    ] = True,
) -> None:
    """Validate tasks (the full checks: pristine runs, plain and perturbed, broken tree,
    reference, untouched and stub grading, coverage, leaks). Task files that do not load are
    reported first (exit status 2); the others are still checked (1 if any is invalid). The
    report is rewritten after each task, so an interrupted run leaves what it checked."""
    import datetime as dt
    import time

    from rich.markup import escape

    from cursorbench.tasks.loader import tasks_from_options_reporting
    from cursorbench.tasks.stats import write_validation_report
    from cursorbench.tasks.suites import suite_options
    from cursorbench.tasks.workspace import BuildError, build
    from cursorbench.validation.checks import validate_full
    from cursorbench.validation.validate import validate_task
    from harness.sandbox import choose_backend

    backend = choose_backend(sandbox)
    found, problems = tasks_from_options_reporting(suite_options(suite, tasks))
    _print_problems(problems)
    invalid = 0
    records = []
    started, clock = dt.datetime.now(dt.UTC), time.monotonic()
    notes: list[str] = []  # for the review step, not problems
    for task in found:
        try:
            built = build(task)
            if quick:
                lines = validate_task(built, backend, repeat)
            else:
                record = validate_full(built, backend, perturb)
                records.append(record)
                lines = record.problems
                notes += [f"{task.id}: review: {note}" for note in record.review]
                if report is not None:
                    write_validation_report(report, records, started, time.monotonic() - clock)
        except BuildError as error:
            lines = [f"cannot build: {error}"]
        except Exception as error:  # one task's fault must not hide the others' results
            if os.environ.get("CURSORBENCH_DEBUG"):
                raise
            lines = [f"internal error: {type(error).__name__}: {error}"]
        invalid += bool(lines)
        mark = "[red]INVALID[/]" if lines else "[green]ok[/]"
        console.print(f"{mark} {task.id}" + "".join(f"\n    {escape(line)}" for line in lines))
    for note in notes:
        console.print(f"[yellow]{escape(note)}[/]")
    if report is not None:
        write_validation_report(report, records, started, time.monotonic() - clock)
        console.print(f"report: {report / 'VALIDATION.md'}")
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)
    if invalid:
        raise typer.Exit(1)


@tasks_app.command("health")
def tasks_health(
    tasks: TasksOption = None,
    suite: SuiteOption = None,
    clock: Annotated[
        str | None,
        typer.Option(help="Shift the clock inside the sandbox (libfaketime): +1d, +1mo, +1y."),
    ] = None,
    tz: Annotated[
        str | None, typer.Option(help="Run the tests in this time zone, e.g. America/Adak.")
    ] = None,
    sandbox: Annotated[str, typer.Option(help="auto, bubblewrap, docker or subprocess.")] = "auto",
    report: Annotated[
        Path | None,
        typer.Option(help="Folder for HEALTH.md and health.json (merged with what is there)."),
    ] = None,
) -> None:
    """Regrade the reference solution (it must resolve) and the floors, the untouched
    workspace and a stub (they must not), of each task, today or under a shifted clock or
    another time zone; report every task whose verdict changed since its validation, with
    the tests responsible. Exit status 1 if any changed."""
    import tempfile

    from rich.markup import escape

    from cursorbench.tasks.loader import tasks_from_options_reporting
    from cursorbench.tasks.stats import load_validation
    from cursorbench.tasks.suites import suite_options
    from cursorbench.tasks.workspace import BuildError, build
    from cursorbench.validation.health import AS_IS, check_task, write_health_report
    from cursorbench.validation.perturb import PerturbationUnavailable, clock_perturbation, probe
    from harness.home import cache_home
    from harness.sandbox import SandboxSettings, choose_backend, open_backend

    backend = choose_backend(sandbox)
    try:
        perturbation = clock_perturbation(clock) if clock else AS_IS
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if tz:
        name = f"{perturbation.name}-{tz}" if clock else f"tz-{tz}"
        perturbation = perturbation.model_copy(update={"name": name, "tz": tz})
    if perturbation != AS_IS:
        (cache_home() / "validate").mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_home() / "validate") as scratch:
            try:
                probe(open_backend(backend, SandboxSettings()), perturbation, Path(scratch))
            except PerturbationUnavailable as error:
                raise ConfigError(str(error)) from None
    found, problems = tasks_from_options_reporting(suite_options(suite, tasks))
    _print_problems(problems)
    folders = {task.path.parent.parent for task in found if task.path is not None}
    validation = {k: v for folder in folders for k, v in load_validation(folder).items()}
    checks = []
    for task in found:
        try:
            health = check_task(build(task), backend, perturbation, validation.get(task.id))
        except BuildError as error:
            console.print(f"[red]CHANGED[/] {task.id}\n    cannot build: {error}")
            from cursorbench.validation.health import TaskHealth

            health = TaskHealth(
                id=task.id, perturbation=perturbation.describe(), checked_at="",
                problem=f"cannot build: {error}",
            )  # fmt: skip
        checks.append(health)
        mark = "[red]CHANGED[/]" if health.changed else "[green]ok[/]"
        console.print(  # test ids hold brackets, which rich would take for markup
            f"{mark} {task.id} ({escape(perturbation.describe())})"
            + "".join(f"\n    {escape(line)}" for line in health.lines())
        )
        if report is not None:
            write_health_report(report, [health])
    changed = sum(check.changed for check in checks)
    console.print(f"{changed} of {len(checks)} tasks changed since validation")
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)
    if changed:
        raise typer.Exit(1)


@tasks_app.command("build")
def tasks_build(
    tasks: TasksOption = None,
    suite: SuiteOption = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="Builds at once.")] = None,
) -> None:
    """Build tasks into the cache: fetch and hash-check sources, mutate, leak-scan."""
    from cursorbench.tasks.loader import tasks_from_options
    from cursorbench.tasks.suites import build_many, suite_options

    found = tasks_from_options(suite_options(suite, tasks))
    for built in build_many(found, jobs):
        console.print(f"[green]built[/] {built.task.id} {built.root}")


@tasks_app.command("export")
def tasks_export(
    out: Annotated[Path, typer.Option(help="Folder to write one task folder per task into.")],
    fmt: Annotated[str, typer.Option("--format", help="harbor (the only one).")] = "harbor",
    tasks: TasksOption = None,
    suite: SuiteOption = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="Builds at once.")] = None,
) -> None:
    """Export tasks as Harbor task folders (instruction, environment, verifier, solution);
    tasks whose verdict is not a pytest run over the tree are skipped, saying why."""
    from cursorbench.harbor.export import export_tasks
    from cursorbench.tasks.loader import tasks_from_options
    from cursorbench.tasks.suites import build_many, suite_options

    if fmt != "harbor":
        raise ConfigError(f"--format {fmt!r}: only harbor")
    found = tasks_from_options(suite_options(suite, tasks))
    written, skipped = export_tasks(build_many(found, jobs), out)
    for line in skipped:
        console.print(f"[yellow]skipped[/] {line}")
    console.print(f"wrote {len(written)} Harbor tasks to {out} ({len(skipped)} skipped)")


@tasks_app.command("derive")
def tasks_derive(
    files: Annotated[list[Path], typer.Argument(help="Task files (YAML) to fill in.")],
    sandbox: Annotated[str, typer.Option(help="auto, bubblewrap or subprocess.")] = "auto",
    lists: Annotated[
        bool, typer.Option(help="Derive the FAIL_TO_PASS and PASS_TO_PASS lists.")
    ] = True,
    canaries: Annotated[
        bool,
        typer.Option(
            help="Then grade the reference with every canary before, and after, its original "
            "and write the tests that fail under one into canary_exempt."
        ),
    ] = True,
) -> None:
    """Run the pristine tree 3 times and under each perturbation, and the broken tree once,
    and write the FAIL_TO_PASS and PASS_TO_PASS lists they give into each task file (an
    author's tool); then the tests whose canaries fail the reference (`canary_exempt`)."""
    from cursorbench.tasks.loader import TaskFileError, load_task_for_derive
    from cursorbench.tasks.workspace import BuildError, build
    from harness.kinds.registry import pytest_part
    from harness.sandbox import choose_backend

    backend = choose_backend(sandbox)
    failed = 0
    for path in files:
        try:
            task = load_task_for_derive(path)
        except TaskFileError as error:
            failed += 1
            console.print(f"[red]PROBLEM[/] {error}")
            continue
        if pytest_part(task.verification) is None:
            console.print(f"[green]ok[/] {task.id}: graded without test lists, nothing to derive")
            continue
        try:
            built = build(task)
        except BuildError as error:
            failed += 1
            console.print(f"[red]PROBLEM[/] {task.id}: cannot build: {error}")
            continue
        summary, problems = _derive_lists(path, built, backend) if lists else ("", [])
        if canaries and not problems:
            exempt, order_problems = _derive_exempt(path, backend)
            problems += order_problems
            summary += f", {len(exempt)} exempt from canaries" if exempt else ""
        failed += bool(problems)
        mark = "[red]PROBLEM[/]" if problems else "[green]ok[/]"
        console.print(f"{mark} {task.id}{summary}" + "".join(f"\n    {line}" for line in problems))
    if failed:
        raise typer.Exit(1)


def _derive_lists(path: Path, built: BuiltTask, backend: str) -> tuple[str, list[str]]:
    """(summary, problems) of deriving the task's lists, written into its file when they
    changed."""
    import tempfile

    from cursorbench.tasks.suites import write_test_lists
    from cursorbench.validation.checks import backend_for, derive_tests
    from harness.home import cache_home
    from harness.kinds.registry import pytest_part

    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        derived = derive_tests(built, backend_for(built, backend), Path(scratch))
    check = pytest_part(built.task.verification)
    listed = (check.fail_to_pass, check.pass_to_pass) if check is not None else None
    if derived.fail_to_pass and listed != (derived.fail_to_pass, derived.pass_to_pass):
        write_test_lists(path, derived.fail_to_pass, derived.pass_to_pass)
    summary = (
        f": {len(derived.fail_to_pass)} fail->pass, {len(derived.pass_to_pass)} pass->pass, "
        f"{len(derived.spilled)} visible failing, {len(derived.dropped)} dropped (unstable)"
    )
    return summary, list(derived.problems)


def _derive_exempt(path: Path, backend: str) -> tuple[list[str], list[str]]:
    """(canary_exempt, problems) for the task file at `path` as it is now, written into it
    when they changed (`canary_order.exempt_for_order`)."""
    import tempfile

    from cursorbench.tasks.loader import load_task_for_derive
    from cursorbench.tasks.suites import write_verification
    from cursorbench.tasks.workspace import build
    from cursorbench.validation.canary_order import exempt_for_order
    from cursorbench.validation.checks import backend_for
    from harness.home import cache_home
    from harness.kinds.registry import pytest_part

    task = load_task_for_derive(path)
    built = build(task)
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        exempt, problems = exempt_for_order(built, backend_for(built, backend), Path(scratch))
    check = pytest_part(task.verification)
    if check is not None and exempt != sorted(check.canary_exempt):
        write_verification(path, {"canary_exempt": exempt})
    return exempt, problems


@tasks_app.command("stats")
def tasks_stats(
    tasks: TasksOption = None,
    suite: SuiteOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    update_report: Annotated[
        bool,
        typer.Option(
            "--update-report",
            help="Write the changed lines counted on builds into the suite's validation report.",
        ),
    ] = False,
) -> None:
    """The suite's figures against the published ones: tasks, packages, categories, changed
    lines, prompt length, FAIL_TO_PASS/PASS_TO_PASS, coverage of removed lines, runtime.
    Changed lines come from the validation report where it counted them on the build the
    task makes today; only the other tasks are built to count them."""
    import json

    from cursorbench.factory.review import LOG, reviewed
    from cursorbench.tasks.answer import reference_changed_lines, reference_code_lines
    from cursorbench.tasks.loader import tasks_from_options
    from cursorbench.tasks.stats import (
        load_validation,
        print_stats,
        recorded_changed_lines,
        suite_stats,
        task_row,
        update_changed_lines,
    )
    from cursorbench.tasks.suites import build_many, suite_options

    found = tasks_from_options(suite_options(suite, tasks))
    folders = {task.path.parent.parent for task in found if task.path is not None}
    validation = {k: v for folder in folders for k, v in load_validation(folder).items()}
    lines = {t.id: recorded_changed_lines(t, validation.get(t.id)) for t in found}
    # a record that predates the code-lines count is rebuilt only to update the report
    stale = [t for t in found if (n := lines[t.id]) is None or (update_report and n[1] is None)]
    counted = {
        built.task.id: (reference_changed_lines(built), reference_code_lines(built), built.digest)
        for built in build_many(stale)
    }
    lines.update({task_id: (count, code) for task_id, (count, code, _) in counted.items()})
    rows = [task_row(t, lines[t.id] or (0, None), validation.get(t.id)) for t in found]
    accepted = {folder: reviewed(folder) for folder in folders if (folder / LOG).is_file()}
    for task, row in zip(found, rows, strict=True):
        folder = task.path.parent.parent if task.path is not None else None
        row.reviewed = task.id in accepted[folder] if folder in accepted else None
    if update_report:
        for folder in sorted(folders):
            if (folder / "validation.json").is_file():
                update_changed_lines(folder, counted)
    figures = suite_stats(rows)
    if as_json:
        print(json.dumps(figures))
        return
    for line in print_stats(figures):
        console.print(line, highlight=False)
