"""The gate, on stores of generated runs with hand-checked numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from leaderboard import SqlStore
from leaderboard.gate import GateError, GateRules, gate, load_rules
from leaderboard.schema import CheckpointRow

TASKS = [f"task-{i:02d}" for i in range(40)]
BASELINE = {task: [i < 30] for i, task in enumerate(TASKS)}  # 30 of 40 resolved


def flipped(lose: int, gain: int) -> dict[str, list[bool]]:
    """The baseline with its first `lose` resolved tasks lost and `gain` unresolved gained."""
    outcomes = {task: list(runs) for task, runs in BASELINE.items()}
    for task in TASKS[:lose]:
        outcomes[task] = [False]
    for task in TASKS[30 : 30 + gain]:
        outcomes[task] = [True]
    return outcomes


@pytest.fixture
def store(sqlite_store: SqlStore, fill: Any) -> SqlStore:
    fill(sqlite_store, "base", BASELINE)
    return sqlite_store


def test_a_candidate_identical_to_its_baseline_passes(store: SqlStore, fill: Any) -> None:
    fill(store, "same", BASELINE)

    decision = gate("same", "base", GateRules(), store)

    assert (decision.decision, decision.exit_code) == ("pass", 0)
    c = decision.comparison
    assert (c.first_only, c.second_only, c.mcnemar_p) == (0, 0, 1.0)
    assert (c.resolved.difference, c.resolved.low, c.resolved.high) == (0.0, 0.0, 0.0)


def test_a_candidate_that_lost_many_tasks_fails(store: SqlStore, fill: Any) -> None:
    fill(store, "worse", flipped(lose=15, gain=0))

    decision = gate("worse", "base", GateRules(), store)

    assert (decision.decision, decision.exit_code) == ("fail", 1)
    c = decision.comparison
    assert (c.first_only, c.second_only) == (15, 0)
    assert c.mcnemar_p == pytest.approx(2 / 2**15)  # closed form: 2 * C(15,0) / 2^15
    assert c.resolved.difference == pytest.approx(-15 / 40)
    assert c.resolved.high < -0.02
    assert sorted(flip.task_id for flip in c.lost) == TASKS[:15]
    assert "❌ fail" in decision.to_markdown() and "`task-00`" in decision.to_markdown()
    assert json.loads(decision.to_json())["decision"] == "fail"


def test_a_small_noisy_difference_is_inconclusive(store: SqlStore, fill: Any) -> None:
    fill(store, "noisy", flipped(lose=2, gain=1))

    decision = gate("noisy", "base", GateRules(), store)
    lenient = gate("noisy", "base", GateRules(on_inconclusive="pass"), store)

    assert (decision.decision, decision.exit_code) == ("inconclusive", 1)
    assert (lenient.decision, lenient.exit_code) == ("inconclusive", 0)
    c = decision.comparison
    assert c.mcnemar_p == pytest.approx(2 * (1 + 3) / 8)  # b=2, c=1: min(1, 2*(C(3,0)+C(3,1))/8)
    assert c.resolved.low < -0.02 < c.resolved.high


def test_floors_and_cost_ceiling(store: SqlStore, fill: Any) -> None:
    categories = {task: "debugging" if i % 2 else "new_feature" for i, task in enumerate(TASKS)}
    fill(store, "cand", BASELINE, cost=0.5, categories=categories)
    rules = GateRules(
        min_resolved_rate=0.8,
        eval_floors={"resolved": 0.7, "tests_passed": 0.9, "judge": 0.1},
        category_floors={"debugging": 0.7},
        max_cost_usd=10.0,
    )

    decision = gate("cand", "base", rules, store)

    outcomes = {check.name: check.outcome for check in decision.checks}
    assert outcomes == {
        "max_regression": "pass",
        "min_resolved_rate": "fail",  # 0.75 < 0.8
        "eval resolved": "pass",
        "eval tests_passed": "fail",  # (30 * 1 + 10 * 0.5) / 40 = 0.875
        "eval judge": "fail",  # not measured
        "category debugging": "pass",  # 15 of 20
        "max_cost_usd": "fail",  # 40 * 0.5 = 20
    }
    values = {check.name: check.value for check in decision.checks}
    assert values["eval tests_passed"] == pytest.approx(0.875)
    assert values["max_cost_usd"] == pytest.approx(20.0)
    assert decision.decision == "fail"


def test_the_decision_is_recorded_on_the_checkpoint(store: SqlStore, fill: Any) -> None:
    fill(store, "ckpt-100", BASELINE)
    checkpoint = store.attach_checkpoint("ckpt-100", "train-7", step=100, tokens_seen=10**9)

    gate("ckpt-100", "base", GateRules(), store)

    with store.engine.connect() as conn:
        row = conn.execute(select(CheckpointRow).where(CheckpointRow.id == checkpoint)).one()
    assert (row.gate_decision, row.gate_baseline, row.step) == ("pass", "base", 100)
    assert row.gate_detail["candidate"] == "ckpt-100"


def test_incomparable_runs_and_bad_rules_are_errors(
    store: SqlStore, fill: Any, tmp_path: Path
) -> None:
    fill(store, "other-suite", BASELINE, suite_version="0.2")
    with pytest.raises(GateError, match="different suite versions"):
        gate("other-suite", "base", GateRules(), store)
    with pytest.raises(GateError, match="no run 'nope'"):
        gate("nope", "base", GateRules(), store)
    bad = tmp_path / "rules.yaml"
    bad.write_text("max_regression: -1\n")
    with pytest.raises(GateError, match="max_regression"):
        load_rules(bad)
    bad.write_text("unknown_rule: 1\n")
    with pytest.raises(GateError, match="unknown_rule"):
        load_rules(bad)


def test_the_gate_on_postgresql(db: Any, fill: Any) -> None:
    store = db.open()
    fill(store, "base", BASELINE)
    fill(store, "worse", flipped(lose=15, gain=0))
    assert gate("worse", "base", GateRules(), store).decision == "fail"
    assert gate("base", "base", GateRules(), store).decision == "pass"
