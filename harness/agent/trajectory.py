"""Trajectories: every message, tool call and result of an attempt, as JSON lines.

A line is written (and flushed) after every step, so a crash or a kill loses
at most the step in flight. The first line is a header carrying the format
version; the last is an `end` record with the outcome.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import TracebackType
from typing import Any

TRAJECTORY_FORMAT_VERSION = 1


class Trajectory:
    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("w", encoding="utf-8")
        self._started = time.monotonic()
        self.write("header", format_version=TRAJECTORY_FORMAT_VERSION, **header)

    def write(self, kind: str, **fields: Any) -> None:
        record = {"type": kind, "t": round(time.monotonic() - self._started, 4), **fields}
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Trajectory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    """The records of a trajectory file; a torn last line (a killed writer) is dropped."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records
