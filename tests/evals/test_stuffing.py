"""Intent stuffing (issue 37 c): a reply naming every identifier and number of the code
scores 0 on every intent scenario, however right the facts buried in it; the well-behaved
reference agent's replies are specific and keep their full score.

The fast tests grade each scenario's own check on the stuffed reply; the slow one serves
the stuffer (`evals.agents.StufferAgent`, a scripted double, not a model) over real HTTP
and runs every intent scenario through the real runner, as `cursorbench run --evals
intent --base-url` does, beside the reference agent on the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evals.agents import ScenarioAgent, StufferAgent, Stuffing, stuffed_reply
from evals.catalogue import load_scenarios
from evals.graders.intent import IntentParams, stuffed, stuffing_limit
from evals.scenario import Scenario, checks, prepare
from harness.grading.scoring import FinalState, run_check
from harness.run.runner import RunOutcome

CURATED = load_scenarios(["intent"], split="curated")
STUFFINGS: tuple[Stuffing, ...] = ("codebase", "focus", "values")


def _records(prompt: str, message: str) -> list[dict[str, Any]]:
    return [
        {"type": "message", "role": "user", "content": prompt},
        {"type": "message", "role": "user", "content": "the answer", "injected": True},
        {"type": "agent_end", "failure": None, "message": message},
    ]


def _final(scenario: Scenario) -> str:
    return next(s.say or s.finish or "" for s in reversed(scenario.well) if s.say or s.finish)


def test_the_stuffing_limit_is_small_and_never_below_three() -> None:
    assert [stuffing_limit(n) for n in (0, 2, 12, 13, 20, 32, 300)] == [3, 3, 3, 4, 5, 8, 8]


def test_a_reply_naming_many_of_the_codes_names_is_stuffed_even_with_the_right_fact() -> None:
    params = IntentParams(
        expect="answer",
        mentions=["TAX_RATE", "0.2"],
        candidates=["taxrate", "pricewithtax", "applydiscount", "formatprice", "cents", "100"],
    )
    prompt = "What tax rate does price_with_tax use when I do not pass one?"
    right = "It uses TAX_RATE, 0.2, defined at the top of shelf/pricing.py."
    assert stuffed(prompt, right, params) is None
    # the request's own names and the required facts are never counted
    assert stuffed(prompt, right + " price_with_tax reads TAX_RATE.", params) is None
    padded = right + " See also apply_discount, format_price, cents and 100."
    score = stuffed(prompt, padded, params)
    assert score is not None and score.value == 0.0 and "stuffed" in score.reasons[0]


@pytest.mark.parametrize("scenario", CURATED, ids=[s.id for s in CURATED])
def test_every_stuffed_reply_scores_zero_and_the_reference_reply_is_not_stuffed(
    scenario: Scenario, tmp_path: Path
) -> None:
    task, _ = prepare(scenario, tmp_path)
    (check,) = checks(scenario)
    assert check.params["candidates"], "a scenario without candidates cannot see stuffing"
    nothing = FinalState(patch="", resolved=False if scenario.tests else None)
    for what in STUFFINGS:
        reply = stuffed_reply(scenario, what)
        score = run_check(task, check, nothing, _records(scenario.prompt, reply))
        assert score is not None and score.value == 0.0, (what, score)
    params = IntentParams.model_validate(check.params)
    assert stuffed(scenario.prompt, _final(scenario), params) is None


def test_the_generated_reference_replies_are_not_stuffed() -> None:
    for scenario in load_scenarios(["intent"], split="generated"):
        (check,) = checks(scenario)
        params = IntentParams.model_validate(check.params)
        assert stuffed(scenario.prompt, _final(scenario), params) is None, scenario.id
        assert stuffed(scenario.prompt, stuffed_reply(scenario, "focus"), params), scenario.id


# Through the runner, every curated scenario and a sample of the generated ones (the first
# `SAMPLE` for the seed, interleaved over kinds); every scenario's own check is covered
# offline above, so the run proves the path, not each scenario again.
SAMPLE = 12


@pytest.mark.slow
def test_the_stuffer_scores_zero_on_intent_scenarios_through_the_runner(
    serve: Callable[[Any], str], run_benchmark: Callable[..., RunOutcome], tmp_path: Path
) -> None:
    scenarios = load_scenarios(["intent"], split="all", sample=SAMPLE)
    assert len(scenarios) == len(CURATED) + SAMPLE
    ids = sorted(s.id for s in scenarios)
    agents = {what: StufferAgent(scenarios, what) for what in STUFFINGS}
    for what, agent in agents.items():
        outcome = run_benchmark(
            base_url=serve(agent), model=agent.models[0], evals=["intent"], eval_split="all",
            eval_sample=SAMPLE, out=tmp_path / what, concurrency=4,
        )  # fmt: skip
        assert sorted(r.task_id for r in outcome.results) == ids
        scores = {r.task_id: r.scores["intent"].value for r in outcome.results}
        assert not {k: v for k, v in scores.items() if v > 0}, what
        assert not [r.task_id for r in outcome.results if r.resolved], what
    reference = ScenarioAgent(scenarios, "well")
    outcome = run_benchmark(
        base_url=serve(reference), model=reference.models[0], evals=["intent"],
        eval_split="all", eval_sample=SAMPLE, out=tmp_path / "reference", concurrency=4,
    )  # fmt: skip
    scores = {r.task_id: r.scores["intent"].value for r in outcome.results}
    assert sorted(scores) == ids
    assert all(v == 1.0 for v in scores.values()), {k: v for k, v in scores.items() if v < 1}
    assert all(r.resolved for r in outcome.results)
