"""Verdicts remembered by change, for an RL environment that grades the same change often.

A policy being trained writes the same few changes again and again (a toy one on a
micro-task writes one of a handful of one-line edits), and grading, the tests in a clean
sandbox and their twin run, is most of an attempt's cost. Grading is a function of the
prepared task and the change, so a `GradeMemo` keeps the first `GradeReport` per (task,
change) and hands it back for the same change later. Only an environment that asks for one
uses it (`training.rl.env.HarnessEnv`); evaluations grade every attempt afresh, so a change
whose tests pass by chance is not frozen at its first outcome there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from harness.grading import GradeReport
from harness.results import Failure
from harness.spec import PreparedTask


class GradeMemo:
    """The first grade of each (task, change), for the life of one environment."""

    def __init__(self) -> None:
        self.reports: dict[str, GradeReport] = {}
        self.hits = 0

    @staticmethod
    def key(task: PreparedTask, patch: str) -> str:
        parts = (task.id, str(task.workspace), str(task.hidden_dir), patch)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def grade(
        self, task: PreparedTask, patch: str, grade: Callable[[], GradeReport]
    ) -> GradeReport:
        """The remembered report of this change, else `grade()`'s (kept unless the
        harness's own trouble ended it)."""
        key = self.key(task, patch)
        found = self.reports.get(key)
        if found is not None:
            self.hits += 1
            return found
        report = grade()
        if report.failure is not Failure.INFRA_ERROR:  # the harness's trouble may pass
            self.reports[key] = report
        return report
