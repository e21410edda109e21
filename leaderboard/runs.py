"""One run as the store has it (facts, figures, breakdowns, attempts) and one attempt's view
(its result, diff and trajectory).

`run_detail` reads every attempt line (the CLI's `runs show`); the dashboard asks for the run
without them and pages its attempts with `attempt_page` (LIMIT/OFFSET in SQL, filtered in
SQL, with a count), so a page never loads a run's every attempt."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, String, and_, cast, func, select

from leaderboard import summaries
from leaderboard.schema import (
    AttemptRow,
    CheckpointRow,
    RunBreakdownRow,
    RunRow,
    TaskRow,
    TrainingRunRow,
    TrajectoryRow,
)
from leaderboard.standings import QueryError, run_figures, run_row, summarised

A = AttemptRow.__table__


class AttemptLine(BaseModel):
    task_id: str
    epoch: int
    category: str | None
    status: str
    failure: str | None
    resolved: bool
    flags: list[str]
    cost_usd: float
    tokens: int
    latency_s: float
    turns: int
    tool_calls: int
    error: str | None


class RunDetail(BaseModel):
    run_id: str
    model: str
    suite_version: str
    status: str
    started: datetime
    finished: datetime | None
    config_hash: str
    config: dict[str, Any]
    out_dir: str | None
    harness_version: str | None
    git_sha: str | None
    figures: dict[str, Any]
    breakdowns: list[dict[str, Any]]
    attempts: list[AttemptLine]
    repeats: list[str]
    training_run: str | None = None
    step: int | None = None
    gate_decision: str | None = None
    suite_id: int | None = None


def run_detail(conn: Connection, run_id: str, with_attempts: bool = True) -> RunDetail:
    """The run; `with_attempts=False` leaves `attempts` empty (page them: `attempt_page`)."""
    run = run_row(conn, run_id, full=True)
    figures = run_figures(conn, [run_id]).get(run_id, {})
    if run_id in summarised(conn, [run_id]):
        found = conn.execute(select(RunBreakdownRow).where(RunBreakdownRow.run_id == run_id))
        breakdowns = [{k: v for k, v in row._mapping.items() if k != "run_id"} for row in found]
    else:
        breakdowns = [
            {k: v for k, v in row.items() if k != "run_id"}
            for row in summaries.breakdowns(conn, run_id)
        ]
    checkpoint = None
    if run.checkpoint_id:
        checkpoint = conn.execute(
            select(TrainingRunRow.name, CheckpointRow.step, CheckpointRow.gate_decision)
            .join(TrainingRunRow, TrainingRunRow.id == CheckpointRow.training_run_id)
            .where(CheckpointRow.id == run.checkpoint_id)
        ).one_or_none()
    repeats = conn.scalars(
        select(RunRow.id).where(RunRow.config_hash == run.config_hash, RunRow.id != run_id)
    ).all()
    return RunDetail(
        run_id=run.id,
        model=run.model,
        suite_version=run.suite_version,
        status=run.status,
        started=run.created_at,
        finished=run.finished_at,
        config_hash=run.config_hash,
        config=run.config,
        out_dir=run.out_dir,
        harness_version=run.harness_version,
        git_sha=run.git_sha,
        figures={k: v for k, v in figures.items() if k not in ("run_id", "computed_at")},
        breakdowns=breakdowns,
        attempts=attempt_lines(conn, run_id, run.suite_id) if with_attempts else [],
        repeats=list(repeats),
        training_run=checkpoint.name if checkpoint else None,
        step=checkpoint.step if checkpoint else None,
        gate_decision=checkpoint.gate_decision if checkpoint else None,
        suite_id=run.suite_id,
    )


def breakdowns_of(conn: Connection, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each run's breakdown rows (kind, key, n, mean, low, high): the stored ones of finished
    runs, computed now for the others."""
    found: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in run_ids}
    query = select(RunBreakdownRow).where(RunBreakdownRow.run_id.in_(run_ids))
    for row in conn.execute(query.order_by(RunBreakdownRow.kind, RunBreakdownRow.key)):
        found[row.run_id].append({k: v for k, v in row._mapping.items() if k != "run_id"})
    for run_id in set(run_ids) - set(summarised(conn, run_ids)):
        found[run_id] = [
            {k: v for k, v in row.items() if k != "run_id"}
            for row in summaries.breakdowns(conn, run_id)
        ]
    return found


def attempt_lines(conn: Connection, run_id: str, suite_id: int | None) -> list[AttemptLine]:
    return [_line(row) for row in conn.execute(_lines_query(run_id, suite_id))]


class AttemptFilters(BaseModel):
    status: str | None = None
    failure: str | None = None
    flagged: bool = False


def attempt_page(
    conn: Connection,
    run_id: str,
    suite_id: int | None,
    filters: AttemptFilters,
    offset: int,
    limit: int,
) -> tuple[list[AttemptLine], int]:
    """One page of the run's attempts matching the filters (by task, then epoch), and how
    many match in all."""
    conditions = [A.c.run_id == run_id]
    if filters.status:
        conditions.append(A.c.status == filters.status)
    if filters.failure:
        conditions.append(A.c.failure == filters.failure)
    if filters.flagged:
        conditions += [A.c.flags.is_not(None), cast(A.c.flags, String) != "[]"]
    query = _lines_query(run_id, suite_id).where(*conditions[1:]).limit(limit).offset(offset)
    total = conn.execute(select(func.count()).select_from(A).where(*conditions)).scalar()
    return [_line(row) for row in conn.execute(query)], int(total or 0)


def failures_of(conn: Connection, run_id: str) -> list[str]:
    """The failure kinds among the run's attempts."""
    query = select(A.c.failure).where(A.c.run_id == run_id, A.c.failure.is_not(None))
    return sorted(conn.scalars(query.group_by(A.c.failure)))


def _line(row: Any) -> AttemptLine:
    return AttemptLine(**(dict(row._mapping) | {"flags": row.flags or []}))


def _lines_query(run_id: str, suite_id: int | None) -> Any:
    tasks = TaskRow.__table__
    return (
        select(
            A.c.task_id,
            A.c.epoch,
            tasks.c.category,
            A.c.status,
            A.c.failure,
            A.c.resolved,
            A.c.flags,
            A.c.cost_usd,
            (A.c.tokens_in + A.c.tokens_out).label("tokens"),
            A.c.model_latency_s.label("latency_s"),
            A.c.turns,
            A.c.tool_calls,
            A.c.error,
        )
        .select_from(
            A.outerjoin(tasks, and_(tasks.c.task_id == A.c.task_id, tasks.c.suite_id == suite_id))
        )
        .where(A.c.run_id == run_id)
        .order_by(A.c.task_id, A.c.epoch)
    )


class AttemptView(BaseModel):
    run_id: str
    task_id: str
    epoch: int
    result: dict[str, Any]
    diff: str | None
    trajectory: list[dict[str, Any]]
    trajectory_source: str | None  # "file: PATH", "stored blob", or None if unavailable


def attempt_view(conn: Connection, run_id: str, task_id: str, epoch: int) -> AttemptView:
    run = run_row(conn, run_id)
    row = conn.execute(
        select(A.c.result, A.c.trajectory).where(
            A.c.run_id == run_id, A.c.task_id == task_id, A.c.epoch == epoch
        )
    ).one_or_none()
    if row is None:
        raise QueryError(f"run {run_id!r} has no attempt {task_id}#{epoch}")
    records, source = _trajectory(conn, run, row.trajectory, (run_id, task_id, epoch))
    diff = next((r.get("patch") for r in records if r.get("type") == "diff"), None)
    return AttemptView(
        run_id=run_id,
        task_id=task_id,
        epoch=epoch,
        result=row.result,
        diff=diff,
        trajectory=records,
        trajectory_source=source,
    )


def _trajectory(
    conn: Connection, run: Any, path: str | None, key: tuple[str, str, int]
) -> tuple[list[dict[str, Any]], str | None]:
    blob = conn.execute(
        select(TrajectoryRow.blob).where(
            TrajectoryRow.run_id == key[0],
            TrajectoryRow.task_id == key[1],
            TrajectoryRow.epoch == key[2],
        )
    ).scalar_one_or_none()
    if blob is not None:
        return _records(blob.decode("utf-8", "replace")), "stored blob"
    if path and run.out_dir:
        file = Path(run.out_dir) / path
        try:
            return _records(file.read_text("utf-8", "replace")), f"file: {file}"
        except OSError:
            pass
    return [], None


def _records(text: str) -> list[dict[str, Any]]:
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records
