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

import os
from pathlib import Path


def cache_home() -> Path:
    """`$CURSORBENCH_HOME`, else `~/.cache/cursorbench` (each machine, each worker, its own)."""
    return Path(os.environ.get("CURSORBENCH_HOME", Path.home() / ".cache" / "cursorbench"))


def build_cache() -> Path:
    """`$CURSORBENCH_BUILD_CACHE`, else the cache home."""
    shared = os.environ.get("CURSORBENCH_BUILD_CACHE")
    return Path(shared) if shared else cache_home()


def harness_dirs() -> list[Path]:
    """The folders the sandbox must hide: the cache home and the build cache."""
    return list(dict.fromkeys([cache_home(), build_cache()]))
