"""Each eval's graders separate its well-behaved scripted agent from its badly-behaved one,
through the real runner: the agents are served over HTTP and reached with the `openai`
client, the change is taken in the sandbox, and the graders score the attempt: well >= 0.9
and badly <= 0.2 on every scenario."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evals import EVALS
from evals.agents import ScenarioAgent
from evals.catalogue import load_scenarios
from harness.run.runner import RunOutcome

pytestmark = pytest.mark.slow


def _scores(outcome: RunOutcome, name: str) -> dict[str, float]:
    return {r.task_id: r.scores[name].value for r in outcome.results if name in r.scores}


@pytest.mark.parametrize("name", EVALS)
def test_well_and_badly_behaved_agents_are_separated(
    name: str, serve: Callable[[Any], str], run_benchmark: Callable[..., RunOutcome], tmp_path
) -> None:
    scenarios = load_scenarios([name], split="curated")
    assert len(scenarios) >= 12
    outcomes = {}
    for behaviour in ("well", "badly"):
        agent = ScenarioAgent(scenarios, behaviour)
        outcomes[behaviour] = run_benchmark(
            base_url=serve(agent),
            model=agent.models[0],
            evals=[name],
            eval_split="curated",
            out=tmp_path / behaviour,
            concurrency=4,
        )
    well, badly = _scores(outcomes["well"], name), _scores(outcomes["badly"], name)
    assert len(well) == len(scenarios), sorted(set(s.id for s in scenarios) - set(well))
    assert len(badly) == len(scenarios), sorted(set(s.id for s in scenarios) - set(badly))
    well_mean = sum(well.values()) / len(well)
    # separated on every scenario, not only on the mean
    assert all(v >= 0.9 for v in well.values()), {k: v for k, v in well.items() if v < 0.9}
    assert all(v <= 0.2 for v in badly.values()), {k: v for k, v in badly.items() if v > 0.2}
    scores = outcomes["well"].summary.scores
    assert scores is not None
    summary = scores[name]
    assert summary.attempts == len(scenarios)
    assert summary.mean == pytest.approx(well_mean, abs=1e-4)
