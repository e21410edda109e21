"""Baselines that must score zero (issue 17): the null agent, the always-edit agent and the
agent that breaks the code, each a scripted double served over real HTTP and run through
the real runner over every eval's scenarios: mean <= 0.05 on every eval, every attempt
scored, none resolved. The well-behaved reference agent, on the same path, stays >= 0.9
(tests/evals/test_separation.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evals import EVALS
from evals.baselines import BASELINES, FLOOR
from evals.scenario import load_scenarios
from harness.run.runner import RunOutcome

pytestmark = pytest.mark.slow


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
