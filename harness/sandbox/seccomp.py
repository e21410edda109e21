"""TEMPORARY stand-in until the seccomp module lands."""

from pathlib import Path


def seccomp_file() -> Path | None:
    return None
