"""Lint findings of a Python text with ruff, fed on stdin: the text is never written to
disk and no project configuration is read (`--isolated`). Deterministic for a given ruff
version; the only grader helper that starts a process."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from functools import cache

RULES = "E,F,W,B,SIM,UP"
LINE_LENGTH = "100"


@cache
def ruff_command() -> tuple[str, ...]:
    try:
        # ruff ships no type information (no py.typed) for its Python launcher
        from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

        return (find_ruff_bin(),)
    except (ImportError, FileNotFoundError):
        import sys

        return (sys.executable, "-m", "ruff")


def findings(text: str, filename: str = "module.py") -> Counter[str]:
    """Rule codes ruff reports for the text, counted."""
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--select", RULES]
    argv += ["--line-length", LINE_LENGTH, "--output-format", "json", "--exit-zero"]
    argv += ["--stdin-filename", filename, "-"]
    done = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"ruff failed: {done.stderr.strip()[:300]}")
    return Counter(item.get("code") or "syntax-error" for item in json.loads(done.stdout or "[]"))


def added_findings(before: str | None, after: str | None, filename: str) -> Counter[str]:
    """Findings in `after` that `before` did not have (by rule code, counted)."""
    if after is None:
        return Counter()
    new = findings(after, filename)
    return new - findings(before, filename) if before is not None else new
