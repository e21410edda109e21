"""The log of task builds where stderr is not a terminal (`suites.build_many`): a line when
a build starts and one when it ends, e.g.

    [build 2/3] arrow-ranges built in 41.3s (elapsed 1m05s)

and `clock`, the elapsed time as both this log and a run's progress (`cursorbench.cli.progress`)
print it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from rich.console import Console

Built = TypeVar("Built")


def clock(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class BuildLog:
    """One plain line per task build started and finished, with its time (for logs)."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def build(self, task_id: str, work: Callable[[], Built]) -> Built:
        """Runs `work` (one task's build) between its two lines; a failure is printed, then
        raised as it came."""
        self._print(f"[build {self.done}/{self.total}] {task_id} started")
        began = time.monotonic()
        try:
            built = work()
        except BaseException:
            self._finish(f"{task_id} failed after {time.monotonic() - began:.1f}s")
            raise
        self._finish(f"{task_id} built in {time.monotonic() - began:.1f}s")
        return built

    def _finish(self, what: str) -> None:
        with self._lock:
            self.done += 1
            elapsed = clock(time.monotonic() - self.started)
            self._print(f"[build {self.done}/{self.total}] {what} (elapsed {elapsed})")

    def _print(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)
