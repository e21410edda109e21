"""The one error base class: `CursorBenchError`, whose message is one line for the user.

Everything a user can cause or fix (bad options or config, a task file that
does not load, an endpoint that fails its check, a run folder in use, a store
that cannot be opened) is raised as a subclass. The CLI prints it as
`error: MESSAGE` and exits with status 2; library callers catch this one class.
Faults of the harness itself are not `CursorBenchError`s: they are bugs.
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """The first non-empty line of `text` (a message must never span lines)."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


class CursorBenchError(Exception):
    """Something the user can fix; `str()` is always a single line."""

    def __str__(self) -> str:
        return one_line(super().__str__()) or type(self).__name__


class ConfigError(CursorBenchError, ValueError):
    """A run configuration (file, flags or Python object) that does not make a run."""
