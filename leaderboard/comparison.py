"""Two runs of the same suite version compared on their shared (task, epoch) attempts.

The unit is the task: each task's epochs are averaged first, then the exact paired sign-flip
test over tasks (exact McNemar over tasks with one epoch); MOVER intervals of the difference
for the resolved rate and the share of tests passed (`stats.paired_rate_difference`), and
paired bootstrap intervals that resample tasks for cost and latency. Each run's
own resolved rate on the shared attempts comes with its task-clustered interval.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, and_, select

from leaderboard import stats
from leaderboard.schema import AttemptRow
from leaderboard.standings import QueryError, run_row

A = AttemptRow.__table__
BOUNDED = ("resolved", "tests_passed")  # rates in [0, 1]


class Flip(BaseModel):
    task_id: str
    first: float  # the task's resolved rate over its shared epochs
    second: float


class Comparison(BaseModel):
    first: str
    second: str
    first_model: str
    second_model: str
    suite_version: str
    shared_attempts: int
    shared_tasks: int
    first_only: int  # tasks the first run resolves more often (lost by the second; McNemar's b)
    second_only: int  # tasks the second run resolves more often (gained; c)
    # the exact paired sign-flip test over tasks (exact McNemar over tasks with one epoch)
    mcnemar_p: float
    first_rate: stats.Interval  # each run's resolved rate on the shared attempts
    second_rate: stats.Interval
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

    one_run, two_run = run_row(conn, first), run_row(conn, second)
    if one_run.suite_version != two_run.suite_version:
        raise QueryError(
            f"runs are on different suite versions ({one_run.suite_version} vs "
            f"{two_run.suite_version}); scores compare only within a version"
        )
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
    paired = stats.paired_bootstraps(
        {name: means[name] for name in ("cost_usd", "latency_s")}, seed=seed
    )
    for name in BOUNDED:
        paired[name] = stats.paired_rate_difference(*means[name], epochs=sizes.tolist())
    one_rate, two_rate = means["resolved"]
    scale = math.lcm(*(int(size) for size in sizes)) if len(sizes) else 1
    p_value = stats.sign_flip_p(list(two_rate - one_rate), seed=seed, scale=scale)
    flips = [
        Flip(task_id=task, first=float(one), second=float(two))
        for task, one, two in zip(per_task, one_rate, two_rate, strict=True)
        if one != two
    ]
    gained = [flip for flip in flips if flip.second > flip.first]
    lost = [flip for flip in flips if flip.second < flip.first]
    return Comparison(
        first=first,
        second=second,
        first_model=one_run.model,
        second_model=two_run.model,
        suite_version=one_run.suite_version,
        shared_attempts=len(pairs),
        shared_tasks=len(per_task),
        first_only=len(lost),
        second_only=len(gained),
        mcnemar_p=p_value,
        first_rate=_rate(columns[:, 0], starts, sizes),
        second_rate=_rate(columns[:, 1], starts, sizes),
        resolved=paired["resolved"],
        tests_passed=paired["tests_passed"],
        cost_usd=paired["cost_usd"],
        latency_s=paired["latency_s"],
        gained=gained,
        lost=lost,
    )


def _rate(resolved: Any, starts: list[int], sizes: Any) -> stats.Interval:
    """A run's resolved rate over the attempts, clustered by task."""
    import numpy as np

    sums = np.add.reduceat(resolved, starts) if starts else np.zeros(0)
    return stats.clustered_totals(sums.tolist(), [int(size) for size in sizes])


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
