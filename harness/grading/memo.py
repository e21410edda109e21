"""Verdicts remembered by change, for an RL environment that grades the same change often.

A policy being trained writes the same few changes again and again (a toy one on a
micro-task writes one of a handful of one-line edits), and grading, the tests in a clean
sandbox and their twin run, is most of an attempt's cost. Grading is a function of the
prepared task and the change, so a `GradeMemo` keeps the first `GradeReport` per (task,
change) and hands it back for the same change later. Only an environment that asks for one
uses it (`training.rl.env.HarnessEnv`); evaluations grade every attempt afresh, so a change
whose tests pass by chance is not frozen at its first outcome there.

The task part of the key is what grading reads: the prepared files (workspace and hidden
tests, by content: prepared trees are never modified) and the verification, limits and
environment, not the task's id or prompt. Tasks that differ only in their wording (the
micro-tasks' train and held-out prompts over one repository) share their verdicts. With a
folder, the reports are kept there too, so the processes of one RL run (its rollout
workers, its held-out scorer, a resumed invocation) grade each change once between them.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.grading.grade import GradeReport
from harness.results import Failure, Score, TestOutcome
from harness.spec import PreparedTask

MEMO_VERSION = "1"  # bump when what a kept report means changes
_trees: dict[Path, str] = {}  # digests of prepared trees, by path (they never change)


def tree_digest(root: Path) -> str:
    """A digest of the files under `root` (names, link targets and bytes); "" if absent."""
    found = _trees.get(root)
    if found is not None:
        return found
    digest = hashlib.sha256()
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            if path.is_symlink():
                digest.update(b"L" + os.readlink(path).encode())
            elif path.is_file():
                digest.update(b"F" + hashlib.sha256(path.read_bytes()).digest())
            digest.update(b"\0")
    _trees[root] = digest.hexdigest()
    return _trees[root]


def _task_key(task: PreparedTask) -> str:
    graded = task.model_dump(
        mode="json",
        include={"verification", "limits", "python_env", "restored_functions"},
    )
    files = [tree_digest(task.workspace), tree_digest(task.hidden_dir)]
    return json.dumps([MEMO_VERSION, graded, files], sort_keys=True)


def _dump(report: GradeReport) -> dict[str, Any]:
    data = asdict(report)
    data["scores"] = {k: v.model_dump(mode="json") for k, v in report.scores.items()}
    return data


def _load(data: dict[str, Any]) -> GradeReport:
    failure = data.pop("failure")
    return GradeReport(
        **{k: v for k, v in data.items() if k not in ("tests", "scores")},
        failure=None if failure is None else Failure(failure),
        tests={k: TestOutcome(v) for k, v in data["tests"].items()},
        scores={k: Score.model_validate(v) for k, v in data["scores"].items()},
    )


class GradeMemo:
    """The first grade of each (task's graded content, change): for the life of one
    environment, or, with `folder`, of every environment that shares the folder."""

    def __init__(self, folder: Path | None = None) -> None:
        self.reports: dict[str, GradeReport] = {}
        self.hits = 0
        self.folder = folder

    @staticmethod
    def key(task: PreparedTask, patch: str) -> str:
        return hashlib.sha256("\0".join((_task_key(task), patch)).encode()).hexdigest()

    def _kept(self, key: str) -> GradeReport | None:
        found = self.reports.get(key)
        if found is None and self.folder is not None:
            entry = self.folder / f"{key}.json"
            if entry.is_file():
                found = self.reports[key] = _load(json.loads(entry.read_text()))
        return found

    def _keep(self, key: str, report: GradeReport) -> None:
        self.reports[key] = report
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            staging = self.folder / f"{key}.{uuid.uuid4().hex[:8]}.tmp"
            staging.write_text(json.dumps(_dump(report)))
            os.replace(staging, self.folder / f"{key}.json")  # atomic: another may write it

    def grade(
        self, task: PreparedTask, patch: str, grade: Callable[[], GradeReport]
    ) -> GradeReport:
        """The remembered report of this change, else `grade()`'s (kept unless the
        harness's own trouble ended it)."""
        key = self.key(task, patch)
        found = self._kept(key)
        if found is not None:
            self.hits += 1
            return found
        report = grade()
        if report.failure is not Failure.INFRA_ERROR:  # the harness's trouble may pass
            self._keep(key, report)
        return report
