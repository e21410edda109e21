"""The gate, on stores of generated runs with hand-checked numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from harness.model.pricing import unknown_price_warning
from harness.results import NOT_TAMPER_EVIDENT
from leaderboard import SqlStore, stats
from leaderboard.gate import GateError, GateRules, gate, load_rules
from leaderboard.schema import CheckpointRow, RunRow

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


def test_a_candidate_identical_to_its_baseline_on_40_tasks_is_inconclusive(
    store: SqlStore, fill: Any
) -> None:
    fill(store, "same", BASELINE)

    decision = gate("same", "base", GateRules(), store)

    assert (decision.decision, decision.exit_code) == ("inconclusive", 1)
    c = decision.comparison
    assert (c.first_only, c.second_only, c.mcnemar_p) == (0, 0, 1.0)
    # 40 tied tasks: the rule's bound is t_39 * sqrt(0.02 * 0.98 / 40) = 0.045, above the
    # 2% margin (tasks lost outright at 2% are easily not seen on 40 tasks); not [0, 0]
    assert c.resolved.difference == 0.0 and c.resolved.degenerate
    assert c.resolved.high > 0.08 and c.resolved.low == -c.resolved.high
    rule = decision.rule
    assert rule is not None and (rule.n, rule.regression, rule.sd) == (40, 0.0, 0.0)
    assert rule.upper == pytest.approx(stats.t_for(0.95, 39) * (0.0196 / 40) ** 0.5)
    assert decision.tasks_needed == stats.tasks_needed(0.0, 0.02) == 191
    assert "about 191 tasks at these epochs would decide" in decision.to_markdown()
    noisy = flipped(lose=2, gain=1)  # spread 0.27: ((1.96 * 0.31 + 0.84 * 0.27) / 0.02)^2
    fill(store, "noisy", noisy)
    needed = gate("noisy", "base", GateRules(), store).tasks_needed
    assert needed is not None and 1_500 < needed < 2_500


def test_ties_on_enough_tasks_pass(sqlite_store: SqlStore, fill: Any) -> None:
    many = {f"t{i:03d}": [i % 3 == 0] for i in range(200)}
    fill(sqlite_store, "base", many)
    fill(sqlite_store, "same", many)

    decision = gate("same", "base", GateRules(), sqlite_store)

    assert (decision.decision, decision.exit_code) == ("pass", 0)
    assert decision.rule is not None and 0 < decision.rule.upper < 0.02


def test_a_run_gated_against_itself_is_inconclusive(store: SqlStore) -> None:
    decision = gate("base", "base", GateRules(max_regression=0.5), store)

    assert (decision.decision, decision.exit_code) == ("inconclusive", 1)
    assert "same run" in decision.checks[1].detail


def test_two_runs_that_solve_nothing_fail(sqlite_store: SqlStore, fill: Any) -> None:
    # the measured fault: 13 tied pairs at 0 gave [0, 0] and a pass
    nothing = {f"t{i:02d}": [False] for i in range(13)}
    fill(sqlite_store, "zero-a", nothing)
    fill(sqlite_store, "zero-b", nothing)

    decision = gate("zero-b", "zero-a", GateRules(on_inconclusive="pass"), sqlite_store)

    assert (decision.decision, decision.exit_code) == ("fail", 1)
    assert decision.checks[0].name == "judged" and "nothing measured" in decision.checks[0].detail
    assert decision.comparison.resolved.low < -0.2
    assert decision.comparison.second_rate.high > 0.2  # 0 of 13 tasks is not "0% for sure"
    assert decision.comparison.second_rate.degenerate


def test_an_unconfined_run_is_not_gated_unless_the_rules_say_so(store: SqlStore, fill: Any) -> None:
    fill(store, "loose", BASELINE, sandbox="subprocess")

    for candidate, baseline, role in (
        ("loose", "base", "candidate"),
        ("base", "loose", "baseline"),
    ):
        with pytest.raises(GateError, match=f"the {role} ran unconfined"):
            gate(candidate, baseline, GateRules(), store)
    allowed = gate("loose", "base", GateRules(allow_unconfined=True), store)
    assert allowed.decision == "inconclusive"  # 40 tied tasks, as for any identical pair


def test_a_run_whose_verdicts_are_not_tamper_evident_is_gated_as_an_unconfined_one(
    store: SqlStore, fill: Any
) -> None:
    warning = f"{NOT_TAMPER_EVIDENT}: 1 Harbor task(s) get no canary run: t1 (why)"
    fill(store, "harbor", BASELINE, warnings=[warning])
    with pytest.raises(GateError, match="the candidate's verdicts are not tamper-evident"):
        gate("harbor", "base", GateRules(), store)
    allowed = gate("harbor", "base", GateRules(allow_unconfined=True), store)
    assert allowed.decision == "inconclusive"


def test_a_partial_candidate_cannot_be_gated(sqlite_store: SqlStore, fill: Any) -> None:
    # the measured fault: 1 task x 1 attempt against 6 tasks x 3 epochs passed with exit 0
    full = {f"t{i}": [True, True, False] for i in range(6)}
    fill(sqlite_store, "base", full)
    fill(sqlite_store, "one", {"t0": [True]})

    with pytest.raises(GateError, match=r"share 1 of the 18 .*min_coverage"):
        gate("one", "base", GateRules(), sqlite_store)
    with pytest.raises(GateError, match="min_coverage"):
        gate("base", "one", GateRules(), sqlite_store)
    # a rule that allows partial coverage says how much
    with pytest.raises(GateError, match="min_coverage"):
        gate("one", "base", GateRules(min_coverage=0.5), sqlite_store)
    allowed = gate("one", "base", GateRules(min_coverage=0.05), sqlite_store)
    assert allowed.coverage.shared == 1 and allowed.decision == "inconclusive"


def test_a_baseline_with_more_epochs_than_the_candidate_is_refused(
    sqlite_store: SqlStore, fill: Any
) -> None:
    fill(sqlite_store, "three", {f"t{i}": [True] * 3 for i in range(6)})
    fill(sqlite_store, "one", {f"t{i}": [True] for i in range(6)})

    with pytest.raises(GateError, match=r"share 6 of the 18"):
        gate("one", "three", GateRules(), sqlite_store)


def test_the_markdown_names_models_rates_flips_and_links(store: SqlStore, fill: Any) -> None:
    fill(store, "noisy", flipped(lose=2, gain=1), model="model | b")

    text = gate("noisy", "base", GateRules(), store).to_markdown(link="http://ci:8050/")

    assert "model-a" in text and "model \\| b" in text
    assert "75.0% [" in text and "72.5% [" in text  # baseline 30/40, candidate 29/40
    assert (
        "Tasks lost (2): [`task-00` 1.00 → 0.00](http://ci:8050/runs/noisy/attempts/task-00/0)"
        in text
    )
    assert "Tasks gained (1): [`task-30` 0.00 → 1.00]" in text
    assert "tasks at these epochs would decide" in text and "gate plan" in text
    assert "Errors (not judged, counted unresolved): candidate 0, baseline 0 of 40" in text
    assert "Rule: pass only if the one-sided 97.5% upper bound" in text


def test_an_unknown_price_fails_the_cost_ceiling(store: SqlStore, fill: Any) -> None:
    fill(store, "unpriced", BASELINE, cost=0.0)
    with store.engine.begin() as conn:
        conn.execute(
            update(RunRow)
            .where(RunRow.id == "unpriced")
            .values(warnings=[unknown_price_warning("model-a")])
        )

    decision = gate("unpriced", "base", GateRules(max_cost_usd=1.0, max_regression=0.1), store)

    cost = next(check for check in decision.checks if check.name == "max_cost_usd")
    assert cost.outcome == "fail" and "unknown" in cost.detail


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
        max_regression=0.1,  # 40 tied tasks bound the difference to +-8.8%
    )

    decision = gate("cand", "base", rules, store)

    outcomes = {check.name: check.outcome for check in decision.checks}
    assert outcomes == {
        "judged": "pass",
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

    gate("ckpt-100", "base", GateRules(max_regression=0.1), store)

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
    assert gate("base", "base", GateRules(), store).decision == "inconclusive"
    with pytest.raises(GateError, match="min_coverage"):
        fill(store, "part", dict(list(BASELINE.items())[:5]))
        gate("part", "base", GateRules(), store)
