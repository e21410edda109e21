"""Where the harness keeps its files on this machine (never where an agent can read or write them).

  cache home   `$CURSORBENCH_HOME` (default `~/.cache/cursorbench`): attempts' workspaces,
               validation scratch, the default leaderboard database;
  build cache  `$CURSORBENCH_BUILD_CACHE` (default: the cache home): built tasks, sdists and
               their prepared trees, the leak scan's results. Everything in it is
               content-addressed, so homes may share one (the test suite shares one per
               session while each test keeps its own home).

Both are hidden from the sandbox and left out of the leak scan's view.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

READY_MARKER = "READY"


def cache_home() -> Path:
    """`$CURSORBENCH_HOME`, else `~/.cache/cursorbench` (each machine, each worker, its own)."""
    return Path(os.environ.get("CURSORBENCH_HOME", Path.home() / ".cache" / "cursorbench"))


def self_test_folder() -> Path:
    """The sandbox self-test's scratch, one per process: two processes testing in one
    folder (two `tasks validate` runs at once) removed each other's workspace."""
    return cache_home() / "self-test" / str(os.getpid())


def build_cache() -> Path:
    """`$CURSORBENCH_BUILD_CACHE`, else the cache home."""
    shared = os.environ.get("CURSORBENCH_BUILD_CACHE")
    return Path(shared) if shared else cache_home()


def harness_dirs() -> list[Path]:
    """The folders the sandbox must hide: the cache home and the build cache."""
    return list(dict.fromkeys([cache_home(), build_cache()]))


def build_once(
    root: Path, key: str, fill: Callable[[Path], None], marker: str = READY_MARKER
) -> None:
    """Makes the content-addressed folder `root` once, atomically: unless `root` is marked
    ready already, `fill` writes a staging folder beside it (the path it is given does not
    exist yet; its parent does), which is marked ready (`marker`, holding `key`) and renamed
    into place. Builders of the same folder take turns (a lock beside it): who waited finds
    it ready and does not build it again. If a process that takes no lock got there first,
    its folder stands: theirs is as good. The staging folder never outlives the call."""
    if (root / marker).is_file():
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    with _building(root):
        if (root / marker).is_file():
            return
        staging = root.with_name(f"{root.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            fill(staging)
            (staging / marker).write_text(key)
            try:
                os.rename(staging, root)
            except OSError:  # built concurrently by another process
                if not (root / marker).is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _building(root: Path) -> Iterator[None]:
    """Holds `root`'s build lock: `ROOT.lock` beside it, removed by its holder when done.
    A waiter that then gets the removed file's lock sees that its path names another file
    (or none) and takes the lock again, so two builders never both hold it."""
    path = root.with_name(f"{root.name}.lock")
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)
