"""What the `cursorbench` command modules share: the console results print on, the exit
statuses (the table is in `cli`'s docstring) and the options that pick tasks."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 140)

EXIT_BAD_INPUT = 2
EXIT_ALL_ERRORS = 3
EXIT_INTERRUPTED = 130

SUITE_HELP = "A bundled suite by name: smoke, v1 or v2 (under construction)."
SuiteOption = Annotated[str | None, typer.Option("--suite", help=SUITE_HELP)]
TasksOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tasks", help="Task ids or globs from the bundled suite, or task files/folders."
    ),
]
