"""Watching a run: live counts on a terminal, one plain line per attempt anywhere else.

On a terminal, a progress bar on stderr shows resolved, failed and error
counts, retries, tokens, cost, elapsed time and an ETA. When stderr is not a
terminal (CI logs, `2> file`), each finished attempt prints one line, and so
does each retry of a model call (a 429 wait is never silent), e.g.

    [3/12] textkit-slugify#0 resolved · 7 turns · 2,345 tokens · $0.0012 · 4.1s · 0 retries
        | 3 resolved, 0 failed, 0 error · 0 retries · elapsed 12s · ETA 36s   (one line)
    retry 1/4 for textkit-slugify#1 in 2.0s: HTTP 429: rate limited

The ETA is the mean time per attempt finished in this session times the
attempts left, spread over the attempts in flight (the wall clock, not a sum).

Task builds have their own log (`cursorbench.tasks.build_log.BuildLog`).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cursorbench.tasks.build_log import clock
from harness.results import AttemptResult, Status

if TYPE_CHECKING:  # only named here: importing the model client would pull in `openai`
    from harness.model.chat import RetryNotice


class RunProgress:
    """Calling it records one finished attempt; `retry` records a retried model call."""

    def __init__(self, console: Console, done: int, total: int, live: bool | None = None) -> None:
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.total = total
        self.done = done
        self.at_start = done
        self.counts = {Status.RESOLVED: 0, Status.FAILED: 0, Status.ERROR: 0}
        self.retries = 0
        self.tokens = 0
        self.cost = 0.0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self.bar: Progress | None = None
        if self.live:
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self.task = self.bar.add_task(self._description(), total=total, completed=done)

    def __enter__(self) -> RunProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def _description(self) -> str:
        counts = self.counts
        return (
            f"[green]{counts[Status.RESOLVED]} resolved[/] · [red]{counts[Status.FAILED]} failed"
            f"[/] · [yellow]{counts[Status.ERROR]} error[/] · {self.retries} retries · "
            f"{self.tokens:,} tokens · ${self.cost:.4f}"
        )

    def eta(self) -> float | None:
        finished_here = self.done - self.at_start
        if finished_here <= 0:
            return None
        per_attempt = (time.monotonic() - self.started) / finished_here
        return per_attempt * (self.total - self.done)

    def __call__(self, result: AttemptResult) -> None:
        with self._lock:
            self.done += 1
            self.counts[result.status] += 1
            self.retries += result.usage.retries
            self.tokens += result.usage.tokens
            self.cost += result.usage.cost_usd
            if self.bar is not None:
                self.bar.update(self.task, advance=1, description=self._description())
            else:
                self.console.print(self.line(result), markup=False, highlight=False)

    def line(self, result: AttemptResult) -> str:
        outcome = result.status.value
        if result.failure is not None:
            outcome += f" ({result.failure.value}"
            outcome += f": {result.error})" if result.error else ")"
        counts = self.counts
        eta = self.eta()
        return (
            f"[{self.done}/{self.total}] {result.key} {outcome} · {result.turns} turns · "
            f"{result.usage.tokens:,} tokens · ${result.usage.cost_usd:.4f} · "
            f"{result.wall_time_s:.1f}s · {result.usage.retries} retries | "
            f"{counts[Status.RESOLVED]} resolved, {counts[Status.FAILED]} failed, "
            f"{counts[Status.ERROR]} error · {self.retries} retries · "
            f"elapsed {clock(time.monotonic() - self.started)}"
            + (f" · ETA {clock(eta)}" if eta is not None and self.done < self.total else "")
        )

    def retry(self, notice: RetryNotice) -> None:
        """A model call is about to be retried: shown at once (a line, or above the bar)."""
        who = f" for {notice.attempt}" if notice.attempt else ""
        text = (
            f"retry {notice.retry}/{notice.max_retries}{who} in {notice.wait_s:.1f}s: "
            f"{notice.reason}"
        )
        with self._lock:
            if self.bar is not None:
                self.bar.console.print(f"[yellow]{text}[/]", highlight=False)
            else:
                self.console.print(text, markup=False, highlight=False)
