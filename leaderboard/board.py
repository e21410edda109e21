"""The leaderboard by model: one row per model and suite version, from its latest (or best)
complete, confined run.

A model's row in a suite version is its latest complete confined run (`pick="best"`: the one
with the highest resolved rate). A run is complete when it recorded every planned attempt
(tasks x epochs of its config); confined when it ran in bubblewrap or docker. Only those
rows are ranked (CI-aware, within the suite version). A model with no such run still gets a
row, from its latest run, marked with why it is not ranked (`partial`, `running`,
`unconfined`, `not tamper-evident`, `unverified`: imported without replaying it) and listed
apart: such a score is never ranked with complete ones. Suite versions are boards of their
own, never interleaved.

Each row has the run's coverage (attempts recorded of those planned), its resolved rate with
the task-clustered 95% interval (`stats.clustered_totals`, flagged when degenerate), pass@1
and pass@k for k = the run's epochs (the mean over tasks of `stats.pass_at_k`), and cost and
tokens per task (cost `None` when the model had no price: unknown, not $0).

Reads one summary row per run (`leaderboard.summaries` keeps these figures when a run
finishes); only runs still going are summarised from their attempts on the fly.

Not covered here: the per-run list (`leaderboard.standings`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import Connection, select

from harness.model.pricing import price_unknown
from leaderboard import stats, summaries
from leaderboard.schema import RunRow
from leaderboard.standings import Filters, LeaderRow, run_figures, standings

Pick = Literal["latest", "best"]


class ModelEntry(BaseModel):
    model: str
    run_id: str
    runs: int  # the model's runs on this suite version
    suite: str
    version: str
    started: datetime
    status: str
    ranked: bool
    why_unranked: str | None  # "partial", "running", "unconfined", "unverified"
    rank: int = 0
    attempts: int
    planned: int | None
    coverage: float | None
    tasks: int
    epochs: int
    score: float
    low: float
    high: float
    degenerate: bool
    pass_at_1: float
    pass_at_k: float
    k: int
    cost_per_task: float | None
    tokens_per_task: float | None
    tampering: int


class SuiteBoard(BaseModel):
    suite: str
    version: str
    ranked: list[ModelEntry]
    unranked: list[ModelEntry]


def model_board(
    conn: Connection, filters: Filters | None = None, pick: Pick = "latest"
) -> list[SuiteBoard]:
    """A board per suite version: a row per model, ranked rows first (see module docstring)."""
    filters = filters or Filters()
    ranked_runs, unconfined = standings(conn, filters)
    every = [*ranked_runs, *unconfined]
    groups: dict[tuple[str, str], dict[str, list[LeaderRow]]] = {}
    for row in every:
        groups.setdefault((row.suite, row.version), {}).setdefault(row.model, []).append(row)
    chosen = {
        key: {model: _choose(runs, pick) for model, runs in models.items()}
        for key, models in groups.items()
    }
    ids = [row.run_id for models in chosen.values() for row, _why in models.values()]
    plans = _plans(conn, ids)
    cells = _figures(conn, ids)
    boards = []
    for (suite, version), models in sorted(chosen.items()):
        entries = [
            _entry(row, why, len(groups[(suite, version)][model]), plans, cells)
            for model, (row, why) in models.items()
        ]
        ranked = [entry for entry in entries if entry.ranked]
        ranks = stats.ci_aware_ranks(
            [stats.Ranked(e.run_id, e.score, e.low, e.high) for e in ranked]
        )
        for entry in ranked:
            entry.rank = ranks[entry.run_id]
        unranked = [entry for entry in entries if not entry.ranked]
        boards.append(
            SuiteBoard(
                suite=suite,
                version=version,
                ranked=sorted(ranked, key=lambda e: (e.rank, -e.score, e.model)),
                unranked=sorted(unranked, key=lambda e: (-e.score, e.model)),
            )
        )
    return boards


def _choose(runs: list[LeaderRow], pick: Pick) -> tuple[LeaderRow, str | None]:
    """The run that stands for a model, and why it is not ranked (None: it is)."""
    rankable = [row for row in runs if row.complete and row.rankable]
    if rankable:
        if pick == "best":
            return max(rankable, key=lambda row: (row.score, row.started, row.run_id)), None
        return max(rankable, key=lambda row: (row.started, row.run_id)), None
    latest = max(runs, key=lambda row: (row.started, row.run_id))
    if not latest.confined:
        return latest, "unconfined"
    if not latest.tamper_evident:
        return latest, "not tamper-evident"
    if not latest.verified:
        return latest, "unverified"
    return latest, "running" if latest.status == "running" else "partial"


def _plans(conn: Connection, ids: list[str]) -> dict[str, tuple[int | None, int, bool]]:
    """Per run: planned attempts (None if its config does not say), epochs, cost known."""
    found = {}
    query = select(RunRow.id, RunRow.planned, RunRow.epochs, RunRow.warnings)
    for run in conn.execute(query.where(RunRow.id.in_(ids))):
        known = not price_unknown(run.warnings or [])
        found[run.id] = (run.planned, int(run.epochs or 1), known)
    return found


def _figures(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each run's summary figures: its stored row, or computed now (a run not finished, or
    one summarised before pass@k was kept)."""
    found = run_figures(conn, ids)
    again = [run_id for run_id, fig in found.items() if fig.get("pass_k") is None]
    return found | summaries.live(conn, again)


def _entry(
    row: LeaderRow,
    why: str | None,
    runs: int,
    plans: dict[str, tuple[int | None, int, bool]],
    cells: dict[str, dict[str, Any]],
) -> ModelEntry:
    planned, epochs, cost_known = plans.get(row.run_id, (None, 1, True))
    fig = cells.get(row.run_id, {})
    tasks = int(fig.get("tasks") or 0)
    if why is None and planned is not None and row.attempts < planned:
        why = "partial"  # marked complete, yet fewer attempts than planned
    return ModelEntry(
        model=row.model,
        run_id=row.run_id,
        runs=runs,
        suite=row.suite,
        version=row.version,
        started=row.started,
        status=row.status,
        ranked=why is None,
        why_unranked=why,
        attempts=row.attempts,
        planned=planned,
        coverage=row.attempts / planned if planned else None,
        tasks=tasks,
        epochs=epochs,
        score=float(fig.get("resolved_rate") or 0.0),
        low=float(fig.get("rate_low") or 0.0),
        high=float(fig.get("rate_high") or 1.0),
        degenerate=bool(fig.get("degenerate")),
        pass_at_1=float(fig.get("pass_at_1") or 0.0),
        pass_at_k=float(fig.get("pass_at_k") or 0.0),
        k=int(fig.get("pass_k") or 1),
        cost_per_task=row.cost_usd / tasks if cost_known and tasks else None,
        tokens_per_task=row.tokens / tasks if tasks else None,
        tampering=row.tampering,
    )
