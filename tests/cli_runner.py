"""The `cursorbench` command in this test's process: argv in; stdout, stderr and the exit
status out, as a separate process would give them, without its ~4 s of imports.

`cursorbench(*args)` calls `cursorbench.cli.app.invoke`, the function the script's `main` runs,
so errors come out exactly as the script prints them. Tests of what only a real process
shows (signals, the script's own exit, terminal and environment handling) start one
instead and say why.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class CliResult:
    """What one command line gave; the field names of `subprocess.CompletedProcess`."""

    returncode: int
    stdout: str
    stderr: str


class _Captured(io.StringIO):
    """Text written by the command; reports no terminal, as a pipe would."""

    def isatty(self) -> bool:
        return False


def cursorbench(*args: str) -> CliResult:
    """Runs `cursorbench ARGS...` in this process."""
    from cursorbench.cli.app import invoke

    stdout, stderr = _Captured(), _Captured()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = invoke(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
    return CliResult(code, stdout.getvalue(), stderr.getvalue())
