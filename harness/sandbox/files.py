"""Reading, writing, diffing and patching a workspace, all through commands inside a sandbox.

Every backend's sandbox holds a `WorkspaceFiles` and hands it its `read`, `write`, `diff`
and `apply_patch`. What the files need of the sandbox is `CommandRunner` (its `root` and
its `execute`), the limits, and, where it tracks changes, how to take a diff. Nothing
here reads the workspace from the host.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import Protocol

from harness.sandbox.baseline import apply_command, diff_command
from harness.sandbox.command import Command
from harness.sandbox.limits import ResourceLimits, describe_bytes
from harness.sandbox.process import Completed
from harness.sandbox.protocol import PatchRejected, ResourceLimitExceeded, SandboxError

MAX_READ_BYTES = 2 * 1024 * 1024
SERVICE_TIMEOUT_S = 120.0  # reading, writing, diffing and patching


class CommandRunner(Protocol):
    """The part of a sandbox its files are reached through."""

    @property
    def root(self) -> str:
        """The workspace path as commands inside the sandbox see it."""
        ...

    def execute(self, command: Command) -> Completed: ...


DiffEnv = Callable[[], dict[str, str]]  # the variables of `baseline.diff_command`, per diff


class WorkspaceFiles:
    """The files of `runner`'s workspace. `known_big` names the files of the trusted
    starting tree over the diff limit (with their sizes); `diff_env` is None where the
    sandbox was opened without change tracking (it then cannot `diff`)."""

    def __init__(
        self,
        runner: CommandRunner,
        limits: ResourceLimits,
        known_big: Mapping[str, int],
        diff_env: DiffEnv | None,
    ) -> None:
        self.runner = runner
        self.limits = limits
        self.known_big = dict(known_big)
        self.diff_env = diff_env

    @property
    def root(self) -> str:
        return self.runner.root

    def _inside(self, path: str) -> str:
        """`path` as the sandbox sees it; refuses what plainly names a place outside."""
        joined = posixpath.normpath(posixpath.join(self.root, path))
        if joined != self.root and not joined.startswith(self.root.rstrip("/") + "/"):
            raise SandboxError(f"{path}: outside the workspace {self.root}")
        return joined

    def read(self, path: str) -> str:
        target = self._inside(path)
        script = 'test -f "$1" || { echo "no such file" >&2; exit 3; }; exec head -c "$2" -- "$1"'
        argv = ["sh", "-c", script, "sh", target, str(MAX_READ_BYTES + 1)]
        done = self.runner.execute(
            Command(argv, timeout=SERVICE_TIMEOUT_S, output_cap=MAX_READ_BYTES + 1)
        )
        if done.exit_code == 3:
            raise SandboxError(f"{path}: no such file")
        if done.exit_code != 0:
            raise SandboxError(f"{path}: cannot read: {last_line(done.output)}")
        if done.output_limit_hit or done.output_bytes > MAX_READ_BYTES:
            raise SandboxError(f"{path}: larger than {MAX_READ_BYTES} bytes; use `run` to inspect")
        return done.output

    def write(self, path: str, text: str) -> None:
        target = self._inside(path)
        script = (
            'if [ -d "$1" ]; then echo "is a directory" >&2; exit 3; fi; '
            'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        )
        data = text.encode("utf-8", "surrogateescape")
        argv = ["sh", "-c", script, "sh", target]
        done = self.runner.execute(Command(argv, timeout=SERVICE_TIMEOUT_S, stdin=data))
        if done.exit_code == 3:
            raise SandboxError(f"{path}: is a directory")
        if done.exit_code != 0:
            raise SandboxError(f"{path}: cannot write: {last_line(done.output)}")

    # -- changes ------------------------------------------------------------------------

    def diff(self) -> str:
        if self.diff_env is None:
            raise SandboxError("this sandbox was opened without change tracking")
        self._refuse_new_big_files()
        cap = self.limits.diff_bytes
        command = Command(
            diff_command(),
            timeout=SERVICE_TIMEOUT_S,
            read_only=True,
            env=self.diff_env(),
            output_cap=cap,
            baseline=True,
            errors="surrogateescape",
        )
        done = self.runner.execute(command)
        if done.output_limit_hit:
            raise ResourceLimitExceeded(f"the change is larger than {_size(cap)}")
        if done.timed_out:
            raise ResourceLimitExceeded(f"taking the change ran over {SERVICE_TIMEOUT_S:.0f}s")
        if done.exit_code != 0:
            raise PatchRejected(f"the change could not be taken: {last_line(done.output)}")
        return done.output

    def _refuse_new_big_files(self) -> None:
        """A file over the diff limit that the workspace did not start with ends the attempt
        before git reads it (hashing gigabytes is slow even inside limits)."""
        threshold = self.limits.diff_bytes
        argv = [
            "find",
            ".",
            "-xdev",
            "-type",
            "f",
            "-size",
            f"+{threshold}c",
            "-printf",
            "%s %P\\n",
        ]
        done = self.runner.execute(Command(argv, timeout=SERVICE_TIMEOUT_S, read_only=True))
        for line in done.output.splitlines():
            size, _, name = line.partition(" ")
            if size.isdigit() and self.known_big.get(name) != int(size):
                raise ResourceLimitExceeded(f"{name}: a file over {_size(threshold)} was written")

    def apply_patch(self, patch: str) -> None:
        if not patch.strip():
            return
        data = patch.encode("utf-8", "surrogateescape")
        env = {"GIT_CEILING_DIRECTORIES": "/"}
        command = Command(apply_command(), timeout=SERVICE_TIMEOUT_S, stdin=data, env=env)
        done = self.runner.execute(command)
        if done.exit_code != 0:
            raise PatchRejected(f"the change does not apply: {last_line(done.output)}")


def _size(size: int) -> str:
    return describe_bytes(size)


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:300] if lines else ""
