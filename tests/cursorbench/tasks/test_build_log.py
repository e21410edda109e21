"""The log of task builds: a plain line when each build starts and ends, never wrapped."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from cursorbench.tasks.build_log import BuildLog, clock


def test_clock() -> None:
    assert [clock(5), clock(65), clock(3725)] == ["5s", "1m05s", "1h02m"]


def test_a_build_log_prints_a_line_when_each_build_starts_and_ends() -> None:
    out = io.StringIO()
    log = BuildLog(Console(file=out, force_terminal=False, width=40), total=2)
    assert log.build("a-task-with-a-long-name", lambda: 7) == 7
    with pytest.raises(RuntimeError):
        log.build("b", _fails)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # never wrapped, however narrow the log
    assert lines[0] == "[build 0/2] a-task-with-a-long-name started"
    assert re.fullmatch(
        r"\[build 1/2\] a-task-with-a-long-name built in \d+\.\ds \(elapsed \d+s\)", lines[1]
    )
    assert lines[2] == "[build 1/2] b started"
    assert re.fullmatch(r"\[build 2/2\] b failed after \d+\.\ds \(elapsed \d+s\)", lines[3])


def _fails() -> int:
    raise RuntimeError("no")
