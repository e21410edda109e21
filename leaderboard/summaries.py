"""Per-run summaries, computed from the attempt facts when a run finishes.

`refresh(conn, run_id)` replaces the run's `run_summaries` row and its `run_breakdowns`
(resolved rate per task category, mean per eval), so the leaderboard reads one row per run
instead of every attempt. `live(conn, run_ids)` computes the same figures for runs not
finished yet; `extras(conn, run_ids)` what the summary row has no column for (coverage of the
planned attempts, whether the cost is known, cost and tokens per task).

Every figure is over all of a run's attempts; every rate and mean is over tasks (each task's
epochs averaged first, so unequal epochs do not weigh tasks unequally) with an interval
clustered by task (`stats.clustered_totals`), inside [0, 1]. `tests_passed` is the
share of an attempt's tests that passed, an attempt that never reached its tests (an empty
diff, a timeout, an error) counting as 0, so skipping the hard tasks cannot raise it; only a
resolved attempt with no tests at all (a kind graded otherwise) is left out of it. Evals
(`attempt_scores`) cluster by task, i.e. by scenario.

pass@k is kept for k = the run's epochs (`pass_figures`; the run's `summary` JSON keeps the
runner's own pass@k for every k).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Float, String, and_, case, cast, delete, func, select

from harness.model.pricing import price_unknown
from leaderboard.rows import insert_ignoring, table_of
from leaderboard.schema import (
    AttemptRow,
    AttemptScoreRow,
    RunBreakdownRow,
    RunRow,
    RunSummaryRow,
    TaskRow,
)
from leaderboard.stats import clustered_totals, pass_at_k

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


def _per_task(conn: Connection, run_ids: list[str]) -> dict[str, tuple[list[float], list[int]]]:
    """Each run's resolved attempts and attempts, per task."""
    query = (
        select(A.c.run_id, func.count(), func.sum(_resolved_int()))
        .where(A.c.run_id.in_(run_ids))
        .group_by(A.c.run_id, A.c.task_id)
    )
    sums: dict[str, tuple[list[float], list[int]]] = {}
    for run_id, n, resolved in conn.execute(query):
        found = sums.setdefault(run_id, ([], []))
        found[0].append(float(resolved or 0))
        found[1].append(int(n))
    return sums


def pass_figures(resolved: list[float], attempts: list[int]) -> dict[str, Any]:
    """From each task's resolved and attempts: `pass_k` (the fewest attempts of a task),
    `pass_at_k` (the mean over tasks of `stats.pass_at_k`), and whether the rate's interval
    is `degenerate` (`stats.clustered_totals`)."""
    if not attempts:
        return {"pass_k": None, "pass_at_k": None, "degenerate": None}
    k = min(attempts)
    each = [pass_at_k(n, int(c), k) for c, n in zip(resolved, attempts, strict=True)]
    interval = clustered_totals(resolved, attempts)
    return {"pass_k": k, "pass_at_k": sum(each) / len(each), "degenerate": interval.degenerate}


def live(conn: Connection, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The summary figures of the given runs, computed from their attempts now."""
    if not run_ids:
        return {}
    query = select(*summary_columns()).where(A.c.run_id.in_(run_ids)).group_by(A.c.run_id)
    rates = _per_task(conn, run_ids)
    more = extras(conn, run_ids)
    found = {}
    for row in conn.execute(query).mappings():
        figures = dict(row)
        resolved, attempts = rates[row["run_id"]]
        rate = clustered_totals(resolved, attempts)
        figures |= {
            "resolved": int(figures["resolved"] or 0),
            "resolved_rate": rate.estimate,
            "rate_low": rate.low,
            "rate_high": rate.high,
            # the mean over tasks of each task's share of epochs resolved
            "pass_at_1": _pass_at_1(conn, row["run_id"]),
        } | pass_figures(resolved, attempts)
        found[row["run_id"]] = figures | more.get(row["run_id"], {})
    return found


def _pass_at_1(conn: Connection, run_id: str) -> float:
    per_task = (
        select((cast(func.sum(_resolved_int()), Float) / func.count()).label("rate"))
        .where(A.c.run_id == run_id)
        .group_by(A.c.task_id)
        .subquery()
    )
    return float(conn.execute(select(func.avg(per_task.c.rate))).scalar() or 0.0)


def extras(conn: Connection, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per run: `planned` attempts (tasks x epochs of its config; None if it does not say),
    `coverage` (recorded / planned), `cost_known` (False when the model had no price: its
    cost is unknown, not $0), `cost_per_task` (None when unknown) and `tokens_per_task`.

    A finished run's totals come from its summary row, so this reads one row per run; only
    runs not summarised yet are added up from their attempts."""
    if not run_ids:
        return {}
    runs = conn.execute(
        select(RunRow.id, RunRow.planned, RunRow.warnings).where(RunRow.id.in_(run_ids))
    ).all()
    S = RunSummaryRow
    totals: dict[str, Any] = {
        row.run_id: row
        for row in conn.execute(
            select(
                S.run_id,
                S.attempts,
                S.tasks,
                S.cost_usd,
                (S.tokens_in + S.tokens_out).label("tokens"),
            ).where(S.run_id.in_(run_ids))
        )
    }
    missing = [run_id for run_id in run_ids if run_id not in totals]
    if missing:
        totals |= {
            row.run_id: row
            for row in conn.execute(
                select(
                    A.c.run_id,
                    func.count().label("attempts"),
                    func.count(func.distinct(A.c.task_id)).label("tasks"),
                    func.sum(A.c.cost_usd).label("cost_usd"),
                    func.sum(A.c.tokens_in + A.c.tokens_out).label("tokens"),
                )
                .where(A.c.run_id.in_(missing))
                .group_by(A.c.run_id)
            )
        }
    found = {}
    for run in runs:
        total = totals.get(run.id)
        attempts, tasks = (int(total.attempts), int(total.tasks)) if total else (0, 0)
        planned = run.planned
        known = not price_unknown(run.warnings or [])
        cost = float(total.cost_usd or 0.0) if total else 0.0
        found[run.id] = {
            "planned": planned,
            "coverage": attempts / planned if planned else None,
            "cost_known": known,
            "cost_per_task": cost / tasks if known and tasks else None,
            "tokens_per_task": int(total.tokens or 0) / tasks if total and tasks else None,
        }
    return found


SUMMARY_COLUMNS = frozenset(column.name for column in RunSummaryRow.__table__.c)
NULLABLE = frozenset(("pass_at_k", "pass_k", "degenerate"))


def refresh(conn: Connection, run_id: str) -> None:
    """Recompute and store the run's summary row and breakdowns."""
    conn.execute(delete(RunSummaryRow).where(RunSummaryRow.run_id == run_id))
    conn.execute(delete(RunBreakdownRow).where(RunBreakdownRow.run_id == run_id))
    figures = live(conn, [run_id]).get(run_id)
    if figures is None:
        return
    row = {
        name: figures[name] if name in NULLABLE else figures[name] or 0
        for name in figures
        if name in SUMMARY_COLUMNS
    }
    row |= {"run_id": run_id, "computed_at": datetime.now(UTC)}
    conn.execute(table_of(RunSummaryRow).insert().values(**row))
    insert_ignoring(conn, table_of(RunBreakdownRow), breakdowns(conn, run_id))


def breakdowns(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    """The run's resolved rate per task category, and its mean per eval (`resolved`,
    `tests_passed`, every `attempt_scores` name), each clustered by task."""
    tasks = TaskRow.__table__
    suite = select(RunRow.suite_id).where(RunRow.id == run_id).scalar_subquery()
    by_task = (
        select(
            func.coalesce(tasks.c.category, "uncategorised").label("key"),
            A.c.task_id,
            func.count(),
            func.sum(_resolved_int()),
        )
        .select_from(
            A.outerjoin(tasks, and_(tasks.c.task_id == A.c.task_id, tasks.c.suite_id == suite))
        )
        .where(A.c.run_id == run_id)
        .group_by("key", A.c.task_id)
    )
    categories: dict[str, list[tuple[float, int]]] = {}
    for key, _task, n, resolved in conn.execute(by_task):
        categories.setdefault(key, []).append((float(resolved or 0), int(n)))
    rows = [_row(run_id, "category", key, cells) for key, cells in sorted(categories.items())]
    every = [cell for cells in categories.values() for cell in cells]
    if every:
        rows.append(_row(run_id, "eval", "resolved", every))
    shares = _tests_passed(conn, run_id)
    if shares:
        rows.append(_row(run_id, "eval", "tests_passed", shares))
    S = AttemptScoreRow.__table__
    scores: dict[str, dict[str, tuple[float, int]]] = {}
    query = (
        select(S.c.name, S.c.task_id, func.sum(S.c.value), func.count())
        .where(S.c.run_id == run_id)
        .group_by(S.c.name, S.c.task_id)
    )
    for name, task_id, total, n in conn.execute(query):
        scores.setdefault(name, {})[task_id] = (float(total or 0.0), int(n))
    rows.extend(
        _row(run_id, "eval", name, list(cells.values())) for name, cells in sorted(scores.items())
    )
    return rows


def _tests_passed(conn: Connection, run_id: str) -> list[tuple[float, int]]:
    """Per task: (sum of its attempts' shares of tests passed, attempts counted). An attempt
    that never ran its tests counts as 0; a resolved one with no tests is not counted."""
    query = select(A.c.task_id, A.c.tests_passed, A.c.tests_total, A.c.resolved).where(
        A.c.run_id == run_id
    )
    cells: dict[str, list[float]] = {}
    for task_id, passed, total, resolved in conn.execute(query):
        if total:
            cells.setdefault(task_id, []).append(float(passed or 0) / float(total))
        elif not resolved:
            cells.setdefault(task_id, []).append(0.0)
    return [(sum(values), len(values)) for values in cells.values()]


def _row(run_id: str, kind: str, key: str, cells: list[tuple[float, int]]) -> dict[str, Any]:
    interval = clustered_totals([y for y, _ in cells], [m for _, m in cells])
    return _breakdown(run_id, kind, key, interval.n, interval.estimate, interval.low, interval.high)


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
