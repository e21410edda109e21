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
from sqlalchemy import Connection, Float, and_, case, cast, func, select

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

    One query pairs the shared attempts (a join on task and epoch) and adds them up per task
    in the database: each task's shared epochs and, for each run, its resolved attempts, its
    shares of tests passed, cost and latency. Per-task means and the paired statistics are
    computed from those sums with numpy (the cost and latency bootstraps share resamples)."""
    import numpy as np  # here, not at the top: the store's writers need no numpy

    one_run, two_run = run_row(conn, first), run_row(conn, second)
    if one_run.suite_version != two_run.suite_version:
        raise QueryError(
            f"runs are on different suite versions ({one_run.suite_version} vs "
            f"{two_run.suite_version}); scores compare only within a version"
        )
    # by task id as Python orders it (a server's collation may order ids otherwise)
    found = sorted(conn.execute(_per_task_sums(first, second)).all(), key=lambda row: row[0])
    per_task = [row[0] for row in found]
    sums = np.array([row[1:] for row in found], dtype=float).reshape(len(found), 9)
    sums = np.nan_to_num(sums)  # SUM over no value is NULL: nothing to add
    sizes = sums[:, 0]
    means = sums[:, 1:] / sizes[:, None] if len(found) else np.zeros((0, 8))
    measures: dict[str, tuple[Any, Any]] = {
        name: (means[:, 2 * i], means[:, 2 * i + 1])
        for i, name in enumerate(("resolved", "tests_passed", "cost_usd", "latency_s"))
    }
    paired = stats.paired_bootstraps(
        {name: measures[name] for name in ("cost_usd", "latency_s")}, seed=seed
    )
    epochs = [int(size) for size in sizes]
    for name in BOUNDED:
        paired[name] = stats.paired_rate_difference(*measures[name])
    one_rate, two_rate = measures["resolved"]
    scale = math.lcm(*epochs) if epochs else 1
    p_value = stats.sign_flip_p((two_rate - one_rate).tolist(), seed=seed, scale=scale)
    differ = np.flatnonzero(one_rate != two_rate)
    flips = [
        Flip(task_id=per_task[i], first=float(one_rate[i]), second=float(two_rate[i]))
        for i in differ.tolist()
    ]
    gained = [flip for flip in flips if flip.second > flip.first]
    lost = [flip for flip in flips if flip.second < flip.first]
    return Comparison(
        first=first,
        second=second,
        first_model=one_run.model,
        second_model=two_run.model,
        suite_version=one_run.suite_version,
        shared_attempts=sum(epochs),
        shared_tasks=len(per_task),
        first_only=len(lost),
        second_only=len(gained),
        mcnemar_p=p_value,
        first_rate=stats.clustered_totals(sums[:, 1].tolist(), epochs),
        second_rate=stats.clustered_totals(sums[:, 2].tolist(), epochs),
        resolved=paired["resolved"],
        tests_passed=paired["tests_passed"],
        cost_usd=paired["cost_usd"],
        latency_s=paired["latency_s"],
        gained=gained,
        lost=lost,
    )


def _per_task_sums(first: str, second: str) -> Any:
    """Per task both runs attempted: the shared epochs, then first's and
    second's sums over them of resolved, share of tests passed (0 without tests), cost and
    latency, interleaved."""
    one, two = A.alias("one"), A.alias("two")

    def resolved(side: Any) -> Any:
        return case((side.c.resolved, 1), else_=0)

    def tests_share(side: Any) -> Any:
        passed = cast(func.coalesce(side.c.tests_passed, 0), Float)
        return case((side.c.tests_total > 0, passed / side.c.tests_total), else_=0.0)

    parts = [
        (resolved(one), resolved(two)),
        (tests_share(one), tests_share(two)),
        (one.c.cost_usd, two.c.cost_usd),
        (one.c.model_latency_s, two.c.model_latency_s),
    ]
    return (
        select(
            one.c.task_id,
            func.count(),
            *[func.sum(column) for pair in parts for column in pair],
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
        .group_by(one.c.task_id)
    )
