"""Workspace mounts: a size-limited tmpfs per sandbox workspace, and how full it is.

The tmpfs bounds the workspace's disk (writes past its size fail with ENOSPC);
its pages count against the memory cgroup of whoever writes them. Only mounts
made here (recognised by their source name) are ever unmounted, including the
ones a killed run left behind (`unmount_all_under`). Root only: where mounting
is not permitted, `mount_workspace_tmpfs` returns False and callers go on
without a disk limit.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import NamedTuple

from harness.sandbox.limits import _read, _unescape

WORKSPACE_SOURCE = "cursorbench-workspace"  # the tmpfs "device" name, to recognise our mounts
MNT_DETACH = 2
MS_NOSUID = 0x2
MS_NODEV = 0x4


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount_source(path: Path) -> str | None:
    """The source of the topmost mount at `path`, or None when nothing is mounted there."""
    target = str(path.resolve())
    source = None
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        head, _, tail = line.partition(" - ")
        fields, tail_fields = head.split(), tail.split()
        if len(fields) >= 5 and len(tail_fields) >= 2 and _unescape(fields[4]) == target:
            source = _unescape(tail_fields[1])  # later lines are mounted on top
    return source


def mount_workspace_tmpfs(path: Path, size_bytes: int) -> bool:
    """Mounts a tmpfs of `size_bytes` on the empty folder `path`; False where not permitted.

    The tmpfs keeps the folder's owner and mode. Writes past the size fail with ENOSPC.
    """
    if any(path.iterdir()):
        raise ValueError(f"{path} is not empty: a mount would hide its files")
    info = path.stat()
    options = (
        f"size={size_bytes},mode={info.st_mode & 0o7777:o},uid={info.st_uid},gid={info.st_gid}"
    )
    returned = _libc().mount(
        WORKSPACE_SOURCE.encode(),
        str(path).encode(),
        b"tmpfs",
        MS_NOSUID | MS_NODEV,
        options.encode(),
    )
    if returned == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EPERM, errno.EACCES):
        return False
    raise OSError(code, f"cannot mount a tmpfs on {path}: {os.strerror(code)}")


def unmount(path: Path) -> bool:
    """Lazily unmounts a workspace tmpfs from `path`; False when none is mounted there.

    Only mounts made by `mount_workspace_tmpfs` are touched. Their files are gone after.
    """
    if _mount_source(path) != WORKSPACE_SOURCE:
        return False
    if _libc().umount2(str(path).encode(), MNT_DETACH) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot unmount {path}: {os.strerror(code)}")
    return True


class DiskUsage(NamedTuple):
    used_bytes: int
    size_bytes: int
    free_bytes: int  # what an unprivileged writer may still use


def disk_usage(path: Path) -> DiskUsage:
    """How full the file system holding `path` is."""
    stats = os.statvfs(path)
    size = stats.f_blocks * stats.f_frsize
    used = (stats.f_blocks - stats.f_bfree) * stats.f_frsize
    return DiskUsage(used, size, stats.f_bavail * stats.f_frsize)


def disk_full(path: Path) -> bool:
    """True when the file system holding `path` has no room left for another block."""
    return disk_usage(path).free_bytes == 0


def unmount_all_under(root: Path) -> int:
    """Unmounts every workspace tmpfs at or below `root` (a killed run leaves them mounted);
    returns how many."""
    prefix = str(root.resolve())
    targets = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        head, _, tail = line.partition(" - ")
        fields, tail_fields = head.split(), tail.split()
        if len(fields) < 5 or len(tail_fields) < 2 or _unescape(tail_fields[1]) != WORKSPACE_SOURCE:
            continue
        target = _unescape(fields[4])
        if target == prefix or target.startswith(prefix + "/"):
            targets.append(target)
    count = 0
    for target in sorted(set(targets), key=len, reverse=True):  # deepest first
        if _libc().umount2(target.encode(), MNT_DETACH) == 0:
            count += 1
    return count
