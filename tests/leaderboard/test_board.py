"""The leaderboard by model: one row per model from its latest (or best) complete confined
run; partial and unconfined runs marked and never ranked; suite versions apart."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from harness.model.pricing import unknown_price_warning
from leaderboard import queries, stats
from leaderboard.schema import RunRow

OUTCOMES = {f"t{i}": [i % 2 == 0, i % 3 == 0] for i in range(12)}
BETTER = {f"t{i}": [i != 0, True] for i in range(12)}


@pytest.fixture
def filled(db: Any, fill: Any) -> Any:
    store = db.open()
    # generated runs start len(run_id) minutes after T0: the longer id is the later run
    fill(store, "a-old", BETTER, model="alpha")  # alpha's best, not its latest
    fill(store, "a-new-1", OUTCOMES, model="alpha")
    fill(store, "b-done--", OUTCOMES, model="beta")
    fill(store, "g-partial", OUTCOMES, model="gamma", finish=False)
    fill(store, "d-subprocess", BETTER, model="delta", sandbox="subprocess")
    fill(store, "e-other-suite", BETTER, model="alpha", suite_version="0.2")
    return store


def board(store: Any, pick: str = "latest") -> list[queries.SuiteBoard]:
    with store.engine.connect() as conn:
        return queries.model_board(conn, pick=pick)  # type: ignore[arg-type]


def test_one_row_per_model_from_its_latest_complete_confined_run(filled: Any) -> None:
    boards = board(filled)
    assert [(b.suite, b.version) for b in boards] == [
        ("cursorbench", "0.1"),
        ("cursorbench", "0.2"),
    ]
    first = boards[0]
    assert sorted((e.model, e.run_id) for e in first.ranked) == [
        ("alpha", "a-new-1"),
        ("beta", "b-done--"),
    ]
    alpha = next(e for e in first.ranked if e.model == "alpha")
    assert alpha.runs == 2 and alpha.rank == 1 and alpha.coverage == 1.0
    unranked = {e.model: e.why_unranked for e in first.unranked}
    assert unranked == {"gamma": "running", "delta": "unconfined"}
    assert all(e.rank == 0 and not e.ranked for e in first.unranked)
    assert [e.run_id for e in boards[1].ranked] == ["e-other-suite"]  # never interleaved


def test_best_picks_the_highest_scoring_complete_run(filled: Any) -> None:
    alpha = next(e for e in board(filled, "best")[0].ranked if e.model == "alpha")
    assert alpha.run_id == "a-old"


def test_figures_come_from_the_stats_functions(filled: Any) -> None:
    beta = next(e for e in board(filled)[0].ranked if e.model == "beta")
    sums = [float(sum(runs)) for runs in OUTCOMES.values()]
    interval = stats.clustered_totals(sums, [2] * len(OUTCOMES))
    assert (beta.score, beta.low, beta.high) == (interval.estimate, interval.low, interval.high)
    assert beta.k == 2
    assert beta.pass_at_k == pytest.approx(stats.mean_pass_at_k(OUTCOMES, 2))
    assert beta.pass_at_1 == pytest.approx(stats.mean_pass_at_k(OUTCOMES, 1))
    assert beta.cost_per_task == pytest.approx(0.02)  # 2 epochs x $0.01 per task
    assert beta.tokens_per_task == pytest.approx(2200)


def test_a_partial_run_and_an_unknown_price_are_said_so(db: Any, fill: Any) -> None:
    store = db.open()
    fill(store, "p-run", OUTCOMES, model="short", finish=False)
    store.finish_run("p-run", _partial_summary(store, "p-run"))
    with store.engine.begin() as conn:
        conn.execute(
            update(RunRow)
            .where(RunRow.id == "p-run")
            # planned: the config's tasks x epochs, which start_run keeps in its own column
            .values(config={"epochs": 3, "tasks": dict.fromkeys(OUTCOMES, "d")}, planned=36)
        )
    fill(store, "free-run", OUTCOMES, model="unpriced")
    with store.engine.begin() as conn:
        conn.execute(
            update(RunRow)
            .where(RunRow.id == "free-run")
            .values(warnings=[unknown_price_warning("unpriced")])
        )
    (only,) = board(store)
    short = only.unranked[0]
    assert short.why_unranked == "partial" and short.coverage == pytest.approx(24 / 36)
    unpriced = only.ranked[0]
    assert unpriced.model == "unpriced" and unpriced.cost_per_task is None


def _partial_summary(store: Any, run_id: str) -> Any:
    from harness.run.summary import summarize

    results = store.attempts(run_id)
    return summarize(results, len(results) + 12)  # 12 planned attempts never ran
