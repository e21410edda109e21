"""A training run's checkpoints: their scores over steps, and their state as the gate left it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, select

from leaderboard.schema import CheckpointRow, RunRow, TrainingRunRow
from leaderboard.standings import Filters, QueryError, filter_choices, leaderboard


class CheckpointPoint(BaseModel):
    step: int
    tokens_seen: int | None
    run_id: str
    score: float
    low: float
    high: float
    gate_decision: str | None
    promoted: bool = False


def checkpoint_curve(conn: Connection, training_run: str) -> list[CheckpointPoint]:
    rows = leaderboard(conn, Filters(training_run=training_run))
    if not rows and training_run not in filter_choices(conn)["training_run"]:
        raise QueryError(f"no training run {training_run!r} in the store")
    tokens = dict(
        conn.execute(
            select(CheckpointRow.step, CheckpointRow.tokens_seen)
            .join(TrainingRunRow, TrainingRunRow.id == CheckpointRow.training_run_id)
            .where(TrainingRunRow.name == training_run)
        ).all()
    )
    points = [
        CheckpointPoint(
            step=row.step or 0,
            tokens_seen=tokens.get(row.step) if row.step is not None else None,
            run_id=row.run_id,
            score=row.score,
            low=row.low,
            high=row.high,
            gate_decision=row.gate_decision,
            promoted=bool(row.promoted),
        )
        for row in rows
    ]
    return sorted(points, key=lambda point: (point.step, point.run_id))


class CheckpointState(BaseModel):
    """A training run's checkpoint as its gate left it."""

    checkpoint_id: str
    step: int
    tokens_seen: int | None
    path: str | None
    run_id: str | None  # the latest run that evaluated it
    gate_decision: str | None
    gate_baseline: str | None  # the run it was compared with
    gate_detail: dict[str, Any] | None
    promoted: bool


def training_checkpoints(conn: Connection, training_run: str) -> list[CheckpointState]:
    """Every checkpoint of a training run, by step (none for an unknown training run)."""
    found = conn.execute(
        select(
            CheckpointRow.id,
            CheckpointRow.step,
            CheckpointRow.tokens_seen,
            CheckpointRow.path,
            CheckpointRow.gate_decision,
            CheckpointRow.gate_baseline,
            CheckpointRow.gate_detail,
            CheckpointRow.promoted,
        )
        .join(TrainingRunRow, TrainingRunRow.id == CheckpointRow.training_run_id)
        .where(TrainingRunRow.name == training_run)
        .order_by(CheckpointRow.step)
    ).all()
    runs: dict[str, str] = {}
    if found:
        evaluations = conn.execute(
            select(RunRow.checkpoint_id, RunRow.id)
            .where(RunRow.checkpoint_id.in_([row.id for row in found]))
            .order_by(RunRow.created_at, RunRow.id)
        )
        runs = {  # latest wins; the query's `in_` leaves no run without a checkpoint
            checkpoint: run_id for checkpoint, run_id in evaluations if checkpoint is not None
        }
    return [
        CheckpointState(
            checkpoint_id=row.id,
            step=row.step,
            tokens_seen=row.tokens_seen,
            path=row.path,
            run_id=runs.get(row.id),
            gate_decision=row.gate_decision,
            gate_baseline=row.gate_baseline,
            gate_detail=row.gate_detail,
            promoted=bool(row.promoted),
        )
        for row in found
    ]


def best_checkpoint(states: list[CheckpointState]) -> CheckpointState | None:
    """The latest promoted checkpoint: each promotion passed the gate against the one before."""
    promoted = [state for state in states if state.promoted]
    return max(promoted, key=lambda state: state.step) if promoted else None
