"""Per-run summaries, computed from the attempt facts when a run finishes.

`refresh(conn, run_id)` replaces the run's `run_summaries` row and its `run_breakdowns`
(resolved rate per task category, mean per eval), so the leaderboard reads one row per run
instead of every attempt. Rates carry a Wilson interval over attempts; continuous evals
(`tests_passed`: the share of a task's tests that passed, and any `attempt_scores`) a normal
interval. `live(conn, run_ids)` computes the same figures for runs not finished yet.

Not covered here: pass@k over epochs beyond pass@1 (`leaderboard.stats` has it; the run's
`summary` JSON keeps the runner's own pass@k).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Float, String, and_, case, cast, delete, func, select

from leaderboard.rows import insert_ignoring, table_of
from leaderboard.schema import (
    AttemptRow,
    AttemptScoreRow,
    RunBreakdownRow,
    RunRow,
    RunSummaryRow,
    TaskRow,
)
from leaderboard.stats import normal_interval, wilson_interval

A = AttemptRow.__table__
TAMPERING = "grader_tampering"


def _resolved_int() -> Any:
    return case((A.c.resolved, 1), else_=0)


def _flagged() -> Any:
    return case((and_(A.c.flags.is_not(None), cast(A.c.flags, String) != "[]"), 1), else_=0)


def summary_columns() -> list[Any]:
    return [
        A.c.run_id,
        func.count().label("attempts"),
        func.count(func.distinct(A.c.task_id)).label("tasks"),
        func.sum(_resolved_int()).label("resolved"),
        func.sum(case((A.c.status == "error", 1), else_=0)).label("errors"),
        func.sum(A.c.cost_usd).label("cost_usd"),
        func.sum(A.c.tokens_in).label("tokens_in"),
        func.sum(A.c.tokens_out).label("tokens_out"),
        func.avg(A.c.model_latency_s).label("latency_s"),
        func.avg(A.c.wall_time_s).label("wall_time_s"),
        func.sum(case((A.c.failure == TAMPERING, 1), else_=0)).label("tampering"),
        func.sum(_flagged()).label("flagged"),
    ]


def _pass_at_1(conn: Connection, run_ids: list[str]) -> dict[str, float]:
    per_task = (
        select(
            A.c.run_id,
            (cast(func.sum(_resolved_int()), Float) / func.count()).label("rate"),
        )
        .where(A.c.run_id.in_(run_ids))
        .group_by(A.c.run_id, A.c.task_id)
        .subquery()
    )
    query = select(per_task.c.run_id, func.avg(per_task.c.rate)).group_by(per_task.c.run_id)
    return {run_id: float(rate or 0.0) for run_id, rate in conn.execute(query)}


def live(conn: Connection, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The summary figures of the given runs, computed from their attempts now."""
    if not run_ids:
        return {}
    query = select(*summary_columns()).where(A.c.run_id.in_(run_ids)).group_by(A.c.run_id)
    pass1 = _pass_at_1(conn, run_ids)
    found = {}
    for row in conn.execute(query).mappings():
        figures = dict(row)
        attempts, resolved = int(figures["attempts"]), int(figures["resolved"] or 0)
        low, high = wilson_interval(resolved, attempts)
        figures |= {
            "resolved": resolved,
            "resolved_rate": resolved / attempts if attempts else 0.0,
            "rate_low": low,
            "rate_high": high,
            "pass_at_1": pass1.get(row["run_id"], 0.0),
        }
        found[row["run_id"]] = figures
    return found


def refresh(conn: Connection, run_id: str) -> None:
    """Recompute and store the run's summary row and breakdowns."""
    conn.execute(delete(RunSummaryRow).where(RunSummaryRow.run_id == run_id))
    conn.execute(delete(RunBreakdownRow).where(RunBreakdownRow.run_id == run_id))
    figures = live(conn, [run_id]).get(run_id)
    if figures is None:
        return
    row = {name: figures[name] or 0 for name in figures}
    row |= {"run_id": run_id, "computed_at": datetime.now(UTC)}
    conn.execute(table_of(RunSummaryRow).insert().values(**row))
    insert_ignoring(conn, table_of(RunBreakdownRow), breakdowns(conn, run_id))


def breakdowns(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    tasks = TaskRow.__table__
    suite = select(RunRow.suite_id).where(RunRow.id == run_id).scalar_subquery()
    by_category = (
        select(
            func.coalesce(tasks.c.category, "uncategorised").label("key"),
            func.count(),
            func.sum(_resolved_int()),
        )
        .select_from(
            A.outerjoin(tasks, and_(tasks.c.task_id == A.c.task_id, tasks.c.suite_id == suite))
        )
        .where(A.c.run_id == run_id)
        .group_by("key")
    )
    for key, n, resolved in conn.execute(by_category):
        low, high = wilson_interval(int(resolved or 0), int(n))
        rows.append(_breakdown(run_id, "category", key, int(n), int(resolved or 0) / n, low, high))
    resolved_n, resolved_k = conn.execute(
        select(func.count(), func.sum(_resolved_int())).where(A.c.run_id == run_id)
    ).one()
    if resolved_n:
        low, high = wilson_interval(int(resolved_k or 0), int(resolved_n))
        rate = int(resolved_k or 0) / resolved_n
        rows.append(_breakdown(run_id, "eval", "resolved", int(resolved_n), rate, low, high))
    shares = conn.scalars(
        select(cast(A.c.tests_passed, Float) / A.c.tests_total).where(
            A.c.run_id == run_id, A.c.tests_total > 0
        )
    ).all()
    if shares:
        rows.append(_interval_row(run_id, "tests_passed", [float(s) for s in shares]))
    S = AttemptScoreRow.__table__
    scores: dict[str, list[float]] = {}
    for name, value in conn.execute(select(S.c.name, S.c.value).where(S.c.run_id == run_id)):
        scores.setdefault(name, []).append(float(value))
    rows.extend(_interval_row(run_id, name, values) for name, values in sorted(scores.items()))
    return rows


def _interval_row(run_id: str, name: str, values: list[float]) -> dict[str, Any]:
    low, high = normal_interval(values)
    return _breakdown(run_id, "eval", name, len(values), sum(values) / len(values), low, high)


def _breakdown(
    run_id: str, kind: str, key: str, n: int, mean: float, low: float, high: float
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "kind": kind,
        "key": key,
        "n": n,
        "mean": mean,
        "low": low,
        "high": high,
    }
