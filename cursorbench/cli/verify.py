"""`cursorbench runs verify RUN_DIR`: is a run folder one sealed record whose verdicts follow
from its recorded replies on this machine? (`cursorbench/verify.py`.) Exit 0 verified, 1 not,
2 bad input."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cursorbench.cli.common import EXIT_BAD_INPUT, console


def verify_command(
    run_dir: Annotated[Path, typer.Argument(help="A finished run's folder.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Where the replay goes, a new or empty folder [default: RUN_DIR-verify]."
        ),
    ] = None,
    sandbox: Annotated[
        str,
        typer.Option(
            "--sandbox",
            help="The backend to grade on [default: the recorded one; another is a mismatch].",
        ),
    ] = "auto",
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Check the folder is one sealed record (its plan, seal, attempts, sandbox and summary
    agree), replay its recorded replies through the agent loop, sandboxes and grading here,
    and compare every planned attempt's verdict and task digest; exit 1 if anything differs."""
    from cursorbench.verify import verify_run

    replay_dir = out or run_dir.with_name(run_dir.name + "-verify")
    if replay_dir.resolve() == run_dir.resolve():
        print("error: --out must not be the run folder itself", file=sys.stderr)
        raise typer.Exit(EXIT_BAD_INPUT)
    report = verify_run(run_dir, replay_dir, sandbox, concurrency)  # bad folders: exit 2
    (replay_dir / "verification.json").write_text(report.model_dump_json(indent=1) + "\n")
    if as_json:
        print(report.model_dump_json())
    else:
        for warning in report.warnings:
            console.print(f"warning: {warning}", highlight=False, markup=False)
        for item in report.mismatches:
            console.print(
                f"differs: {item.where} {item.field}: recorded {item.recorded}, found {item.found}",
                highlight=False,
                markup=False,
            )
        state = "verified" if report.verified else "NOT verified"
        console.print(
            f"{state}: {report.replayed}/{report.attempts} attempts replayed, "
            f"{len(report.mismatches)} differences (replay in {replay_dir})",
            highlight=False,
        )
    if not report.verified:
        raise typer.Exit(1)
