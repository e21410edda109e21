"""Two runs compared on their shared (task, epoch) attempts.

Exact McNemar on resolved; paired bootstrap over tasks (each task's mean over its epochs) for
the resolved rate, the share of tests passed, cost and latency.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, and_, select

from leaderboard import stats
from leaderboard.schema import AttemptRow
from leaderboard.standings import run_row

A = AttemptRow.__table__


class Flip(BaseModel):
    task_id: str
    first: float  # the task's resolved rate over its shared epochs
    second: float


class Comparison(BaseModel):
    first: str
    second: str
    shared_attempts: int
    shared_tasks: int
    first_only: int  # shared attempts resolved by the first run only (McNemar's b)
    second_only: int  # ... by the second only (c)
    mcnemar_p: float
    resolved: stats.PairedDifference
    tests_passed: stats.PairedDifference
    cost_usd: stats.PairedDifference
    latency_s: stats.PairedDifference
    gained: list[Flip]  # tasks the second run resolves more often
    lost: list[Flip]


def compare(conn: Connection, first: str, second: str, seed: int = 0) -> Comparison:
    """Second minus first on their shared attempts.

    One query fetches the shared attempts' few columns, paired by a join; per-task means and
    the four paired bootstraps (which share their resamples) are computed with numpy."""
    import numpy as np  # here, not at the top: the store's writers need no numpy

    for run_id in (first, second):
        run_row(conn, run_id)
    pairs = sorted(conn.execute(_shared_attempts(first, second)).all(), key=lambda r: r[:2])
    tasks = [row[0] for row in pairs]
    starts = [i for i, task in enumerate(tasks) if i == 0 or task != tasks[i - 1]]
    per_task = [tasks[i] for i in starts]
    columns = np.array([row[2:] for row in pairs], dtype=float).reshape(len(pairs), 10)
    columns = np.nan_to_num(columns)  # a NULL test count reads as 0, as before
    sizes = np.diff(np.append(starts, len(pairs)))

    def task_means(values: Any) -> Any:
        return np.add.reduceat(values, starts) / sizes if starts else np.zeros(0)

    def tests_share(passed: Any, total: Any) -> Any:
        return np.divide(passed, total, out=np.zeros_like(passed), where=total > 0)

    first_resolved, second_resolved = columns[:, 0] > 0, columns[:, 1] > 0
    b = int(np.sum(first_resolved & ~second_resolved))
    c = int(np.sum(second_resolved & ~first_resolved))
    measures = {
        "resolved": (columns[:, 0], columns[:, 1]),
        "tests_passed": (
            tests_share(columns[:, 2], columns[:, 4]),
            tests_share(columns[:, 3], columns[:, 5]),
        ),
        "cost_usd": (columns[:, 6], columns[:, 7]),
        "latency_s": (columns[:, 8], columns[:, 9]),
    }
    means = {name: (task_means(one), task_means(two)) for name, (one, two) in measures.items()}
    paired = stats.paired_bootstraps(means, seed=seed)
    one_rate, two_rate = means["resolved"]
    flips = [
        Flip(task_id=task, first=float(one), second=float(two))
        for task, one, two in zip(per_task, one_rate, two_rate, strict=True)
        if one != two
    ]
    return Comparison(
        first=first,
        second=second,
        shared_attempts=len(pairs),
        shared_tasks=len(per_task),
        first_only=b,
        second_only=c,
        mcnemar_p=stats.mcnemar_exact(b, c),
        resolved=paired["resolved"],
        tests_passed=paired["tests_passed"],
        cost_usd=paired["cost_usd"],
        latency_s=paired["latency_s"],
        gained=[flip for flip in flips if flip.second > flip.first],
        lost=[flip for flip in flips if flip.second < flip.first],
    )


def _shared_attempts(first: str, second: str) -> Any:
    """(task, epoch, then first's and second's resolved, tests passed, tests total, cost,
    latency, interleaved) for each attempt key both runs have."""
    one, two = A.alias("one"), A.alias("two")
    fields = ("resolved", "tests_passed", "tests_total", "cost_usd", "model_latency_s")
    return (
        select(
            one.c.task_id,
            one.c.epoch,
            *[column for name in fields for column in (one.c[name], two.c[name])],
        )
        .join(
            two,
            and_(
                two.c.run_id == second,
                two.c.task_id == one.c.task_id,
                two.c.epoch == one.c.epoch,
            ),
        )
        .where(one.c.run_id == first)
    )
