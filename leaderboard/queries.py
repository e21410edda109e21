"""What people ask the store: the leaderboard, a run, two runs compared, one attempt, a
training run's checkpoints. Read-only functions of a SQLAlchemy connection, returning plain
pydantic models that the CLI prints and the dashboard renders.

Scores: a run's score is its resolved rate with a Wilson 95% interval, or, filtered by a
category or an eval, that category's rate or that eval's mean (`run_breakdowns`). Finished runs
are read from their summary rows; runs still going are summarised from their attempts on the
fly. Ranks are CI-aware and only compare runs of the same suite version.

Comparison pairs two runs on their shared (task, epoch) attempts: exact McNemar on resolved;
paired bootstrap over tasks (each task's mean over its epochs) for the resolved rate, the share
of tests passed, cost and latency.

Not covered here: writing (`leaderboard.store`), deciding (`leaderboard.gate`).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, and_, select

from leaderboard import stats, summaries
from leaderboard.schema import (
    AttemptRow,
    CheckpointRow,
    ModelRow,
    RunBreakdownRow,
    RunRow,
    RunSummaryRow,
    SuiteRow,
    TaskRow,
    TrainingRunRow,
    TrajectoryRow,
)

A = AttemptRow.__table__


class QueryError(Exception):
    """A run, task or training run that does not exist (one line)."""


class LeaderRow(BaseModel):
    run_id: str
    model: str
    suite: str
    version: str
    started: datetime
    status: str
    complete: bool
    attempts: int
    score: float
    low: float
    high: float
    rank: int = 0
    cost_usd: float
    tokens: int
    latency_s: float
    tampering: int
    flagged: int
    config_hash: str
    repeat_of: str | None = None
    training_run: str | None = None
    step: int | None = None
    gate_decision: str | None = None
    promoted: bool | None = None  # for checkpoint runs: promoted by the training run's gate


class Filters(BaseModel):
    suite: str | None = None  # "name" or "name@version"
    category: str | None = None
    eval: str | None = None
    model: str | None = None
    training_run: str | None = None


def leaderboard(conn: Connection, filters: Filters | None = None) -> list[LeaderRow]:
    """One row per run matching the filters, best score first, ranked within suite versions."""
    filters = filters or Filters()
    query = (
        select(
            RunRow.id,
            RunRow.model,
            RunRow.created_at,
            RunRow.status,
            RunRow.config_hash,
            SuiteRow.name.label("suite"),
            RunRow.suite_version,
            TrainingRunRow.name.label("training_run"),
            CheckpointRow.step,
            CheckpointRow.gate_decision,
            CheckpointRow.promoted,
        )
        .outerjoin(SuiteRow, SuiteRow.id == RunRow.suite_id)
        .outerjoin(CheckpointRow, CheckpointRow.id == RunRow.checkpoint_id)
        .outerjoin(TrainingRunRow, TrainingRunRow.id == CheckpointRow.training_run_id)
        .order_by(RunRow.created_at, RunRow.id)
    )
    if filters.model:
        query = query.where(RunRow.model == filters.model)
    if filters.training_run:
        query = query.where(TrainingRunRow.name == filters.training_run)
    if filters.suite:
        name, _, version = filters.suite.partition("@")
        query = query.where(SuiteRow.name == name)
        if version:
            query = query.where(RunRow.suite_version == version)
    runs = conn.execute(query).all()
    ids = [run.id for run in runs]
    figures = _figures(conn, ids)
    scores = _scores(conn, ids, filters)
    first_of_config: dict[str, str] = {}
    rows = []
    for run in runs:
        repeat_of = first_of_config.setdefault(run.config_hash, run.id)
        fig, score = figures.get(run.id), scores.get(run.id)
        if fig is None or score is None:
            continue  # no attempts (yet), or none in the filtered category/eval
        rows.append(
            LeaderRow(
                run_id=run.id,
                model=run.model,
                suite=run.suite or "?",
                version=run.suite_version,
                started=run.created_at,
                status=run.status,
                complete=run.status == "complete",
                attempts=int(fig["attempts"]),
                score=score[0],
                low=score[1],
                high=score[2],
                cost_usd=float(fig["cost_usd"] or 0),
                tokens=int(fig["tokens_in"] or 0) + int(fig["tokens_out"] or 0),
                latency_s=float(fig["latency_s"] or 0),
                tampering=int(fig["tampering"] or 0),
                flagged=int(fig["flagged"] or 0),
                config_hash=run.config_hash,
                repeat_of=None if repeat_of == run.id else repeat_of,
                training_run=run.training_run,
                step=run.step,
                gate_decision=run.gate_decision,
                promoted=run.promoted,
            )
        )
    _rank(rows)
    return sorted(rows, key=lambda row: (row.suite, row.version, row.rank, -row.score))


def _figures(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    stored = {
        row.run_id: dict(row._mapping)
        for row in conn.execute(select(RunSummaryRow).where(RunSummaryRow.run_id.in_(ids)))
    }
    missing = [run_id for run_id in ids if run_id not in stored]
    return stored | summaries.live(conn, missing)


def _scores(
    conn: Connection, ids: list[str], filters: Filters
) -> dict[str, tuple[float, float, float]]:
    if filters.category is None and filters.eval in (None, "resolved"):
        figures = _figures(conn, ids)
        return {
            run_id: (fig["resolved_rate"], fig["rate_low"], fig["rate_high"])
            for run_id, fig in figures.items()
        }
    kind, key = ("category", filters.category) if filters.category else ("eval", filters.eval)
    found = {
        row.run_id: (row.mean, row.low, row.high)
        for row in conn.execute(
            select(RunBreakdownRow).where(
                RunBreakdownRow.run_id.in_(ids),
                RunBreakdownRow.kind == kind,
                RunBreakdownRow.key == key,
            )
        )
    }
    unsummarised = set(ids) - set(_summarised(conn, ids))
    for run_id in unsummarised:
        for row in summaries.breakdowns(conn, run_id):
            if (row["kind"], row["key"]) == (kind, key):
                found[run_id] = (row["mean"], row["low"], row["high"])
    return found


def _summarised(conn: Connection, ids: list[str]) -> list[str]:
    query = select(RunSummaryRow.run_id).where(RunSummaryRow.run_id.in_(ids))
    return list(conn.scalars(query))


def _rank(rows: list[LeaderRow]) -> None:
    groups: dict[tuple[str, str], list[LeaderRow]] = {}
    for row in rows:
        groups.setdefault((row.suite, row.version), []).append(row)
    for group in groups.values():
        ranks = stats.ci_aware_ranks(
            [stats.Ranked(row.run_id, row.score, row.low, row.high) for row in group]
        )
        for row in group:
            row.rank = ranks[row.run_id]


def filter_choices(conn: Connection) -> dict[str, list[str]]:
    """The values each leaderboard filter can take."""
    suites = conn.execute(select(SuiteRow.name, SuiteRow.version).order_by(SuiteRow.name)).all()
    evals = select(RunBreakdownRow.key).where(RunBreakdownRow.kind == "eval").distinct()
    return {
        "suite": sorted({name for name, _ in suites} | {f"{n}@{v}" for n, v in suites}),
        "category": sorted(
            c for c in conn.scalars(select(TaskRow.category).distinct()) if c is not None
        ),
        "eval": sorted(set(conn.scalars(evals)) | {"resolved"}),
        "model": sorted(conn.scalars(select(ModelRow.name))),
        "training_run": sorted(conn.scalars(select(TrainingRunRow.name))),
    }


# --- one run ----------------------------------------------------------------------------------


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


def run_detail(conn: Connection, run_id: str) -> RunDetail:
    run = _run_row(conn, run_id)
    figures = _figures(conn, [run_id]).get(run_id, {})
    if run_id in _summarised(conn, [run_id]):
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
        attempts=attempt_lines(conn, run_id, run.suite_id),
        repeats=list(repeats),
        training_run=checkpoint.name if checkpoint else None,
        step=checkpoint.step if checkpoint else None,
        gate_decision=checkpoint.gate_decision if checkpoint else None,
    )


def _run_row(conn: Connection, run_id: str) -> Any:
    run = conn.execute(select(RunRow).where(RunRow.id == run_id)).one_or_none()
    if run is None:
        raise QueryError(f"no run {run_id!r} in the store")
    return run


def attempt_lines(conn: Connection, run_id: str, suite_id: int | None) -> list[AttemptLine]:
    tasks = TaskRow.__table__
    query = (
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
    return [
        AttemptLine(**(dict(row._mapping) | {"flags": row.flags or []}))
        for row in conn.execute(query)
    ]


# --- two runs ---------------------------------------------------------------------------------


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
        _run_row(conn, run_id)
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


# --- attempts, checkpoints --------------------------------------------------------------------


class AttemptView(BaseModel):
    run_id: str
    task_id: str
    epoch: int
    result: dict[str, Any]
    diff: str | None
    trajectory: list[dict[str, Any]]
    trajectory_source: str | None  # "file: PATH", "stored blob", or None if unavailable


def attempt_view(conn: Connection, run_id: str, task_id: str, epoch: int) -> AttemptView:
    run = _run_row(conn, run_id)
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
            tokens_seen=tokens.get(row.step),
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
        runs = {checkpoint: run_id for checkpoint, run_id in evaluations}  # latest wins
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
