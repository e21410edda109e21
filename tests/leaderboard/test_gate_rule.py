"""The gate's rule: nothing judged never passes, epochs are averaged per task, the effective
sample size is bounded by the tasks, non-inferiority at a margin, and `gate plan`; through
the real CLI where the exit status is what CI sees (`tests.cli_runner`)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from leaderboard import SqlStore, stats
from leaderboard.gate import GateRules, gate
from leaderboard.schema import AttemptRow
from tests.cli_runner import cursorbench


def url(store: SqlStore) -> str:
    return str(store.engine.url)


def errored(store: SqlStore, run_id: str) -> None:
    """Every attempt of the run an error: nothing judged."""
    with store.engine.begin() as conn:
        conn.execute(
            update(AttemptRow)
            .where(AttemptRow.run_id == run_id)
            .values(status="error", resolved=False)
        )


@pytest.mark.parametrize("tasks", [13, 200, 600])
def test_nothing_judged_or_nothing_resolved_never_passes(
    sqlite_store: SqlStore, fill: Any, tasks: int, tmp_path: Any
) -> None:
    nothing = {f"t{i:03d}": [False, False] for i in range(tasks)}
    for run_id in ("zero", "zero-too", "err-a", "err-b"):
        fill(sqlite_store, run_id, nothing)
    errored(sqlite_store, "err-a")
    errored(sqlite_store, "err-b")
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("on_inconclusive: pass\nmargin: 0.5\n")
    for candidate, baseline, why in (
        ("zero", "err-a", "every shared attempt of the baseline is an error"),
        ("err-a", "err-b", "of the candidate and baseline is an error"),
        ("zero", "zero-too", "neither run resolved any shared attempt"),
    ):
        result = cursorbench(
            "gate", "--candidate", candidate, "--baseline", baseline, "--db", url(sqlite_store),
            "--rules", str(lenient),
        )  # fmt: skip
        assert result.returncode == 1, (candidate, baseline, result.stdout)
        assert "❌ fail" in result.stdout and why in result.stdout
        assert "Errors (not judged, counted unresolved)" in result.stdout
    shown = cursorbench(
        "gate", "--candidate", "zero", "--baseline", "err-a", "--db", url(sqlite_store)
    ).stdout
    assert f"candidate 0, baseline {2 * tasks} of {2 * tasks} shared attempts" in shown


def test_a_candidate_resolving_something_against_an_errored_baseline_fails(
    sqlite_store: SqlStore, fill: Any
) -> None:
    many = {f"t{i:03d}": [i % 2 == 0] for i in range(300)}
    fill(sqlite_store, "good", many)
    fill(sqlite_store, "broken", many)
    errored(sqlite_store, "broken")

    decision = gate("good", "broken", GateRules(on_inconclusive="pass"), sqlite_store)

    assert (decision.decision, decision.exit_code) == ("fail", 1)
    assert decision.coverage.baseline_errors == 300 and decision.coverage.candidate_errors == 0


def test_unequal_epochs_are_averaged_per_task(sqlite_store: SqlStore, fill: Any) -> None:
    # task a: 1 of 1 epoch; task b: 0 of 3. Over attempts 1/4; over tasks (1 + 0) / 2
    fill(sqlite_store, "one", {"a": [True], "b": [False, False, False]})
    fill(sqlite_store, "two", {"a": [True], "b": [True, False, False]})

    decision = gate("two", "one", GateRules(min_coverage=0), sqlite_store)

    c = decision.comparison
    assert c.first_rate.estimate == pytest.approx(0.5)
    assert c.second_rate.estimate == pytest.approx((1 + 1 / 3) / 2)
    assert decision.rule is not None
    assert decision.rule.regression == pytest.approx(-1 / 6)  # (0 - 1/3) / 2 over tasks


def test_epochs_do_not_widen_the_sample_beyond_the_tasks() -> None:
    # 20 tasks each resolved half the time over 100 epochs: nearly no spread between tasks,
    # yet the interval is as wide as 20 tasks allow, not as narrow as 2,000 attempts would
    half = stats.clustered_interval([[1, 0] * 50] * 19 + [[1, 0] * 49 + [1, 1]])
    at_tasks = stats.wilson_corrected(half.estimate, 20, stats.z_for(0.95))
    assert (half.low, half.high) == pytest.approx(at_tasks)
    assert half.high - half.low > 0.4


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=6), min_size=2, max_size=30))
def test_the_interval_is_never_narrower_than_its_number_of_tasks_allows(
    clusters: list[list[int]],
) -> None:
    rate = stats.clustered_interval(clusters)
    at_tasks = stats.wilson_corrected(rate.estimate, len(clusters), stats.z_for(0.95))
    assert rate.high - rate.low >= at_tasks[1] - at_tasks[0] - 1e-9
    means = [sum(c) / len(c) for c in clusters]
    assert rate.estimate == pytest.approx(sum(means) / len(means))  # tasks weigh the same
    import numpy as np

    estimate, low, high = stats.task_rate_intervals(np.array([means]))
    assert (estimate[0], low[0], high[0]) == pytest.approx((rate.estimate, rate.low, rate.high))


def test_the_margin_rule_by_hand() -> None:
    # 50 tasks, regression 0.01, sd 0.1: bound 0.01 + t_49 * sqrt(0.01 + 0.05 * 0.95) / sqrt(50)
    baseline = [0.1] * 25 + [0.0] * 25
    candidate = [0.0] * 25 + [0.0] * 25
    deltas = [b - c for b, c in zip(baseline, candidate, strict=True)]
    rule = stats.non_inferiority(baseline, candidate, margin=0.05, alpha=0.025)
    sd = stats.sd(deltas)
    half = stats.t_for(0.95, 49) * math.sqrt(sd**2 + 0.05 * 0.95) / math.sqrt(50)
    assert rule.regression == pytest.approx(0.05)
    assert rule.upper == pytest.approx(0.05 + half) and rule.lower == pytest.approx(0.05 - half)
    assert rule.outcome == "inconclusive"
    assert stats.non_inferiority(candidate, candidate, margin=0.5).outcome == "pass"
    assert stats.non_inferiority([1.0] * 50, [0.0] * 50, margin=0.5).outcome == "fail"
    assert stats.non_inferiority([1.0], [1.0], margin=0.5).outcome == "inconclusive"


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=60),
    st.floats(0.001, 0.5),
    st.sampled_from([0.01, 0.025, 0.05]),
)
def test_the_rule_passes_only_below_the_margin(
    pairs: list[tuple[float, float]], margin: float, alpha: float
) -> None:
    baseline, candidate = [a for a, _ in pairs], [b for _, b in pairs]
    rule = stats.non_inferiority(baseline, candidate, margin, alpha)
    assert rule.lower <= rule.regression + 1e-12 <= rule.upper + 2e-12
    assert (rule.outcome == "pass") == (rule.upper < margin)
    looser = stats.non_inferiority(baseline, candidate, margin, 0.05)
    if rule.outcome == "pass":
        assert looser.outcome == "pass"  # a larger alpha passes whatever a smaller one does
    # a candidate not better than its baseline never passes on fewer tasks than the margin
    # allows, whatever the data (the outright losses a few tasks would not show)
    needed = stats.tasks_needed(0.0, margin, alpha)
    if needed is not None and len(pairs) < needed and rule.regression >= 0:
        assert rule.outcome != "pass"


def test_the_margin_and_alpha_come_from_the_command_line(sqlite_store: SqlStore, fill: Any) -> None:
    tied = {f"t{i:02d}": [i < 30] for i in range(40)}
    fill(sqlite_store, "base", tied)
    fill(sqlite_store, "same", tied)
    args = ("gate", "--candidate", "same", "--baseline", "base", "--db", url(sqlite_store))

    strict = cursorbench(*args)
    loose = cursorbench(*args, "--margin", "0.1")
    bad = cursorbench(*args, "--alpha", "0.7")

    assert strict.returncode == 1 and "⚠️ inconclusive" in strict.stdout
    assert loose.returncode == 0 and "margin 0.100" in loose.stdout
    assert bad.returncode == 2 and "alpha" in bad.stderr


def test_gate_plan_from_a_baseline_and_from_a_pair(sqlite_store: SqlStore, fill: Any) -> None:
    outcomes = {f"t{i:02d}": [i % 3 > 0, i % 5 > 0, i % 3 > 0] for i in range(57)}
    fill(sqlite_store, "base", outcomes)
    other = {  # every fourth task the other way round in every epoch: a real disagreement
        task: [not r for r in runs] if i % 4 == 0 else runs
        for i, (task, runs) in enumerate(outcomes.items())
    }
    fill(sqlite_store, "cand", other)
    db = url(sqlite_store)

    alone = cursorbench("gate", "plan", "--baseline", "base", "--margin", "0.05", "--db", db)
    paired = cursorbench(
        "gate", "plan", "--baseline", "base", "--candidate", "cand", "--margin", "0.05",
        "--db", db, "--json",
    )  # fmt: skip

    assert alone.returncode == 0, alone.stderr
    assert "no --candidate: a candidate as good as the baseline" in alone.stdout
    assert "| epochs | sd of a task's difference | tasks needed |" in alone.stdout
    resolved = [float(sum(runs)) for runs in outcomes.values()]
    variance = stats.task_variance(resolved, [3] * 57)
    for epochs in (1, 3, 5):
        sd = stats.difference_sd(variance.within_upper, 0.0, epochs)
        needed = stats.tasks_needed(sd, 0.05)
        assert f"| {epochs} | {sd:.3f} | {needed} |" in alone.stdout
    assert paired.returncode == 0, paired.stderr
    plan = json.loads(paired.stdout)
    assert plan["candidate"] == "cand" and plan["correlation"] is not None
    assert plan["disagreement"] > 0  # the pair disagrees beyond epoch noise: more tasks
    assert plan["rows"][2]["tasks"] > stats.tasks_needed(
        stats.difference_sd(variance.within_upper, 0.0, 3), 0.05
    )
    assert plan["fewest_tasks"] >= stats.tasks_needed(0.0, 0.05)


def test_gate_plan_states_its_one_epoch_assumption_and_refuses_bad_input(
    sqlite_store: SqlStore, fill: Any
) -> None:
    fill(sqlite_store, "base", {f"t{i:02d}": [i % 3 == 0] for i in range(30)})
    db = url(sqlite_store)

    one = cursorbench("gate", "plan", "--baseline", "base", "--margin", "0.1", "--db", db)
    zero = cursorbench("gate", "plan", "--baseline", "base", "--margin", "0", "--db", db)
    unknown = cursorbench("gate", "plan", "--baseline", "nope", "--margin", "0.1", "--db", db)
    bare = cursorbench("gate", "--db", db)

    assert one.returncode == 0 and "one epoch per task" in one.stdout
    assert "No number of epochs decides a 0.100 margin on fewer than" in one.stdout
    assert zero.returncode == 2 and "margin" in zero.stderr
    assert unknown.returncode == 2 and "nope" in unknown.stderr
    assert bare.returncode == 2 and "--candidate and --baseline" in bare.stderr
