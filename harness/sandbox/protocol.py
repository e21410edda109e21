"""The sandbox seam: the one interface every backend implements, for agents and grading alike.

A backend opens a `Sandbox` from a prepared (trusted) workspace, optionally
with trusted files laid over it (hidden tests, at grading). Everything after
that happens *inside* the sandbox: the agent's commands, reading and writing
files, applying a patch, taking the diff, running the tests. The host never
reads, globs, copies or writes through a tree the agent has touched; the
agent's change crosses the boundary only as patch text.

Errors a sandbox raises say whose fault they are:
- `SandboxError`: a tool asked for something refused (the agent sees the message);
- `ResourceLimitExceeded`: the attempt hit a memory, process, disk or size limit;
- `PatchRejected`: the agent's change cannot be taken or applied;
- `SandboxUnavailable`: the backend cannot run here (a setup problem, one line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from harness.sandbox.command import Command
from harness.sandbox.process import Completed


class SandboxError(Exception):
    """A tool asked for something the sandbox refuses (the agent sees the message)."""


class ResourceLimitExceeded(Exception):
    """The attempt reached one of its resource limits (memory, processes, disk, change size)."""


class PatchRejected(Exception):
    """The agent's change could not be taken from its workspace or applied for grading."""


class SandboxUnavailable(RuntimeError):
    """The backend cannot run on this machine (one line, for the user)."""


class Sandbox(Protocol):
    @property
    def root(self) -> str:
        """The workspace path as commands inside the sandbox see it."""
        ...

    def run(self, command: str, timeout: float) -> Completed:
        """Runs a bash command line in the workspace (an agent's `run` tool)."""
        ...

    def execute(self, command: Command) -> Completed:
        """Runs `command` in the workspace (`command.py` says what each field asks for)."""
        ...

    def read(self, path: str) -> str: ...

    def write(self, path: str, text: str) -> None: ...

    def apply_patch(self, patch: str) -> None:
        """Applies a git patch to the workspace, inside the sandbox; `PatchRejected` if not."""
        ...

    def diff(self) -> str:
        """Everything changed since the sandbox opened, as a binary-safe git patch."""
        ...

    def limit_hit(self) -> str | None:
        """One line naming the resource limit reached since the sandbox opened, if any."""
        ...

    def close(self) -> None: ...


class SandboxBackend(Protocol):
    """Opens sandboxes of one kind (`bubblewrap`, `subprocess`, ...)."""

    name: str
    confined: bool

    def open(
        self,
        workspace: Path,
        scratch: Path,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> Sandbox:
        """A sandbox over a copy of `workspace` (plus `overlay`'s files laid over it), kept
        under the host folder `scratch`, which the backend owns until `close`. Without
        `track_changes` it cannot `diff` (grading needs none, and skips the snapshot). With
        `python_env` (a task's environment, `harness/envs.py`) that environment is shown,
        read-only, instead of the harness's, and every Python command runs in it."""
        ...

    def self_test(self, scratch: Path) -> None:
        """Raises `SandboxUnavailable` when Python with pytest cannot run inside."""
        ...
