"""Baselines that must score zero (issue 17): the null agent, the always-edit agent and the
agent that breaks the code, each a scripted double served over real HTTP and run through
the real runner over every eval's scenarios: mean <= 0.05 on every eval, every attempt
scored, none resolved. The well-behaved reference agent, on the same path, stays >= 0.9
(tests/evals/test_separation.py). The figures are read from a run's results
(`floor_figures`); `python -m cursorbench.calibration.baselines` makes the runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from evals import EVALS
from evals.baselines import BASELINES, FLOOR, floor_figures, table
from evals.catalogue import load_scenarios
from harness.results import AttemptResult, Score, Status
from harness.run.runner import RunOutcome

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.slow
@pytest.mark.parametrize("baseline", sorted(BASELINES))
def test_baseline_scores_zero_on_every_eval(
    baseline: str, serve: Callable[[Any], str], run_benchmark: Callable[..., RunOutcome]
) -> None:
    agent = BASELINES[baseline]()
    outcome = run_benchmark(
        base_url=serve(agent),
        model=agent.models[0],
        evals=list(EVALS),
        concurrency=4,
        eval_split="curated",
    )
    owner = {scenario.id: scenario.eval for scenario in load_scenarios(split="curated")}
    assert len(outcome.results) == len(owner)
    assert not [r.task_id for r in outcome.results if r.resolved], "a baseline resolved"
    for name in EVALS:
        mine = [r for r in outcome.results if owner[r.task_id] == name]
        unscored = [r.task_id for r in mine if name not in r.scores]
        assert not unscored, (name, unscored)  # an attempt without a score is a hole
        mean = sum(r.scores[name].value for r in mine) / len(mine)
        assert mean <= FLOOR, (name, {r.task_id: r.scores[name] for r in mine})
    if baseline != "null":  # the double really changed something: not a null run in disguise
        assert all(r.diff_lines_added > 0 for r in outcome.results), baseline


def _attempt(task: str, value: float | None, resolved: bool = False) -> AttemptResult:
    return AttemptResult(
        task_id=task,
        epoch=0,
        status=Status.RESOLVED if resolved else Status.FAILED,
        scores={} if value is None else {"intent": Score(value=value)},
        started_at=T0,
        finished_at=T0,
    )


def test_a_baselines_figures_are_read_from_its_results() -> None:
    owner = {f"s{i}": "intent" for i in range(4)}
    quiet = floor_figures("null", ["intent"], [_attempt(f"s{i}", 0.0) for i in range(4)], owner)
    assert [(f.mean, f.attempts, f.scored, f.resolved, f.ok) for f in quiet] == [
        (0.0, 4, 4, 0, True)
    ]
    assert 0.0 <= quiet[0].low <= quiet[0].high <= 1.0
    loud = [_attempt("s0", 1.0, resolved=True), _attempt("s1", None)]
    loud += [_attempt("s2", 0.0), _attempt("s3", 0.0)]
    [floor] = floor_figures("always-edit", ["intent"], loud, owner)
    assert floor.mean == 0.25 and floor.scored == 3 and floor.resolved == 1 and not floor.ok
    assert "<- above the floor" in table([floor]) and "<- above" not in table(quiet)
