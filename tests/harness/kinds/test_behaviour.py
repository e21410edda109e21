"""The behaviour kind's verdict: every check scored at or above its threshold."""

from __future__ import annotations

from harness.kinds.behaviour import BehaviourCheck, BehaviourVerification, low_scores
from harness.results import Score

CHECKS = BehaviourVerification(
    checks=[BehaviourCheck(grader="intent"), BehaviourCheck(grader="code_quality", threshold=0.5)]
)


def test_every_check_at_its_threshold_resolves() -> None:
    scores = {"intent": Score(value=1.0), "code_quality": Score(value=0.5)}
    assert low_scores(CHECKS, scores) == []


def test_a_low_score_and_a_missing_one_each_fail() -> None:
    assert low_scores(CHECKS, {"intent": Score(value=1.0), "code_quality": Score(value=0.4)}) == [
        "code_quality 0.40 < 0.5"
    ]
    # nothing measured is never resolved: a grader that gave no score fails its check
    assert low_scores(CHECKS, {"intent": Score(value=1.0)}) == ["code_quality not scored"]
    assert len(low_scores(CHECKS, {})) == 2
