"""Source trees on disk: copying one without caches and build litter, its file list, and its
content digest (the key of every content-addressed cache: built tasks, scenarios, runs).

Used by the suite (`cursorbench.tasks`) and the evals alike, so it lives below both.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

SKIPPED_NAMES = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox"}
SKIPPED_SUFFIXES = (".pyc", ".pyo")


def tree_files(root: Path) -> list[str]:
    """Every file (and link) under `root`, as sorted relative paths."""
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() or path.is_symlink()
    )


def skipped(name: str) -> bool:
    """Whether a file or folder of this name is left out of copies and digests."""
    return name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES) or name.endswith(".egg-info")


def copy_source(source: Path, target: Path) -> None:
    """`source` copied to `target`, links kept as links, without caches and build litter."""
    shutil.copytree(
        source, target, symlinks=True, ignore=lambda _, names: [n for n in names if skipped(n)]
    )


def tree_digest(root: Path) -> str:
    """sha256 over every kept file's path, executable bit and bytes, in sorted order."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skipped(d))
        for name in sorted(f for f in filenames if not skipped(f)):
            path = Path(dirpath) / name
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
