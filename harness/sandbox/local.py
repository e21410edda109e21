"""Sandboxes on this machine: a host folder per sandbox, every command through a jail.

The host touches a sandbox's folder only while it holds trusted content: it
copies the prepared workspace (and, for grading, the hidden tests) into a
fresh folder and snapshots the git baseline before any command runs. From
then on the workspace is read, written, diffed and patched by commands run
inside the jail, so links, odd names, deep trees and huge files the agent
leaves behind are only ever met by confined, limited processes. Removing the
folder is `rm -rf` (no recursion in Python), and never raises.

Two backends share this module: `bubblewrap` (`BubblewrapJail`, confined) and
`subprocess` (`UnconfinedJail`, for machines without bubblewrap; unsafe). An agent's
bubblewrap sandbox keeps one namespace alive with a command server in it
(`bwrap_server.py`) and runs what it can there; the rest gets a fresh namespace.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.grading.pytest_env import AGENT_PYTEST_ENV
from harness.sandbox.baseline import Baseline, BaselineError, diff_env
from harness.sandbox.bubblewrap import BubblewrapJail, Mount, UnconfinedJail, scrubbed_env
from harness.sandbox.bwrap_server import CommandServer
from harness.sandbox.command import Command
from harness.sandbox.files import WorkspaceFiles, last_line
from harness.sandbox.limits import (
    CgroupError,
    ResourceLimits,
    SandboxCgroup,
    cgroups_available,
)
from harness.sandbox.mounts import disk_full, mount_workspace_tmpfs, unmount, unmount_all_under
from harness.sandbox.process import Completed, run_process
from harness.sandbox.protocol import ResourceLimitExceeded, SandboxUnavailable
from harness.sandbox.pythons import python_bin_dir, with_sandbox_python

Jail = BubblewrapJail | UnconfinedJail


@dataclass(frozen=True)
class SandboxSettings:
    """What every sandbox of a run shares."""

    hidden: tuple[Path, ...] = ()
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    command_slots: threading.Semaphore | None = field(default=None, compare=False)
    keep_files: bool = False  # debugging: workspaces stay on disk after close (no tmpfs)


class _Closable(Protocol):
    def close(self) -> None: ...


_open: set[_Closable] = set()  # any backend's open sandboxes, for an interrupted run to close
_open_lock = threading.Lock()


def close_open_sandboxes() -> None:
    """Closes every sandbox still open (an interrupted run): mounts, cgroups, folders."""
    with _open_lock:
        sandboxes = list(_open)
    for sandbox in sandboxes:
        sandbox.close()


def remove_tree(path: Path) -> None:
    """Deletes a tree however deep or odd, without following links (workspace mounts left
    by a killed run are unmounted first); never raises."""
    if not os.path.lexists(path):
        return
    with contextlib.suppress(OSError):
        unmount_all_under(path)
    subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", str(path)],
        capture_output=True,
        check=False,
    )


def _copy_into(source: Path, target: Path) -> None:
    """Copies a trusted tree into `target` (which may exist), links kept as links."""
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)


def _big_files(root: Path, threshold: int) -> dict[str, int]:
    """Files of a trusted tree over `threshold` bytes, by relative path."""
    found: dict[str, int] = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink() and path.stat().st_size > threshold:
                found[str(path.relative_to(root))] = path.stat().st_size
    return found


class LocalSandbox:
    def __init__(
        self,
        jail: Jail,
        source: Path,
        folder: Path,
        settings: SandboxSettings,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> None:
        self.jail = jail if python_env is None else jail.for_env(python_env)
        self.folder = folder
        self.settings = settings
        self.limits = settings.limits
        self.host_workspace = folder / "workspace"
        self._scratch = folder / "tmp"  # the unconfined jail's private /tmp
        self._cgroup: SandboxCgroup | None = None
        self.server: CommandServer | None = None
        self._tmpfs = False
        self._limit: str | None = None
        self.baseline: Baseline | None = None
        self.files: WorkspaceFiles  # made once the trusted files are in
        remove_tree(folder)
        folder.mkdir(parents=True)
        with _open_lock:
            _open.add(self)
        try:
            self._prepare(source, overlay, track_changes)
        except BaseException:
            self.close()
            raise

    def _prepare(self, source: Path, overlay: Path | None, track_changes: bool) -> None:
        jail, folder = self.jail, self.folder
        self.host_workspace.mkdir()
        self._scratch.mkdir()
        if jail.confined and not self.settings.keep_files:
            self._tmpfs = mount_workspace_tmpfs(self.host_workspace, self.limits.disk_bytes)
        _copy_into(source, self.host_workspace)
        if overlay is not None:
            _copy_into(overlay, self.host_workspace)
        known_big = _big_files(self.host_workspace, self.limits.diff_bytes)
        if track_changes:  # grading never diffs: it skips the snapshot
            self.baseline = Baseline(folder / "baseline", self.host_workspace)
            self.baseline.snapshot()
        diff_env = self._diff_env if track_changes else None
        self.files = WorkspaceFiles(self, self.limits, known_big, diff_env)
        if jail.uid is not None:
            _chown(folder, jail.uid)
        if jail.confined and cgroups_available():
            self._cgroup = SandboxCgroup(self.limits)
        if track_changes and isinstance(jail, BubblewrapJail) and jail.uid is not None:
            self.server = CommandServer(jail, self.host_workspace, folder / "server", self._cgroup)
            self.server.start()  # it gets ready while the agent waits for its first reply

    @property
    def root(self) -> str:
        return self.jail.workspace_path(self.host_workspace)

    # -- commands -----------------------------------------------------------------------

    def _mounts(self, read_only: bool, baseline: bool) -> list[Mount]:
        mounts = [Mount(self.host_workspace, self.root, writable=not read_only)]
        if baseline and self.baseline is not None:
            inside = self.jail.baseline_path(self.baseline.git_dir)
            mounts.append(Mount(self.baseline.git_dir, inside))
        return mounts

    def execute(self, command: Command) -> Completed:
        command = command.with_argv(with_sandbox_python(command.argv, self.jail.python_env))
        if self.server is not None and not command.read_only and not command.baseline:
            with self.settings.command_slots or nullcontext():
                served = self.server.run(command)
            if served is not None:
                self._check_limits()
                return served
        mounts = self._mounts(command.read_only, command.baseline)
        wrapped = self.jail.wrap(command.argv, mounts, cwd=self.root)
        if self._cgroup is not None:
            wrapped.argv = self._cgroup.wrap(wrapped.argv)
        home = self.jail.tmp_path(self._scratch)
        try:
            with self.settings.command_slots or nullcontext():
                done = run_process(
                    wrapped.argv,
                    cwd=self.host_workspace if not self.jail.confined else Path("/"),
                    env=scrubbed_env(home, self.jail.python_env) | dict(command.env),
                    timeout=command.timeout,
                    report=command.report,
                    stdin=command.stdin,
                    pass_fds=wrapped.pass_fds,
                    errors=command.errors,
                    report_owner=self.jail.uid,
                    keep_bytes=command.keep_bytes,
                    max_output_bytes=command.max_output_bytes,
                )
        finally:
            wrapped.close()
        self._check_limits()
        return done

    def run(self, command: str, timeout: float) -> Completed:
        # The agent's own pytest runs as grading's does (same plugins and flags).
        return self.execute(Command.shell(command, timeout, env=AGENT_PYTEST_ENV))

    # -- files, through commands (`files.py`) -------------------------------------------

    def read(self, path: str) -> str:
        return self.files.read(path)

    def write(self, path: str, text: str) -> None:
        self.files.write(path, text)

    def diff(self) -> str:
        return self.files.diff()

    def apply_patch(self, patch: str) -> None:
        self.files.apply_patch(patch)

    def _check_limits(self) -> None:
        if self._limit is None and self._cgroup is not None:
            self._limit = self._cgroup.limit_hit()
        if self._limit is None and self._tmpfs and disk_full(self.host_workspace):
            self._limit = f"workspace disk limit of {_size(self.limits.disk_bytes)} reached"
        if self._limit is not None:
            raise ResourceLimitExceeded(self._limit)

    def limit_hit(self) -> str | None:
        return self._limit

    def _diff_env(self) -> dict[str, str]:
        assert self.baseline is not None
        return diff_env(
            git_dir=self.jail.baseline_path(self.baseline.git_dir),
            work_tree=self.root,
            scratch=self.jail.tmp_path(self._scratch),
        )

    def close(self) -> None:
        with _open_lock:
            _open.discard(self)
        if self.server is not None:
            self.server.close()
        if self._cgroup is not None:
            with contextlib.suppress(CgroupError):  # a stuck group must not stop the run
                self._cgroup.close()
            self._cgroup = None
        if self._tmpfs:
            with contextlib.suppress(OSError):
                unmount(self.host_workspace)
            self._tmpfs = False
        if not self.settings.keep_files:
            remove_tree(self.folder)


class LocalBackend:
    """Opens `LocalSandbox`es behind one jail."""

    def __init__(self, jail: Jail, settings: SandboxSettings) -> None:
        self.jail = jail
        self.settings = settings
        self.name = jail.name
        self.confined = jail.confined

    def open(
        self,
        workspace: Path,
        scratch: Path,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> LocalSandbox:
        try:
            return LocalSandbox(
                self.jail, workspace, scratch, self.settings, overlay, track_changes, python_env
            )
        except BaselineError as error:
            raise SandboxUnavailable(f"cannot open a {self.name} sandbox: {error}") from None

    def self_test(self, scratch: Path) -> None:
        scratch.mkdir(parents=True, exist_ok=True)
        probe = scratch / "probe"
        probe.mkdir(exist_ok=True)
        sandbox = self.open(probe, scratch / "sandbox", track_changes=False)
        command = ["python", "-P", "-c", "import pytest"]
        try:
            done = sandbox.execute(Command(command, timeout=60))
        finally:
            sandbox.close()
        if done.exit_code != 0:
            # Say what failed, not just where: the sandbox started; the interpreter did not.
            last = last_line(done.output) or "no output"
            raise SandboxUnavailable(
                f"the {self.name} sandbox started, but `{' '.join(command[:2])} -c 'import "
                f"pytest'` in it exited {done.exit_code} (python looked up in "
                f"{python_bin_dir()}): {last}"
            )


def _chown(folder: Path, uid: int) -> None:
    subprocess.run(["chown", "-R", "-h", f"{uid}:{uid}", "--", str(folder)], check=True)


def _size(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.0f} MiB"
