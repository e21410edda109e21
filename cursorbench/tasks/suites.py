"""Bundled suites by name, building many tasks at once, and writing derived test lists.

- `smoke`: offline tasks over small libraries written for this project
  (`cursorbench/suite/tasks`), the default of `cursorbench run`.
- `v1`: CursorBench v1, tasks over pinned releases of real packages
  (`cursorbench/suite/v1/tasks`); their sources are fetched from the package index on
  first use and cached. Scores compare only within one suite version.
- `v2`: CursorBench v2, tasks the task factory proposed, reviewed and validated
  (`cursorbench/suite/v2/tasks`, under construction: see its README).

`build_many` builds tasks in parallel threads (the work is mostly subprocesses:
pip, grep) with progress on stderr if anything is not cached yet: a bar on a terminal, one
line per build started and finished elsewhere (CI logs, `2> file`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cursorbench.tasks.build_log import BuildLog
from cursorbench.tasks.loader import TaskFileError, bundled_suites
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import BuiltTask, build, task_digest
from harness.home import READY_MARKER, build_cache

SUITES = bundled_suites()


def suite_path(name: str) -> Path:
    if name not in SUITES:
        raise TaskFileError(f"unknown suite {name!r} (choose from {', '.join(SUITES)})")
    return SUITES[name]


def suite_options(suite: str | None, tasks: list[str] | None) -> list[str]:
    """`--suite` and `--tasks` as one list of `--tasks` values (a suite is its folder)."""
    values = list(tasks or [])
    return [str(suite_path(suite)), *values] if suite else values


def _is_built(task: Task) -> bool:
    try:
        digest = task_digest(task)
    except Exception:
        return False
    return (build_cache() / "workspaces" / f"{task.id}-{digest}" / READY_MARKER).exists()


def build_many(
    tasks: list[Task],
    jobs: int | None = None,
    build_one: Callable[[Task], BuiltTask] = build,
) -> list[BuiltTask]:
    """Builds every task (in parallel), in the order given; the first failure is raised.

    What is not cached yet shows progress on stderr: a bar on a terminal (for two or more),
    elsewhere one line per build started and finished (`BuildLog`)."""
    pending = {task.id for task in tasks if not _is_built(task)}
    workers = jobs or min(8, (os.cpu_count() or 2) * 2)
    console = Console(stderr=True)
    if pending and not console.is_terminal:
        log = BuildLog(console, total=len(pending))

        def logged(task: Task) -> BuiltTask:
            if task.id not in pending:
                return build_one(task)
            return log.build(task.id, lambda: build_one(task))

        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(logged, tasks))
    if len(pending) <= 1 or not console.is_terminal:
        return [build_one(task) for task in tasks]
    columns = (TextColumn("building tasks"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with (
        Progress(*columns, console=console, transient=True) as bar,
        ThreadPoolExecutor(max_workers=workers) as pool,
    ):
        progress = bar.add_task("build", total=len(tasks))

        def one(task: Task) -> BuiltTask:
            try:
                return build_one(task)
            finally:
                bar.advance(progress)

        return list(pool.map(one, tasks))


class _Literal(str):
    pass


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


yaml.SafeDumper.add_representer(_Literal, _literal)


def write_test_lists(path: Path, fail_to_pass: list[str], pass_to_pass: list[str]) -> None:
    """Writes the derived FAIL_TO_PASS/PASS_TO_PASS lists into a task file (YAML)."""
    write_verification(path, {"fail_to_pass": fail_to_pass, "pass_to_pass": pass_to_pass})


def write_verification(path: Path, fields: dict[str, list[str]]) -> None:
    """Sets derived fields of a task file's `verification` (YAML); an empty list is left
    out where the file does not have the field."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    check = data.setdefault("verification", {})
    for name, value in fields.items():
        if value or name in check:
            check[name] = value
    if isinstance(data.get("prompt"), str) and "\n" in data["prompt"]:
        data["prompt"] = _Literal(data["prompt"])
    text = yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
