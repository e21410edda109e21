"""Cgroups that end a command: one cgroup v2 folder per command, emptied by `cgroup.kill`.

A command's processes are ended by their cgroup, not by a list of pids found in /proc: such
a list misses what it cannot tell is alive (a thread-group leader that left by a raw
`SYS_exit` shows state Z while its threads run on), and races what forks while it is read.
A cgroup holds every process its members start, whatever their state, session or process
group, and a process cannot leave it (that needs write access to `cgroup.procs` files a
sandbox never sees). `cgroup.kill` (Linux 5.14) SIGKILLs every process in it at once;
`cgroup.events` says `populated 0` once none is left.

`cgroup.kill` alone is not enough: it signals each process through its leader's own pid
(`send_sig`), and a leader that already left by SYS_exit is exiting, so the kernel leaves
the signal on it and its live threads never see it (Linux 6.18, measured here: the threads
tick on). So every process still listed in `cgroup.procs` (which lists such a leader) is
also killed by `kill(2)`, which signals the whole thread group, until the folder is empty.

- `CommandGroups`: the sandbox's folder in the v2 hierarchy (its `home`), where its command
  server lives, with one child per command (`command()`). On a pure v2 host it is the
  sandbox's own cgroup (its `SandboxCgroup` under bubblewrap, the container's under
  Docker); on a hybrid host (v1 controllers, and v2 mounted at `/sys/fs/cgroup/unified`
  with no controller, which still has `cgroup.kill`) a folder of its own under a
  `cursorbench` folder next to the harness's v2 cgroup. `close()` kills the whole home
  (the attempt's end) and removes what it created.
- `CommandGroup`: one command's folder. Its descriptors go to the command server with the
  request (`cmdserver.py`): the server moves itself into the folder (`cgroup.procs`,
  opened here, so the kernel checks the harness's rights, not the server's), spawns the
  command there, so that it is born inside and nothing it starts can be outside, and moves
  itself back home; at the command's end it writes `cgroup.kill` and waits for `populated
  0`. `end()` on the host then does the same (the server may be gone) and removes it.

Where no v2 hierarchy with `cgroup.kill` can be written (cgroup v1 alone, not root, an old
kernel), `unavailable_reason()` says why; the server then freezes and kills every process
of the sandbox's PID namespace instead (`cmdserver.py`), and the run says so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.sandbox.limits import (
    PARENT_NAME,
    _cgroup_mounts,
    _own_cgroups,
    _read,
    sweep_stale_sandbox_groups,
)

KILL_WAIT_S = 10.0
COMMAND_PREFIX = "cmd-"
FDS = ("cg_procs", "cg_list", "cg_kill", "cg_events", "cg_home")  # named so in a request

log = logging.getLogger(__name__)
KILL_FALLBACK_WARNING = (
    "no cgroup per command: what a command leaves running is ended by stopping and killing "
    "every other process of its sandbox's PID namespace, not by its cgroup"
)


def v2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (a pure v2 host's /sys/fs/cgroup, a hybrid
    one's /sys/fs/cgroup/unified), or None."""
    for fstype, _, point, _ in _cgroup_mounts(_read(Path("/proc/self/mountinfo"))):
        if fstype == "cgroup2":
            return point
    return None


def v2_folder_of(pid: int | str = "self") -> Path | None:
    """The v2 cgroup folder of process `pid` (as seen from here), or None."""
    mount = v2_mount()
    if mount is None:
        return None
    path = _own_cgroups(_read(Path(f"/proc/{pid}/cgroup"))).get("")
    if path is None:
        return None
    return mount / path.lstrip("/")


def populated(events: int) -> bool:
    """Whether the folder whose `cgroup.events` is open at `events` still holds a process."""
    try:
        text = os.pread(events, 4096, 0).decode()
    except OSError:
        return False  # the folder is gone: nothing can be in it
    return "populated 1" in text


def _open(path: Path, flags: int) -> int:
    return os.open(path, flags | os.O_CLOEXEC)


def kill_listed(listing: Callable[[], str]) -> None:
    """SIGKILLs the thread group of every pid a `cgroup.procs` file lists (`listing` reads it),
    through pidfds taken before a second reading, so a recycled pid is never hit."""
    handles = {}
    for pid in {int(word) for word in listing().split()}:
        with contextlib.suppress(OSError):  # gone already
            handles[pid] = os.pidfd_open(pid)
    try:
        still_here = {int(word) for word in listing().split()}  # after pinning: these are ours
        for pid, handle in handles.items():
            if pid in still_here:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(handle, signal.SIGKILL)
    finally:
        for handle in handles.values():
            os.close(handle)


def _pread(fd: int) -> Callable[[], str]:
    def read() -> str:
        try:
            return os.pread(fd, 1 << 20, 0).decode()
        except OSError:
            return ""

    return read


def _kill_and_wait(folder: Path, timeout: float) -> bool:
    """SIGKILLs everything in `folder` and below; True once none is left."""
    with contextlib.suppress(FileNotFoundError):
        (folder / "cgroup.kill").write_text("1")
    deadline = time.monotonic() + timeout
    while "populated 1" in _read(folder / "cgroup.events"):
        for below in [folder, *_children(folder)]:
            kill_listed(functools.partial(_read, below / "cgroup.procs"))
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def _rmdir(folder: Path) -> bool:
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError as error:
        if error.errno in (errno.EBUSY, errno.ENOTEMPTY):
            return False
        raise
    return True


class CommandGroup:
    """One command's cgroup folder and the descriptors the server needs for it."""

    def __init__(self, folder: Path, home_procs: int) -> None:
        folder.mkdir()
        self.folder = folder
        self.fds: dict[str, int] = {}
        try:
            self.fds["cg_procs"] = _open(folder / "cgroup.procs", os.O_WRONLY)
            self.fds["cg_list"] = _open(folder / "cgroup.procs", os.O_RDONLY)
            self.fds["cg_kill"] = _open(folder / "cgroup.kill", os.O_WRONLY)
            self.fds["cg_events"] = _open(folder / "cgroup.events", os.O_RDONLY)
            self.fds["cg_home"] = os.dup(home_procs)
            os.set_inheritable(self.fds["cg_home"], False)
        except OSError:
            self._close_fds()
            _rmdir(folder)
            raise

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.fds["cg_kill"], b"1")

    def end(self, timeout: float = KILL_WAIT_S) -> bool:
        """Kills what is left, waits until none is, removes the folder; False if some
        process outlived `timeout` (the caller then ends the whole sandbox)."""
        if not self.fds:
            return True
        self.kill()
        deadline = time.monotonic() + timeout
        empty = True
        while populated(self.fds["cg_events"]):
            kill_listed(_pread(self.fds["cg_list"]))
            if time.monotonic() > deadline:
                empty = False
                break
            time.sleep(0.001)
        self._close_fds()
        return _rmdir(self.folder) and empty

    def _close_fds(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = {}


class CommandGroups:
    """A sandbox's home in the v2 hierarchy and its per-command children (module docstring)."""

    def __init__(self, home: Path, *, owned: bool) -> None:
        self.home = home
        self.owned = owned  # made here (removed at close), or the sandbox's cgroup (kept)
        self._procs = _open(home / "cgroup.procs", os.O_WRONLY)
        self._names = itertools.count()
        self.closed = False

    @classmethod
    def create(cls, name: str | None = None) -> CommandGroups:
        """A new home of its own, under `cursorbench` next to the harness's v2 cgroup."""
        parent = _parent()
        if isinstance(parent, str):
            raise OSError(errno.ENOTSUP, parent)
        home = parent / (name or f"sandbox-{os.getpid()}-{uuid.uuid4().hex[:12]}")
        home.mkdir()
        try:
            return cls(home, owned=True)
        except OSError:
            _rmdir(home)
            raise

    @classmethod
    def inside(cls, folder: Path) -> CommandGroups:
        """The sandbox's own v2 cgroup as home (a pure v2 host): children are made in it."""
        if not (folder / "cgroup.kill").exists() or folder == v2_mount():
            raise OSError(errno.ENOTSUP, f"{folder}: not a cgroup with cgroup.kill")
        return cls(folder, owned=False)

    def join_argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` run by a shell that first joins the home (bubblewrap: the whole namespace,
        so the server and every command are inside)."""
        script = 'echo $$ > "$1" && shift && exec "$@"'
        return ["/bin/sh", "-c", script, "sh", str(self.home / "cgroup.procs"), *argv]

    def adopt(self, pid: int) -> None:
        """Moves process `pid` (the container's init, before any command) into the home."""
        os.write(self._procs, str(pid).encode())

    def command(self) -> CommandGroup:
        """A fresh folder for the next command."""
        name = f"{COMMAND_PREFIX}{next(self._names)}-{uuid.uuid4().hex[:8]}"
        return CommandGroup(self.home / name, self._procs)

    def close(self, timeout: float = KILL_WAIT_S) -> bool:
        """The attempt's end: every command folder left is killed and removed and, for a home
        made here, the home too (everything in it: the namespace, the container). False when
        a process outlived `timeout`."""
        if self.closed:
            return True
        self.closed = True
        with contextlib.suppress(OSError):
            os.close(self._procs)
        clean = True
        for child in _children(self.home):
            clean = _kill_and_wait(child, timeout) and _rmdir(child) and clean
        if self.owned:
            clean = _kill_and_wait(self.home, timeout) and _rmdir(self.home) and clean
        return clean


def _children(folder: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        return [entry for entry in folder.iterdir() if entry.name.startswith(COMMAND_PREFIX)]
    return []


@functools.cache
def _parent() -> Path | str:
    """The `cursorbench` folder homes are made in, or why there is none (found once)."""
    own = v2_folder_of("self")
    mount = v2_mount()
    if own is None or mount is None:
        return "no cgroup v2 hierarchy is mounted"
    problems = []
    for base in dict.fromkeys([own, mount]):  # the harness's own group first, then the root
        parent = base / PARENT_NAME
        try:
            parent.mkdir(exist_ok=True)
            probe = parent / f"probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            probe.mkdir()
            try:
                if not (probe / "cgroup.kill").exists():
                    return f"{mount}: no cgroup.kill (Linux 5.14 or later needed)"
            finally:
                probe.rmdir()
        except OSError as error:
            problems.append(f"{base}: {error.strerror}")
            continue
        return parent
    return "cannot create cgroup v2 folders: " + "; ".join(problems)


def unavailable_reason() -> str | None:
    """Why per-command cgroups cannot be made here, or None when they can."""
    parent = _parent()
    return parent if isinstance(parent, str) else None


def for_sandbox(folder: Path | None) -> CommandGroups | None:
    """The command groups of a sandbox whose own v2 cgroup is `folder` (a pure v2 host: its
    children are made there, since a process is in one v2 cgroup only and leaving it would
    leave its limits), or, with None, of a new home; None (logged) where neither works."""
    try:
        if folder is not None:
            return CommandGroups.inside(folder)
        return CommandGroups.create()
    except OSError as error:
        warn_fallback(str(error.strerror or error))
        return None


@functools.cache
def warn_fallback(reason: str) -> None:
    """Logs that commands end by a namespace sweep, once per reason (not per sandbox)."""
    log.warning("%s: %s", KILL_FALLBACK_WARNING, reason)


def sweep_stale_homes(parent: Path | None = None) -> int:
    """Removes the homes under `parent` (by default the `cursorbench` folder) of harness
    processes that no longer exist, killing what is left in them; returns how many."""
    if parent is None:
        found = _parent()
        if isinstance(found, str):
            return 0
        parent = found
    swept = 0
    with contextlib.suppress(OSError):
        for home in parent.iterdir():
            owner = home.name.split("-")
            if len(owner) < 3 or owner[0] not in ("sandbox", "probe") or not owner[1].isdigit():
                continue
            if Path(f"/proc/{owner[1]}").exists():
                continue  # its harness is alive (or the pid was reused: leave it, to be safe)
            for child in _children(home):
                _kill_and_wait(child, 1.0) and _rmdir(child)
            if _kill_and_wait(home, 1.0) and _rmdir(home):
                swept += 1
    return swept


def sweep_stale_cgroups() -> int:
    """Removes what harness processes killed with SIGKILL left behind: their per-command
    homes and their sandbox groups, killing whatever is left inside; returns how many."""
    return sweep_stale_homes() + sweep_stale_sandbox_groups()
