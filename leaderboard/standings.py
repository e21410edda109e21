"""The leaderboard: runs ranked by score with CI-aware ranks, filtered, and what filters exist.

Scores: a run's score is its resolved rate with a Wilson 95% interval, or, filtered by a
category or an eval, that category's rate or that eval's mean (`run_breakdowns`). Finished runs
are read from their summary rows; runs still going are summarised from their attempts on the
fly. Ranks are CI-aware and only compare runs of the same suite version.

Only confined runs (bubblewrap, docker) whose verdicts are tamper-evident are standings: a
run made with `--sandbox subprocess` could read the answers, and a run whose warnings say
some verdicts are not tamper-evident (`harness.results.NOT_TAMPER_EVIDENT`: imported Harbor
tasks without a canary run) could have had them forced, so `leaderboard` leaves either out
and `unconfined_runs` lists it apart, unranked (rank 0). So too for a run imported
unverified (`harness.results.UNVERIFIED`: `runs import --unverified`), whose verdicts were
never replayed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, select

from harness.results import is_confined, tamper_evident, verified
from leaderboard import stats, summaries
from leaderboard.schema import (
    CheckpointRow,
    ModelRow,
    RunBreakdownRow,
    RunRow,
    RunSummaryRow,
    SuiteRow,
    TaskRow,
    TrainingRunRow,
)


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
    sandbox: str = ""
    confined: bool = True
    tamper_evident: bool = True  # no run warning says some verdict could be steered unseen
    verified: bool = True  # not imported with `runs import --unverified`
    repeat_of: str | None = None
    training_run: str | None = None
    step: int | None = None
    gate_decision: str | None = None
    promoted: bool | None = None  # for checkpoint runs: promoted by the training run's gate

    @property
    def rankable(self) -> bool:
        """Confined, verified, and no verdict of it could have been forced unseen."""
        return self.confined and self.tamper_evident and self.verified


class Filters(BaseModel):
    suite: str | None = None  # "name" or "name@version"
    category: str | None = None
    eval: str | None = None
    model: str | None = None
    training_run: str | None = None


def leaderboard(conn: Connection, filters: Filters | None = None) -> list[LeaderRow]:
    """One row per rankable run matching the filters, best score first, ranked within suite
    versions. Unconfined runs and runs with verdicts that are not tamper-evident are never
    among them (`unconfined_runs`)."""
    return standings(conn, filters)[0]


def unconfined_runs(conn: Connection, filters: Filters | None = None) -> list[LeaderRow]:
    """The runs matching the filters that ran unconfined or whose verdicts are not
    tamper-evident: unranked (rank 0), best first."""
    return standings(conn, filters)[1]


def standings(
    conn: Connection, filters: Filters | None = None
) -> tuple[list[LeaderRow], list[LeaderRow]]:
    """`leaderboard` and `unconfined_runs` from one read of the runs (a page showing both)."""
    every = _rows(conn, filters or Filters())
    ranked = [row for row in every if row.rankable]
    _rank(ranked)
    ranked.sort(key=lambda row: (row.suite, row.version, row.rank, -row.score))
    unranked = [row for row in every if not row.rankable]
    unranked.sort(key=lambda row: (row.suite, row.version, -row.score))
    return ranked, unranked


def _rows(conn: Connection, filters: Filters) -> list[LeaderRow]:
    query = (
        select(
            RunRow.id,
            RunRow.model,
            RunRow.created_at,
            RunRow.status,
            RunRow.config_hash,
            RunRow.sandbox,
            RunRow.warnings,
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
    figures = run_figures(conn, ids)
    scores = _scores(conn, ids, filters, figures)
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
                sandbox=run.sandbox,
                confined=is_confined(run.sandbox),
                tamper_evident=tamper_evident(run.warnings),
                verified=verified(run.warnings),
                repeat_of=None if repeat_of == run.id else repeat_of,
                training_run=run.training_run,
                step=run.step,
                gate_decision=run.gate_decision,
                promoted=run.promoted,
            )
        )
    return rows


def run_figures(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    stored = {
        row.run_id: dict(row._mapping)
        for row in conn.execute(select(RunSummaryRow).where(RunSummaryRow.run_id.in_(ids)))
    }
    missing = [run_id for run_id in ids if run_id not in stored]
    return stored | summaries.live(conn, missing)


def _scores(
    conn: Connection, ids: list[str], filters: Filters, figures: dict[str, dict[str, Any]]
) -> dict[str, tuple[float, float, float]]:
    if filters.category is None and filters.eval in (None, "resolved"):
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
    unsummarised = set(ids) - set(summarised(conn, ids))
    for run_id in unsummarised:
        for row in summaries.breakdowns(conn, run_id):
            if (row["kind"], row["key"]) == (kind, key):
                found[run_id] = (row["mean"], row["low"], row["high"])
    return found


def summarised(conn: Connection, ids: list[str]) -> list[str]:
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


LARGE = ("config", "summary")  # a run's task list and the runner's summary: tens of kB of JSON


def run_row(conn: Connection, run_id: str, full: bool = False) -> Any:
    """The run's `runs` row; without `full`, every column but `config` and `summary`."""
    columns = [c for c in RunRow.__table__.c if full or c.name not in LARGE]
    run = conn.execute(select(*columns).where(RunRow.id == run_id)).one_or_none()
    if run is None:
        raise QueryError(f"no run {run_id!r} in the store")
    return run
