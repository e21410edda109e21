"""A small deterministic sample of the generated split (two scenarios per eval, spread
over its kinds) through the real runner over HTTP: the well-behaved reference agent scores
>= 0.9 on every eval with every attempt resolved, and the null, always-edit and
code-breaking baselines score <= 0.05 with none resolved. The whole split was verified
once the same way (benchmarks/RESULTS.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evals import EVALS
from evals.agents import ScenarioAgent
from evals.baselines import BASELINES, FLOOR
from evals.catalogue import load_scenarios
from harness.run.runner import RunOutcome

SAMPLE = 2
SELECT = {"eval_split": "generated", "eval_sample": SAMPLE}


def means(outcome: RunOutcome) -> dict[str, float]:
    owner = {s.id: s.eval for s in load_scenarios(split="generated", sample=SAMPLE)}
    assert sorted(r.task_id for r in outcome.results) == sorted(owner)
    found = {}
    for name in EVALS:
        mine = [r for r in outcome.results if owner[r.task_id] == name]
        assert len(mine) == SAMPLE and all(name in r.scores for r in mine), name
        found[name] = sum(r.scores[name].value for r in mine) / len(mine)
    return found


def test_the_reference_agent_solves_the_sample(
    serve: Callable[[Any], str], run_benchmark: Callable[..., RunOutcome]
) -> None:
    agent = ScenarioAgent(load_scenarios(split="generated", sample=SAMPLE), "well")
    outcome = run_benchmark(
        base_url=serve(agent), model=agent.models[0], evals=["all"], concurrency=4, **SELECT
    )
    assert all(mean >= 0.9 for mean in means(outcome).values()), means(outcome)
    assert all(r.resolved for r in outcome.results), [
        (r.task_id, r.failure) for r in outcome.results if not r.resolved
    ]


@pytest.mark.parametrize("baseline", sorted(BASELINES))
def test_baselines_score_zero_on_the_sample(
    baseline: str, serve: Callable[[Any], str], run_benchmark: Callable[..., RunOutcome]
) -> None:
    agent = BASELINES[baseline]()
    outcome = run_benchmark(
        base_url=serve(agent), model=agent.models[0], evals=["all"], concurrency=4, **SELECT
    )
    assert all(mean <= FLOOR for mean in means(outcome).values()), means(outcome)
    assert not [r.task_id for r in outcome.results if r.resolved]
