"""The `Sandbox` protocol: where an agent's tools act.

A backend gives each attempt its own copy of the prepared workspace, runs
commands confined inside it, and reports what changed as a git patch. The
agent loop and the tools only ever see this protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from harness.sandbox.process import Completed


class SandboxError(Exception):
    """A tool asked for something the sandbox refuses (the agent sees the message)."""


class CommandRunner(Protocol):
    """Runs a command over host folders, confined; what grading needs from a backend."""

    @property
    def backend(self) -> str: ...

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        timeout: float,
        report: bool = False,
    ) -> Completed:
        """With `report`, REPORT_PLACEHOLDER in argv names an append-only path whose bytes
        come back as `Completed.report`."""
        ...


class Sandbox(Protocol):
    @property
    def root(self) -> str:
        """The workspace path as commands inside the sandbox see it."""
        ...

    def run(self, command: str, timeout: float) -> Completed: ...

    def read(self, path: str) -> str: ...

    def write(self, path: str, text: str) -> None: ...

    def diff(self) -> str:
        """Everything the agent changed, as a binary-safe git patch against the start."""
        ...

    def close(self) -> None: ...
