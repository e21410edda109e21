"""The `cursorbench` command line: run and show (`tasks` in `cli_tasks`, the leaderboard's
commands in `cli_leaderboard`).

`run` builds a `cursorbench.config.RunSpec` from `--config FILE` and the flags
(flags win) and hands it to `cursorbench.api.prepare`, the one place a run is
wired; this module only shows progress and results.

Exit status: 0 a completed run (whatever it scored; errored attempts are
counted in `errors`), 1 an unexpected internal fault (or `tasks validate`
found an invalid task), 2 bad usage or bad input, including an endpoint that
fails the check before a run (one line on stderr), 3 a run in which every
attempt ended in `error` (nothing was judged), 130 interrupted (the same
command resumes).
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.exceptions import TyperException

from cursorbench.cli.common import (
    EXIT_ALL_ERRORS,
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    SUITE_HELP,
    console,
)
from cursorbench.cli.leaderboard import register as register_leaderboard
from cursorbench.cli.tasks import register as register_tasks
from cursorbench.config import ConfigProblems, Flag, run_flags, spec_from_options
from harness.errors import ConfigError, CursorBenchError
from harness.sandbox.protocol import SandboxUnavailable

if TYPE_CHECKING:
    from harness.model.chat import RetryNotice

# The commands import what they use when they run: `--help` and a bad flag load only the
# CLI, the run config and typer (no runner, model client, `openai` or SQLAlchemy).

# Plain (click) help: it wraps to the terminal instead of cutting option names at 80 columns.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
register_tasks(app)  # tasks list, show, validate, health, build, export, derive, stats
register_leaderboard(app)  # runs, gate, dashboard, db
errors = Console(stderr=True, soft_wrap=not sys.stderr.isatty())  # a log line stays one line

# Every error a user can fix is a CursorBenchError (one line); SandboxUnavailable is the
# sandbox seam's own, raised by `tasks validate` choosing a backend.
KNOWN_ERRORS: tuple[type[Exception], ...] = (CursorBenchError, SandboxUnavailable)


def with_run_flags(command: Callable[..., None]) -> Callable[..., None]:
    """Gives `command(config, suite, **flags)` one typer option per `RunSpec` flag
    (`config.run_flags`): typer reads the options from the signature set here."""
    parameters = [
        _option("config", Path, "A YAML run config; the flags below override what it says."),
    ]
    for flag in run_flags():
        parameters.append(_flag_option(flag))
        if flag.name == "tasks":
            parameters.append(_option("suite", str, SUITE_HELP))
    wrapped: Any = command
    wrapped.__signature__ = inspect.Signature(parameters, return_annotation=None)
    return command


def _option(name: str, value_type: Any, help_text: str) -> inspect.Parameter:
    option = typer.Option(f"--{name}", help=help_text)
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[value_type | None, option],
    )  # fmt: skip


def _flag_option(flag: Flag) -> inspect.Parameter:
    # No `envvar`: OPENAI_API_KEY is read where a key is used (`api`), so that a key in the
    # environment is not a flag given to a run that has no endpoint.
    option = typer.Option(flag.option, help=flag.help, show_default=False)
    return inspect.Parameter(
        flag.name, inspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[flag.value_type | None, option],
    )  # fmt: skip


@app.command()
@with_run_flags
def run(config: Path | None = None, suite: str | None = None, **flags: Any) -> None:
    """Score a model endpoint on CursorBench tasks (default: the embedded reference solver)."""
    from collections import Counter
    from contextlib import ExitStack

    from cursorbench.api import judge, prepare, stop_local_work
    from cursorbench.cli.progress import RunProgress
    from cursorbench.report import print_run
    from cursorbench.tasks.suites import suite_options
    from harness.run.runner import RunInterrupted

    flags["tasks"] = suite_options(suite, flags["tasks"]) or None
    flags["evals"] = _names(flags["evals"])
    spec = spec_from_options(config, **flags)
    with ExitStack() as stack:
        relay = RetryRelay()
        runner = prepare(spec, stack, on_retry=relay)
        for warning in runner.run.warnings:
            errors.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
        pending = runner.pending()
        done, total = len(runner.finished), len(runner.finished) + len(pending)
        if not pending:
            errors.print(
                f"run already complete: {done} of {total} attempts in {runner.run_dir.path}; "
                "nothing to run"
                + (" (--retry-errors runs errored ones again)" if not spec.retry_errors else ""),
                highlight=False,
            )
        try:
            with RunProgress(errors, done, total) as progress:
                relay.target = progress.retry
                outcome = runner.execute(on_result=progress)
        except RunInterrupted as stop:
            stop_local_work()
            errors.print(f"{stop}; run the same command again to resume")
            sys.stderr.flush()
            # Attempts still in flight hold worker threads that the interpreter would
            # wait for; everything finished is already on disk, so leave now.
            os._exit(EXIT_INTERRUPTED)
    print_run(console, outcome.run, outcome.results, runner.config.planned, outcome.summary, False)
    for warning, count in Counter(outcome.store_warnings).items():
        times = f" ({count} times)" if count > 1 else ""
        errors.print(
            f"[yellow]warning:[/] {warning}{times}; rerun the same command to sync the store",
            highlight=False,
        )
    console.print(f"results: {runner.run_dir.path}")
    judged = judge(spec, runner.run_dir.path)
    for key, value in judged.items():
        console.print(f"{key:<30} {value:.3f}")
    if judged:
        console.print(f"judged: {runner.run_dir.path / 'judged.jsonl'}")
    if outcome.all_errors:
        print(
            f"error: every attempt ended in error, e.g. {outcome.results[0].error}; "
            "nothing was judged (fix the cause, then rerun with --retry-errors)",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_ALL_ERRORS)


def _names(value: str | None) -> list[str] | None:
    """`--evals a,b`: the names; an empty one is refused."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise ConfigError("--evals: an empty name; give e.g. intent,eager_editing or all")
    return names


class RetryRelay:
    """Hands retry notices to the progress display once there is one."""

    def __init__(self) -> None:
        self.target: Callable[[RetryNotice], None] | None = None

    def __call__(self, notice: RetryNotice) -> None:
        if self.target is not None:
            self.target(notice)


@app.command()
def show(
    out: Annotated[Path, typer.Argument(help="A run folder written by `run`.")],
    tests: Annotated[
        bool, typer.Option("--tests", help="Also list each attempt's per-test outcomes.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the run, its summary and its attempts as JSON."),
    ] = False,
) -> None:
    """Print a finished (or partial) run as a table."""
    import json

    from pydantic import ValidationError

    from cursorbench.report import print_run, tests_table
    from harness.results import in_order
    from harness.run.rundir import RunDir, RunDirError
    from harness.run.runner import RunConfig

    folder = RunDir(out)
    stored = folder.existing_run()
    if stored is None:
        raise RunDirError(f"{out}: not a run folder (no run.json)")
    try:
        planned = RunConfig.model_validate(stored.config).planned
    except ValidationError:
        raise RunDirError(f"{out}: run.json holds no readable configuration") from None
    results = in_order(folder.finished().values())
    summary = folder.summary()
    if as_json:
        document = {
            "run": stored.model_dump(mode="json"),
            "summary": summary.as_json() if summary is not None else None,
            "attempts": [result.model_dump(mode="json") for result in results],
        }
        print(json.dumps(document, indent=2, default=str))
        return
    print_run(console, stored, results, planned, summary)
    if tests:
        console.print(tests_table(results))


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (CI cancelling a job) stops a run like Ctrl-C


def main() -> None:
    """The `cursorbench` script: SIGTERM stops a run like Ctrl-C; exits with the status."""
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    sys.exit(invoke(sys.argv[1:]))


def invoke(argv: list[str]) -> int:
    """Runs one command line in this process and returns its exit status; every error a
    user can fix is printed as `error: ...` lines on stderr (tests call this directly)."""
    try:
        code = app(args=argv, prog_name="cursorbench", standalone_mode=False)
    except TyperException as error:  # usage errors: one line, not a help box
        if error.format_message():
            print(f"error: {error.format_message()}", file=sys.stderr)
        return error.exit_code
    except ConfigProblems as error:  # every problem of a config, one line each
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KNOWN_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        if os.environ.get("CURSORBENCH_DEBUG"):
            raise
        name = type(error).__name__
        print(f"internal error: {name}: {error} (CURSORBENCH_DEBUG=1 shows more)", file=sys.stderr)
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    main()
