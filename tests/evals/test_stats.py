"""Eval intervals: clustered by scenario, inside [0, 1], never [1, 1]."""

from __future__ import annotations

from datetime import UTC, datetime

from evals.stats import eval_figures
from harness.results import AttemptResult, Score, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def attempt(task: str, epoch: int, value: float | None, key: str = "intent") -> AttemptResult:
    scores = {} if value is None else {key: Score(value=value)}
    return AttemptResult(task_id=task, epoch=epoch, status=Status.RESOLVED, scores=scores,
                         started_at=T0, finished_at=T0)  # fmt: skip


def test_intervals_cluster_by_scenario_and_stay_inside_0_1() -> None:
    owner = {f"s{i}": "intent" for i in range(12)}
    one = [attempt(f"s{i}", 0, 0.2 if i == 0 else 1.0) for i in range(12)]
    three = [attempt(f"s{i}", e, 0.2 if i == 0 else 1.0) for i in range(12) for e in range(3)]
    single, repeated = eval_figures(one, owner)["intent"], eval_figures(three, owner)["intent"]
    assert 0.0 <= single.low < single.mean < single.high <= 1.0
    # three epochs of the same twelve scenarios are not 36 samples: about as wide as 12
    assert repeated.high - repeated.low >= 0.9 * (single.high - single.low)
    assert repeated.scenarios == 12 and repeated.attempts == 36


def test_all_perfect_is_not_a_point_and_all_zero_stays_above_0() -> None:
    owner = {f"s{i}": "intent" for i in range(12)}
    perfect = eval_figures([attempt(f"s{i}", 0, 1.0) for i in range(12)], owner)["intent"]
    assert perfect.mean == 1.0 and perfect.high == 1.0 and perfect.low < 0.8
    assert perfect.degenerate
    zero = eval_figures([attempt(f"s{i}", 0, 0.0) for i in range(12)], owner)["intent"]
    assert zero.low == 0.0 and 0.0 < zero.high < 0.31  # 0 of 12, continuity-corrected


def test_an_unscored_attempt_counts_zero() -> None:
    owner = {"a": "code_quality", "b": "code_quality"}
    figures = eval_figures([attempt("a", 0, 1.0, "code_quality"), attempt("b", 0, None)], owner)
    assert figures["code_quality"].mean == 0.5 and figures["code_quality"].attempts == 2


def test_detectable_difference_shrinks_with_size_and_uses_the_worst_case_unmeasured() -> None:
    from evals.stats import WORST_SD, detectable_difference

    assert detectable_difference(12, WORST_SD) > 0.5  # issue 17: 12 scenarios settle nothing
    assert 0.15 < detectable_difference(110, WORST_SD) < 0.2
    assert detectable_difference(110, 0.0) == detectable_difference(110, WORST_SD)
    assert detectable_difference(110, 0.2) < detectable_difference(110, WORST_SD)
    assert detectable_difference(0, 0.3) == 1.0 and detectable_difference(2, 0.5) == 1.0
    owner = {f"s{i}": "intent" for i in range(40)}
    mixed = eval_figures([attempt(f"s{i}", 0, float(i % 2)) for i in range(40)], owner)["intent"]
    assert mixed.sd > 0.45 and mixed.detectable == detectable_difference(40, mixed.sd)


def test_the_report_shows_clustered_bounded_figures_and_the_detectable_difference() -> None:
    from rich.console import Console

    from cursorbench.report import detectable_table, scores_table

    results = [attempt(f"s{i}", e, 1.0) for i in range(12) for e in range(2)]
    results += [attempt("q", 0, 0.5, key="code_quality")]
    console = Console(width=200, record=True)
    for table in (scores_table(results), detectable_table(results)):
        assert table is not None
        console.print(table)
    text = console.export_text()
    low = eval_figures(results, {f"s{i}": "intent" for i in range(12)})["intent"].low
    assert f"[{low:.3f}, 1.000] (not measured)" in text  # 12 clusters, not 24 attempts
    assert "smallest detectable difference" in text and "intent" in text and "0.572" in text
