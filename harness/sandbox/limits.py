"""Per-sandbox resource limits: memory, processes, workspace size, file size.

One attempt must not be able to starve its neighbours or the harness: a fork
storm, a memory bomb or a disk filler stays inside its own sandbox. This module
provides the pieces; wiring them into the command line is the caller's job.

- `SandboxCgroup`: a memory and a pids cgroup per sandbox, under a `cursorbench`
  folder next to the harness's own cgroup. `wrap(argv)` gives the command that
  joins the groups, volunteers as the OOM killer's first victim, and execs
  `argv`; wrap the whole bubblewrap command line, since /sys is not shown
  inside. `limit_hit()` says which limit was reached, `close()` kills what is
  left and removes the groups. Works on cgroup v1 (memory and pids hierarchies)
  and on cgroup v2 where the harness's cgroup, or the root, may enable the
  memory and pids controllers for a child (v2 forbids that in a non-root group
  that holds processes itself; then cgroups are reported unavailable).
- `protect_harness()`: the OOM killer picks the harness last.
- The workspace's size is bounded by a tmpfs mount (`mounts.py`, root only).
  tmpfs lives in memory, and its pages are charged to the memory
  cgroup of the process that wrote them, for as long as the files exist: a
  sandbox's workspace files count against its `memory_bytes` (a writer that
  fills the group is OOM-killed, and the files stay), so give `memory_bytes`
  room for `disk_bytes` on top of the working memory. Unmounting discards the
  files, so copy out what is needed first.
- `prlimit_argv()`: rlimits for where cgroups are unavailable. They are per
  process, not per sandbox, and RLIMIT_NPROC counts every process of the real
  uid and is not enforced at all for root, so it only isolates sandboxes that
  run under distinct non-root uids.

Not covered: CPU time and I/O bandwidth (commands have wall-clock timeouts),
network (there is none in the sandbox), and inode counts beyond what the
memory cgroup already bounds (tmpfs inodes are kernel memory charged to it).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import shutil
import signal
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

GIB = 1 << 30
PARENT_NAME = "cursorbench"
OOM_SCORE_VICTIM = 1000  # the most an OOM killer may want a process
OOM_SCORE_HARNESS = -900  # low, but not -1000 (which would make it unkillable)
CLOSE_TIMEOUT_S = 10.0


class ResourceLimits(BaseModel):
    """What one sandbox may use at most."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_bytes: int = Field(
        default=4 * GIB, gt=0, description="RAM (and swap) of all its processes together"
    )
    processes: int = Field(
        default=512, gt=0, description="processes and threads alive at once, all together"
    )
    disk_bytes: int = Field(
        default=GIB,
        gt=0,
        description="size of the workspace (a tmpfs: it counts against memory_bytes too)",
    )
    file_bytes: int = Field(default=GIB, gt=0, description="size of any one file written")
    diff_bytes: int = Field(
        default=16 << 20,
        gt=0,
        description="size of the change as a patch, and of any new file in it",
    )


class CgroupError(RuntimeError):
    """A cgroup could not be created, used or removed."""


def describe_bytes(count: int) -> str:
    """`4.0 GiB`, `256 MiB`, `512 KiB`: short and exact enough for a message."""
    if count >= GIB:
        return f"{count / GIB:.1f} GiB"
    if count >= 1 << 20:
        return f"{count / (1 << 20):.0f} MiB"
    return f"{count / 1024:.0f} KiB"


# --- finding the hierarchy ------------------------------------------------------------------


@dataclass(frozen=True)
class CgroupLayout:
    """Where sandbox groups go: the harness's own group in each hierarchy, and the mounts."""

    version: int  # 1: separate memory and pids hierarchies; 2: one unified hierarchy
    memory: Path  # the harness's memory cgroup folder (v2: its only one)
    pids: Path
    memory_mount: Path
    pids_mount: Path


def _unescape(field: str) -> str:
    """mountinfo escapes spaces and the like as octal (`\\040`)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def _cgroup_mounts(mountinfo: str) -> list[tuple[str, set[str], Path, str]]:
    """(fstype, super options, mount point, root inside the hierarchy) for each cgroup mount."""
    mounts = []
    for line in mountinfo.splitlines():
        head, _, tail = line.partition(" - ")
        fields, tail_fields = head.split(), tail.split()
        if len(fields) < 5 or len(tail_fields) < 3:
            continue
        fstype = tail_fields[0]
        if fstype in ("cgroup", "cgroup2"):
            options = set(tail_fields[2].split(","))
            mounts.append((fstype, options, Path(_unescape(fields[4])), _unescape(fields[3])))
    return mounts


def _own_cgroups(proc_cgroup: str) -> dict[str, str]:
    """The caller's cgroup path per v1 controller, and under "" its v2 path."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _folder(mount: Path, mount_root: str, own: str | None) -> Path:
    """The folder of cgroup `own` under a mount of the hierarchy at `mount_root`."""
    if own is None:
        return mount
    relative = os.path.relpath(own, mount_root)
    if relative == "." or relative.startswith(".."):  # outside what is mounted: use its root
        return mount
    return mount / relative


def find_layout(mountinfo: str, proc_cgroup: str, v2_controllers: str = "") -> CgroupLayout | None:
    """Reads the layout from /proc/self/mountinfo, /proc/self/cgroup and, for a v2 mount,
    the controllers its root offers; None when memory and pids are not both available."""
    mounts = _cgroup_mounts(mountinfo)
    own = _own_cgroups(proc_cgroup)
    v1 = {}
    for fstype, options, point, root in mounts:
        for controller in ("memory", "pids"):
            if fstype == "cgroup" and controller in options and controller not in v1:
                v1[controller] = (point, _folder(point, root, own.get(controller)))
    if len(v1) == 2:
        (memory_mount, memory), (pids_mount, pids) = v1["memory"], v1["pids"]
        return CgroupLayout(1, memory, pids, memory_mount, pids_mount)
    if {"memory", "pids"} <= set(v2_controllers.split()):
        for fstype, _, point, root in mounts:
            if fstype == "cgroup2":
                folder = _folder(point, root, own.get(""))
                return CgroupLayout(2, folder, folder, point, point)
    return None


def _read(path: Path) -> str:
    """A small kernel file's text ("" when unreadable); read after every command, so bare."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def detect_layout() -> CgroupLayout | None:
    """This process's cgroup layout, or None where memory and pids cgroups are not mounted."""
    mountinfo = _read(Path("/proc/self/mountinfo"))
    v2_mounts = [point for fstype, _, point, _ in _cgroup_mounts(mountinfo) if fstype == "cgroup2"]
    v2_controllers = _read(v2_mounts[0] / "cgroup.controllers") if v2_mounts else ""
    return find_layout(mountinfo, _read(Path("/proc/self/cgroup")), v2_controllers)


# --- preparing the parent -------------------------------------------------------------------


@dataclass(frozen=True)
class Parents:
    """The `cursorbench` folders that hold the per-sandbox groups."""

    version: int
    memory: Path
    pids: Path


def _enable_controllers(folder: Path) -> None:
    """v2: lets the children of `folder` have memory and pids limits."""
    enabled = _read(folder / "cgroup.subtree_control").split()
    if "memory" not in enabled or "pids" not in enabled:
        (folder / "cgroup.subtree_control").write_text("+memory +pids")


def _prepare_v2(base: Path) -> Path:
    _enable_controllers(base)
    parent = base / PARENT_NAME
    parent.mkdir(exist_ok=True)
    _enable_controllers(parent)
    return parent


def _candidates(folder: Path, mount: Path) -> list[Path]:
    """The harness's own group first (so sandboxes stay inside whatever bounds the harness),
    then the hierarchy's root."""
    return [folder] if folder == mount else [folder, mount]


def _prepare_parents(layout: CgroupLayout) -> Parents:
    """Creates (or finds) the `cursorbench` folders; raises CgroupError when none works."""
    problems = []
    if layout.version == 2:
        for base in _candidates(layout.memory, layout.memory_mount):
            try:
                parent = _prepare_v2(base)
            except OSError as error:
                problems.append(f"{base}: {error.strerror}")
                continue
            return Parents(2, parent, parent)
        raise CgroupError("cannot enable memory and pids cgroups: " + "; ".join(problems))
    found = []
    for folder, mount in ((layout.memory, layout.memory_mount), (layout.pids, layout.pids_mount)):
        for base in _candidates(folder, mount):
            try:
                (base / PARENT_NAME).mkdir(exist_ok=True)
            except OSError as error:
                problems.append(f"{base}: {error.strerror}")
                continue
            found.append(base / PARENT_NAME)
            break
        else:
            raise CgroupError("cannot create cgroups: " + "; ".join(problems))
    return Parents(1, found[0], found[1])


@functools.cache
def _parents() -> Parents | str:
    """The prepared parents, or why there are none (found once per process)."""
    layout = detect_layout()
    if layout is None:
        return "memory and pids cgroups are not both mounted"
    try:
        return _prepare_parents(layout)
    except CgroupError as error:
        return str(error)


def cgroups_unavailable_reason() -> str | None:
    """Why `SandboxCgroup` cannot work here (e.g. not root), or None when it can."""
    parents = _parents()
    return parents if isinstance(parents, str) else None


def cgroups_available() -> bool:
    """True when per-sandbox cgroups can be made; else fall back to `prlimit_argv`, warning.

    The first call creates the `cursorbench` parent folders; they stay, shared by every
    harness on the machine.
    """
    return cgroups_unavailable_reason() is None


# --- one sandbox's groups -------------------------------------------------------------------


def _read_keyed(path: Path) -> dict[str, int]:
    """Parses a flat-keyed cgroup file such as `pids.events` (`max 3`)."""
    values = {}
    for line in _read(path).splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            values[key] = int(value)
    return values


def _read_pids(procs: Path) -> set[int]:
    return {int(pid) for pid in _read(procs).split()}


class SandboxCgroup:
    """The memory and pids cgroups of one sandbox; everything started through `wrap` is in them.

    Memory counts RAM and swap together (v1 `memory.memsw.limit_in_bytes` equal to the
    memory limit, v2 `memory.swap.max` 0), so swap is no way around the limit. When the
    limit is reached the kernel OOM-kills a process of the group, not of the machine.
    The sandbox must not see /sys/fs/cgroup: root inside it, even without capabilities,
    owns the `cgroup.procs` files and could move itself out.
    """

    def __init__(self, limits: ResourceLimits, name: str | None = None) -> None:
        parents = _parents()
        if isinstance(parents, str):
            raise CgroupError(parents)
        self.limits = limits
        self.name = name or f"sandbox-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        if "/" in self.name or self.name.startswith("."):
            raise ValueError(f"bad cgroup name {self.name!r}")
        self.version = parents.version
        self.memory_dir = parents.memory / self.name
        self.pids_dir = parents.pids / self.name
        self.closed = False
        self._create()
        self._seen = self._counters()

    @classmethod
    def adopt(cls, name: str, parents: Parents) -> SandboxCgroup:
        """An existing group by name (left by a killed process), to close it."""
        group = cls.__new__(cls)
        group.name, group.version, group.closed = name, parents.version, False
        group.memory_dir, group.pids_dir = parents.memory / name, parents.pids / name
        return group

    @classmethod
    def observe(
        cls, memory_dir: Path, pids_dir: Path, version: int, limits: ResourceLimits
    ) -> SandboxCgroup:
        """A group made and owned by someone else (a Docker container's), watched for limits
        hit (`limit_hit`) but never closed here."""
        group = cls.__new__(cls)
        group.name, group.version, group.limits = memory_dir.name, version, limits
        group.memory_dir, group.pids_dir, group.closed = memory_dir, pids_dir, False
        group._seen = group._counters()
        return group

    @property
    def folders(self) -> list[Path]:
        """The group's folders: two on cgroup v1, one on v2."""
        return list(dict.fromkeys([self.memory_dir, self.pids_dir]))

    def _create(self) -> None:
        made = []
        try:
            for folder in self.folders:
                folder.mkdir()
                made.append(folder)
            self._set_limits()
        except OSError as error:
            for folder in reversed(made):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise CgroupError(f"cannot set up cgroup {self.name}: {error}") from error

    def _set_limits(self) -> None:
        memory = str(self.limits.memory_bytes)
        (self.pids_dir / "pids.max").write_text(str(self.limits.processes))
        if self.version == 2:
            (self.memory_dir / "memory.max").write_text(memory)
            swap = self.memory_dir / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
            return
        (self.memory_dir / "memory.limit_in_bytes").write_text(memory)
        memsw = self.memory_dir / "memory.memsw.limit_in_bytes"
        if memsw.exists():  # memory + swap; must not be below the memory limit
            memsw.write_text(memory)
        else:  # no swap accounting: keep the group out of swap instead
            (self.memory_dir / "memory.swappiness").write_text("0")

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` run by a shell that joins the groups, sets its OOM score to 1000 and execs it.

        The arguments are passed as positional parameters, never pasted into the script.
        """
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        joins = [f'echo $$ > "${index}"' for index in range(1, len(procs) + 1)]
        steps = [*joins, f"echo {OOM_SCORE_VICTIM} > /proc/self/oom_score_adj"]
        script = " && ".join([*steps, f"shift {len(procs)}", 'exec "$@"'])
        return ["/bin/sh", "-c", script, "sh", *procs, *argv]

    def _counters(self) -> dict[str, int]:
        """How often each limit was hit so far: OOM kills, refused forks."""
        events = "memory.events" if self.version == 2 else "memory.oom_control"
        memory = _read_keyed(self.memory_dir / events).get("oom_kill", 0)
        processes = _read_keyed(self.pids_dir / "pids.events").get("max", 0)
        return {"memory": memory, "processes": processes}

    def limit_hit(self) -> str | None:
        """Which limits were reached since the last call (or since creation), in one line.

        Memory counts OOM kills in the group: `memory.failcnt` also counts moments at the
        limit that reclaim resolved (page cache), which hurt nobody. Processes count forks
        refused at `pids.max`.
        """
        if self.closed:
            return None
        now = self._counters()
        hit = [name for name, count in now.items() if count > self._seen[name]]
        self._seen = now
        messages = {
            "memory": f"memory limit of {describe_bytes(self.limits.memory_bytes)} reached",
            "processes": f"process limit of {self.limits.processes} reached",
        }
        return "; ".join(messages[name] for name in hit) or None

    def pids(self) -> set[int]:
        """The processes in the group now."""
        found: set[int] = set()
        for folder in self.folders:
            found |= _read_pids(folder / "cgroup.procs")
        return found

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Kills every process left in the group and removes it; a second call does nothing.

        Raises CgroupError if the group is still busy after `timeout` seconds.
        """
        if self.closed:
            return
        with contextlib.suppress(OSError):  # no new processes while we kill
            (self.pids_dir / "pids.max").write_text("0")
        kill_switch = self.memory_dir / "cgroup.kill"  # v2 since Linux 5.14
        if self.version == 2 and kill_switch.exists():
            with contextlib.suppress(OSError):
                kill_switch.write_text("1")
        deadline = time.monotonic() + timeout
        while not self._try_remove():
            if time.monotonic() > deadline:
                raise CgroupError(f"cgroup {self.name} still busy: processes {sorted(self.pids())}")
            self._kill_members()
            time.sleep(0.01)
        self.closed = True

    def _with_children(self) -> list[Path]:
        """The folders and, on v2, the per-command folders made in them (`cmdgroups.py`)."""
        found = []
        for folder in self.folders:
            if self.version == 2:
                with contextlib.suppress(OSError):
                    found += [child for child in folder.iterdir() if child.is_dir()]
            found.append(folder)
        return found

    def _kill_members(self) -> None:
        """SIGKILLs the members through pidfds, so a recycled pid is never hit; through pidfds
        of the thread group, which also reaches the threads of a leader that left by SYS_exit
        (`cgroup.kill` does not: `cmdgroups.py`)."""
        for folder in self._with_children():
            procs = folder / "cgroup.procs"
            handles = _pidfds(_read_pids(procs))
            try:
                still_here = _read_pids(procs)  # read after pinning: these are ours
                for pid, fd in handles.items():
                    if pid in still_here:
                        with contextlib.suppress(ProcessLookupError):
                            signal.pidfd_send_signal(fd, signal.SIGKILL)
            finally:
                for fd in handles.values():
                    os.close(fd)

    def _try_remove(self) -> bool:
        """Removes the empty folders, children first; False while some still holds processes."""
        removed = True
        for folder in self._with_children():
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as error:
                if error.errno != errno.EBUSY:
                    raise CgroupError(f"cannot remove {folder}: {error.strerror}") from error
                removed = False
        return removed

    def __enter__(self) -> SandboxCgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pidfds(pids: set[int]) -> dict[int, int]:
    handles = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            handles[pid] = os.pidfd_open(pid)
    return handles


# --- the harness itself ---------------------------------------------------------------------


def protect_harness(score: int = OOM_SCORE_HARNESS) -> bool:
    """Makes the OOM killer pick this process last; False where that is not permitted.

    Children inherit the score: start sandboxes through `SandboxCgroup.wrap` or
    `oom_victim_argv`, which raise it again.
    """
    try:
        Path("/proc/self/oom_score_adj").write_text(str(score))
    except OSError:
        return False
    return True


def oom_victim_argv() -> list[str]:
    """A prefix that raises the command's OOM score to 1000 (for when cgroups are not used)."""
    if shutil.which("choom") is None:
        return []
    return ["choom", "-n", str(OOM_SCORE_VICTIM), "--"]


# --- rlimits, where cgroups are unavailable -------------------------------------------------


def prlimit_argv(limits: ResourceLimits, *, with_cgroup: bool = False) -> list[str]:
    """A `prlimit` prefix: file size always, and without a cgroup also processes and data size.

    Without a cgroup these are weak: RLIMIT_DATA bounds each process's heap (not shared
    memory or tmpfs), and RLIMIT_NPROC counts all processes of the real uid and is ignored
    for root. [] where prlimit is not installed.
    """
    if shutil.which("prlimit") is None:
        return []
    size = limits.file_bytes
    argv = ["prlimit", f"--fsize={size}:{size}"]
    if not with_cgroup:
        memory, processes = limits.memory_bytes, limits.processes
        argv += [f"--data={memory}:{memory}", f"--nproc={processes}:{processes}"]
    return [*argv, "--"]


# --- leftovers of processes that were killed ------------------------------------------------


def sweep_stale_sandbox_groups() -> int:
    """Removes the sandbox groups of harness processes that no longer exist (killed with
    SIGKILL before they could close them), killing whatever is left inside; returns how
    many. `cmdgroups.sweep_stale_cgroups` sweeps their per-command homes too."""
    swept = 0
    parents = _parents()
    if isinstance(parents, str):
        return swept
    names = set()
    for parent in {parents.memory, parents.pids}:
        with contextlib.suppress(OSError):
            names |= {entry.name for entry in parent.iterdir() if entry.is_dir()}
    for name in sorted(names):
        owner = name.split("-")
        if len(owner) < 3 or owner[0] != "sandbox" or not owner[1].isdigit():
            continue
        if Path(f"/proc/{owner[1]}").exists():
            continue  # its harness is alive (or the pid was reused: leave it, to be safe)
        with contextlib.suppress(CgroupError):
            SandboxCgroup.adopt(name, parents).close()
            swept += 1
    return swept
