"""Fast companion of test_baselines.py (which runs the real runner): every scenario's own
grader, on what the null, the always-edit and the breaking agents leave, gives a score,
and it is 0."""

from __future__ import annotations

import pytest

from evals.catalogue import load_scenarios
from evals.scenario import Scenario, checks, codebase_files, prepare
from harness.grading.scoring import FinalState, run_check

SCENARIOS = load_scenarios(split="curated")


def _records(message: str) -> list[dict]:
    return [
        {"type": "message", "role": "user", "content": "the prompt"},
        {"type": "message", "role": "user", "content": "the interruption", "injected": True},
        {"type": "agent_end", "failure": None, "message": message},
    ]


def _broken(scenario: Scenario) -> FinalState:
    files = codebase_files(scenario)
    code = [p for p in files if p.endswith(".py") and not p.startswith("tests/")]
    return FinalState(
        patch="x",
        before={p: files[p] for p in code},
        after={p: files[p] + "\ndef (:\n" for p in code},
        resolved=False if scenario.tests else None,
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_baseline_attempts_score_zero(scenario: Scenario, tmp_path) -> None:
    task, _ = prepare(scenario, tmp_path)
    (check,) = checks(scenario)
    failed = False if scenario.tests else None  # their hidden tests cannot pass
    null = FinalState(patch="", resolved=failed)
    notes = FinalState(
        patch="x", before={"NOTES.md": None}, after={"NOTES.md": "x\n"}, resolved=failed
    )
    for state in (null, notes, _broken(scenario)):
        for message in ("done", ""):
            score = run_check(task, check, state, _records(message))
            assert score is not None and score.value == 0.0, (scenario.id, score)
