"""Where this machine keeps what the harness caches: `$CURSORBENCH_HOME`."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """`$CURSORBENCH_HOME`, else `~/.cache/cursorbench` (each machine, each worker, its own)."""
    return Path(os.environ.get("CURSORBENCH_HOME", Path.home() / ".cache" / "cursorbench"))
