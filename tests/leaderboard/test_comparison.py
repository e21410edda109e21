"""Two runs compared (`leaderboard.comparison`), on real SQLite and PostgreSQL stores: the
task is the unit, epochs are averaged first."""

from __future__ import annotations

from typing import Any

import pytest

from leaderboard import queries, stats


def test_epochs_are_averaged_within_a_task_first(db: Any, fill: Any) -> None:
    store = db.open()
    # 10 tasks x 3 deterministic epochs: the candidate loses 3 tasks, i.e. 9 attempts
    base = {f"t{i}": [True] * 3 for i in range(10)}
    worse = {f"t{i}": [i >= 3] * 3 for i in range(10)}
    fill(store, "base", base)
    fill(store, "worse", worse)

    with store.engine.connect() as conn:
        c = queries.compare(conn, "base", "worse")

    assert (c.shared_tasks, c.shared_attempts) == (10, 30)
    assert (c.first_only, c.second_only) == (3, 0)  # tasks, not attempts
    # exact McNemar over the 3 tasks (0.25), not over the 9 attempts (0.0039)
    assert c.mcnemar_p == pytest.approx(stats.mcnemar_exact(3, 0))
    assert c.mcnemar_p > 0.05
    assert c.resolved.difference == pytest.approx(-0.3)
    assert c.resolved.low < -0.3 < c.resolved.high  # 3 of 10 tasks: p = 0.25, not decisive
    assert (c.first_rate.estimate, c.second_rate.estimate) == (1.0, pytest.approx(0.7))
    assert c.first_rate.degenerate and c.first_rate.low < 0.75  # 10 of 10 is not 100% sure
    assert c.first_model == "model-a" and c.suite_version == "0.1"


def test_partial_epochs_agreement_counts_as_a_fraction(sqlite_store: Any, fill: Any) -> None:
    fill(sqlite_store, "a", {"t0": [True, True, True], "t1": [False, False, False]})
    fill(sqlite_store, "b", {"t0": [True, False, True], "t1": [False, False, True]})

    with sqlite_store.engine.connect() as conn:
        c = queries.compare(conn, "a", "b")

    assert [(f.task_id, f.first, f.second) for f in c.lost] == [("t0", 1.0, pytest.approx(2 / 3))]
    assert [(f.task_id, f.second) for f in c.gained] == [("t1", pytest.approx(1 / 3))]
    assert c.mcnemar_p == 1.0  # +1/3 and -1/3: every sign assignment is as extreme


def test_identical_runs_are_degenerate_not_certain(sqlite_store: Any, fill: Any) -> None:
    outcomes = {f"t{i}": [i % 2 == 0] for i in range(13)}
    fill(sqlite_store, "a", outcomes)
    fill(sqlite_store, "b", outcomes)

    with sqlite_store.engine.connect() as conn:
        c = queries.compare(conn, "a", "b")

    for paired in (c.resolved, c.tests_passed):
        assert paired.degenerate and paired.low < -0.2 and paired.high > 0.2
    assert c.cost_usd.degenerate  # the same cost everywhere: [0, 0], marked as such


def test_runs_of_different_suite_versions_are_not_compared(sqlite_store: Any, fill: Any) -> None:
    fill(sqlite_store, "a", {"t0": [True]})
    fill(sqlite_store, "b", {"t0": [True]}, suite_version="0.2")

    with (
        sqlite_store.engine.connect() as conn,
        pytest.raises(queries.QueryError, match="different suite versions"),
    ):
        queries.compare(conn, "a", "b")
