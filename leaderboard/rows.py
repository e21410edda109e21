"""Rows <-> harness data, and the small writes every writer shares.

`run_values`/`run_info` and `attempt_values` convert between `RunInfo`/`AttemptResult` and
table rows; `attempt_children` gives an attempt's metric rows. `insert_ignoring` is the
insert-only write: rows whose key already exists are skipped (ON CONFLICT DO NOTHING on
SQLite and PostgreSQL), so a retried write never duplicates. `model_id`, `suite_id` and
`checkpoint_id` find or create dimension rows, safe against concurrent writers.

Not covered here: transactions and error messages (`leaderboard.store`).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Table, bindparam, select

from harness.results import AttemptResult, RunInfo, TestOutcome
from leaderboard.schema import (
    AttemptMetricRow,
    AttemptScoreRow,
    CheckpointRow,
    ModelRow,
    RunRow,
    SuiteRow,
    TaskRow,
    TrainingRunRow,
    TrajectoryRow,
)

SUITE_NAME = "cursorbench"  # the bundled suite; runs name no other yet
METRIC_FIELDS = ("wait_s", "estimated_calls", "truncated_replies")  # Usage fields without columns


def table_of(row: Any) -> Table:
    """A mapped class's table (SQLAlchemy types `__table__` as any FROM clause)."""
    table = row.__table__
    assert isinstance(table, Table)
    return table


def insert_ignoring(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows; any whose primary or unique key already exists is skipped."""
    if not rows:
        return
    dialect = conn.dialect.name
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        conn.execute(sqlite_insert(table).on_conflict_do_nothing(), list(rows))
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        conn.execute(postgresql_insert(table).on_conflict_do_nothing(), list(rows))
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise NotImplementedError(f"insert-only writes are not implemented for {dialect}")


def fill_blobs(conn: Connection, trajectories: Sequence[dict[str, Any]]) -> None:
    """Store the bytes of trajectories already recorded by path alone (an import without
    `--with-trajectories`, then one with it); a row whose sha256 differs is left as it is."""
    if not trajectories:
        return
    table = TRAJECTORIES_TABLE
    statement = (
        table.update()
        .where(
            table.c.run_id == bindparam("b_run"),
            table.c.task_id == bindparam("b_task"),
            table.c.epoch == bindparam("b_epoch"),
            table.c.sha256 == bindparam("b_sha"),
            table.c.blob.is_(None),
        )
        .values(blob=bindparam("b_blob"))
    )
    conn.execute(
        statement,
        [
            {
                "b_run": row["run_id"],
                "b_task": row["task_id"],
                "b_epoch": row["epoch"],
                "b_sha": row["sha256"],
                "b_blob": row["blob"],
            }
            for row in trajectories
        ],
    )


def _get_or_create(conn: Connection, table: Table, key: dict[str, Any]) -> Any:
    where = [table.c[name] == value for name, value in key.items()]
    found = conn.execute(select(table.c.id).where(*where)).scalar_one_or_none()
    if found is not None:
        return found
    insert_ignoring(conn, table, [key])
    return conn.execute(select(table.c.id).where(*where)).scalar_one()


def model_id(conn: Connection, name: str) -> int:
    return _get_or_create(conn, table_of(ModelRow), {"name": name})


def suite_id(conn: Connection, version: str, name: str = SUITE_NAME) -> int:
    return _get_or_create(conn, table_of(SuiteRow), {"name": name, "version": version})


def describe_tasks(conn: Connection, suite: int, categories: dict[str, str | None]) -> None:
    """Add the suite's tasks; a known task without a category gets the one given. Only the
    tasks missing or lacking their category are written (a run's start names every task)."""
    table = table_of(TaskRow)
    found = conn.execute(select(table.c.task_id, table.c.category).where(table.c.suite_id == suite))
    known = {task: category for task, category in found}
    insert_ignoring(
        conn,
        table,
        [
            {"suite_id": suite, "task_id": task, "category": category}
            for task, category in categories.items()
            if task not in known
        ],
    )
    updates = [
        {"b_task": task, "b_category": category}
        for task, category in categories.items()
        if category is not None and known.get(task) is None  # new ones too: another writer
    ]  # may have inserted them without a category meanwhile
    if updates:
        conn.execute(
            table.update()
            .where(
                table.c.suite_id == suite,
                table.c.task_id == bindparam("b_task"),
                table.c.category.is_(None),
            )
            .values(category=bindparam("b_category")),
            updates,
        )


def checkpoint_id(conn: Connection, training_run: str, step: int, tokens_seen: int | None) -> str:
    runs = table_of(TrainingRunRow)
    now = datetime.now(UTC)
    insert_ignoring(
        conn, runs, [{"id": str(uuid.uuid4()), "name": training_run, "created_at": now}]
    )
    training_id = conn.execute(select(runs.c.id).where(runs.c.name == training_run)).scalar_one()
    table = table_of(CheckpointRow)
    row = {
        "id": str(uuid.uuid4()),
        "training_run_id": training_id,
        "step": step,
        "tokens_seen": tokens_seen,
        "created_at": now,
    }
    insert_ignoring(conn, table, [row])
    where = (table.c.training_run_id == training_id, table.c.step == step)
    found = conn.execute(select(table.c.id, table.c.tokens_seen).where(*where)).one()
    if tokens_seen is not None and found.tokens_seen is None:
        conn.execute(table.update().where(*where).values(tokens_seen=tokens_seen))
    return found.id


def run_values(run: RunInfo) -> dict[str, Any]:
    as_json = run.model_dump(mode="json", include={"config", "warnings"})
    epochs = run.config.get("epochs")
    return {
        "id": run.id,
        "created_at": run.created_at,
        "model": run.model,
        "base_url": run.base_url,
        "endpoint_label": run.endpoint_label,
        "suite_version": run.suite_version,
        "config_hash": run.config_hash,
        "config": as_json["config"],
        "sandbox": run.sandbox,
        "warnings": as_json["warnings"],
        "out_dir": absolute_folder(run.out_dir),
        "epochs": epochs if isinstance(epochs, int) else None,
        "status": "running",
        "planned": planned_attempts(run.config),
    }


def absolute_folder(folder: str | None) -> str | None:
    """A run folder as a path that does not depend on the working directory: a relative one
    (`--out runs/x`, the default) is taken from the writer's, so the run's trajectories and
    diffs are found wherever the database is read."""
    return os.path.abspath(os.path.expanduser(folder)) if folder else None


def planned_attempts(config: Any) -> int | None:
    """Tasks x epochs of a run's config; None when it does not say."""
    if not isinstance(config, dict):
        return None
    tasks, epochs = config.get("tasks"), config.get("epochs")
    if not isinstance(tasks, dict | list) or not isinstance(epochs, int):
        return None
    return len(tasks) * epochs


def run_info(row: RunRow) -> RunInfo:
    return RunInfo(
        id=row.id,
        created_at=row.created_at,
        model=row.model,
        base_url=row.base_url,
        endpoint_label=row.endpoint_label,
        suite_version=row.suite_version,
        config_hash=row.config_hash,
        config=row.config,
        sandbox=row.sandbox,
        warnings=row.warnings,
        out_dir=row.out_dir,
    )


def attempt_values(run_id: str, result: AttemptResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "run_id": run_id,
        "task_id": result.task_id,
        "epoch": result.epoch,
        "status": result.status.value,
        "failure": None if result.failure is None else result.failure.value,
        "error": result.error,
        "resolved": result.resolved,
        "tests": {node: outcome.value for node, outcome in result.tests.items()},
        "diff_lines_added": result.diff_lines_added,
        "diff_lines_removed": result.diff_lines_removed,
        "tokens_in": usage.tokens_in,
        "tokens_out": usage.tokens_out,
        "cost_usd": usage.cost_usd,
        "model_calls": usage.model_calls,
        "model_latency_s": usage.model_latency_s,
        "retries": usage.retries,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "wall_time_s": result.wall_time_s,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "trajectory": result.trajectory,
        "result": result.model_dump(mode="json"),
        "flags": list(result.flags),
        "tests_passed": sum(o is TestOutcome.PASSED for o in result.tests.values()),
        "tests_total": len(result.tests),
    }


def metric_rows(run_id: str, result: AttemptResult) -> list[dict[str, Any]]:
    """The attempt's usage figures that have no column, where not zero."""
    key = {"run_id": run_id, "task_id": result.task_id, "epoch": result.epoch}
    usage = result.usage
    return [
        key | {"key": name, "value": float(getattr(usage, name))}
        for name in METRIC_FIELDS
        if getattr(usage, name)
    ]


def score_rows(run_id: str, result: AttemptResult) -> list[dict[str, Any]]:
    """The attempt's eval scores by name (a judged score keeps its `:judged` name)."""
    key = {"run_id": run_id, "task_id": result.task_id, "epoch": result.epoch}
    return [key | {"name": name, "value": score.value} for name, score in result.scores.items()]


def trajectory_row(
    run_id: str, result: AttemptResult, run_folder: Path | None, keep_blob: bool = False
) -> dict[str, Any] | None:
    """Path, sha256 and size (and with `keep_blob` the bytes) of the attempt's trajectory file,
    if it can be read."""
    if result.trajectory is None or run_folder is None:
        return None
    try:
        data = (run_folder / result.trajectory).read_bytes()
    except OSError:
        return None
    return {
        "run_id": run_id,
        "task_id": result.task_id,
        "epoch": result.epoch,
        "path": result.trajectory,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "blob": data if keep_blob else None,
    }


METRICS_TABLE = table_of(AttemptMetricRow)
SCORES_TABLE = table_of(AttemptScoreRow)
TRAJECTORIES_TABLE = table_of(TrajectoryRow)
