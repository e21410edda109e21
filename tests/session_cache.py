"""A folder made once per test session and shared by its pytest-xdist workers: xdist hands a
module's tests to several workers, and each would otherwise make a costly module or session
fixture of its own (real runs, a trained model)."""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

_SESSION = uuid.uuid4().hex  # without xdist: this process is the session


def session_folder(cache: Path, name: str, make: Callable[[Path], None]) -> Path:
    """`cache/NAME-SESSION`, filled by `make` once per session: the first worker to get here
    makes it under a lock beside it, the others wait and then only read it. Keyed by xdist's
    testrun uid (one per `pytest -n` session), so no later session reuses it."""
    session = os.environ.get("PYTEST_XDIST_TESTRUNUID") or _SESSION
    folder = cache / f"{name}-{session}"
    ready = folder.with_name(f"{folder.name}.ready")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder.with_name(f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            ready.touch()
    return folder
