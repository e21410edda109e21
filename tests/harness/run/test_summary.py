"""summarize: run-level figures from attempt results."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness.results import AttemptResult, Failure, Status, Usage
from harness.run.summary import pass_at_k, summarize

WHEN = datetime(2025, 1, 1, tzinfo=UTC)


def attempt(
    task: str,
    epoch: int,
    failure: Failure | None,
    *,
    tokens: tuple[int, int] = (0, 0),
    cost: float = 0.0,
    turns: int = 0,
    wall: float = 0.0,
    truncated: int = 0,
) -> AttemptResult:
    return AttemptResult(
        task_id=task,
        epoch=epoch,
        status=Status.RESOLVED if failure is None else failure.status,
        failure=failure,
        usage=Usage(
            tokens_in=tokens[0], tokens_out=tokens[1], cost_usd=cost, truncated_replies=truncated
        ),
        turns=turns,
        wall_time_s=wall,
        started_at=WHEN,
        finished_at=WHEN,
    )


RESULTS = [
    attempt("b", 1, None, tokens=(100, 10), cost=0.1, turns=3, wall=1.25, truncated=1),
    attempt("a", 0, Failure.TESTS_FAILED, tokens=(200, 20), cost=0.2, turns=5, wall=2.5),
    attempt("b", 0, None, tokens=(300, 30), cost=0.3, turns=7, wall=3.125),
    attempt("a", 1, Failure.MODEL_API_ERROR, tokens=(0, 0), turns=0, wall=0.5),
    attempt(
        "c", 0, Failure.TURN_LIMIT, tokens=(400, 40), cost=4e-7, turns=50, wall=10, truncated=2
    ),
]


def test_summarize_values() -> None:
    summary = summarize(RESULTS, planned=5)
    assert summary.as_json() == {
        "planned": 5,
        "finished": 5,
        "complete": True,
        "attempts": 5,
        "resolved": 2,
        "failed": 2,
        "errors": 1,
        "resolved_rate": 0.4,
        "resolved_rate_planned": 0.4,
        "resolved_rate_judged": 0.5,
        "failures": {"tests_failed": 1, "model_api_error": 1, "turn_limit": 1},
        "tokens_in": 1000,
        "tokens_out": 100,
        "tokens_estimated": False,
        "estimated_calls": 0,
        "truncated_replies": 3,
        "cost_usd": pytest.approx(0.6000004),
        "cost_estimated": False,
        "turns": 65,
        "wall_time_s": 17.375,
        "attempt_time_s": 17.375,
        "pass_at_k": {"1": pytest.approx(1 / 3)},  # c has one attempt, so k stops at 1
        "per_task": {
            "a": {"attempts": 2, "resolved": 0, "errors": 1},
            "b": {"attempts": 2, "resolved": 2, "errors": 0},
            "c": {"attempts": 1, "resolved": 0, "errors": 0},
        },
    }
    assert list(summary.per_task) == ["a", "b", "c"]


def test_a_partial_run_says_so_and_rates_against_the_plan() -> None:
    done = [attempt("a", 0, None), attempt("a", 1, None), attempt("b", 0, None)]
    summary = summarize(done, planned=12)
    assert (summary.planned, summary.finished, summary.complete) == (12, 3, False)
    assert summary.resolved_rate == 1.0
    assert summary.resolved_rate_planned == 0.25


def test_estimated_tokens_are_flagged() -> None:
    guessed = attempt("a", 0, None, tokens=(40, 4))
    guessed.usage.estimated_calls = 2
    summary = summarize([guessed, attempt("b", 0, None)], planned=2)
    assert summary.tokens_estimated is True
    assert summary.estimated_calls == 2
    assert summary.cost_estimated is False  # no price: nothing was priced from the guess


def test_a_cost_priced_from_estimated_tokens_is_marked() -> None:
    guessed = attempt("a", 0, None, tokens=(40, 4), cost=0.01)
    guessed.usage.estimated_calls = 1
    assert guessed.usage.cost_estimated
    summary = summarize([guessed, attempt("b", 0, None, cost=0.02)], planned=2)
    assert summary.cost_estimated is True and summary.cost_usd == 0.03
    assert not summarize([attempt("b", 0, None, cost=0.02)], planned=1).cost_estimated


def test_summarize_nothing() -> None:
    summary = summarize([], planned=0)
    assert summary.attempts == 0
    assert summary.complete is True
    assert summary.resolved_rate_planned == 0.0
    assert summary.resolved_rate == 0.0
    assert summary.resolved_rate_judged == 0.0
    assert summary.failures == {}
    assert summary.per_task == {}


def test_summarize_only_errors() -> None:
    summary = summarize(
        [attempt("a", 0, Failure.INFRA_ERROR), attempt("a", 1, Failure.INFRA_ERROR)], planned=2
    )
    assert summary.errors == 2
    assert summary.failed == 0
    assert summary.resolved_rate == 0.0
    assert summary.resolved_rate_judged == 0.0
    assert summary.failures == {"infra_error": 2}


def test_cost_is_rounded_to_micro_dollars() -> None:
    summary = summarize(
        [attempt("a", 0, None, cost=0.1234566), attempt("a", 1, None, cost=0.0000001)], planned=2
    )
    assert summary.cost_usd == 0.123457


def test_every_failure_maps_to_one_status() -> None:
    errors = {failure for failure in Failure if failure.status is Status.ERROR}
    assert Failure.TOOL_CALL_LIMIT.status is Status.FAILED
    assert errors == {Failure.MODEL_API_ERROR, Failure.INFRA_ERROR}
    assert all(failure.status is Status.FAILED for failure in set(Failure) - errors)


def test_pass_at_k_matches_the_unbiased_estimator() -> None:
    assert pass_at_k(attempts=4, resolved=0, k=2) == 0.0
    assert pass_at_k(attempts=4, resolved=4, k=2) == 1.0
    assert pass_at_k(attempts=4, resolved=1, k=1) == pytest.approx(0.25)
    assert pass_at_k(attempts=4, resolved=1, k=2) == pytest.approx(1 - 3 / 6)  # C(3,2)/C(4,2)
    assert pass_at_k(attempts=3, resolved=2, k=2) == 1.0  # fewer failures than k


def test_pass_at_k_over_tasks_and_epochs() -> None:
    failed = Failure.TESTS_FAILED
    results = [
        attempt("a", 0, None),
        attempt("a", 1, failed),
        attempt("b", 0, failed),
        attempt("b", 1, failed),
    ]
    assert summarize(results, planned=4).pass_at_k == {
        "1": pytest.approx((0.5 + 0.0) / 2),
        "2": pytest.approx((1.0 + 0.0) / 2),
    }
    assert summarize([], planned=0).pass_at_k == {}


def test_scores_are_averaged_per_name_and_judged_ones_apart() -> None:
    from datetime import UTC, datetime

    from harness.results import AttemptResult, Score, Status
    from harness.run.summary import score_means, summarize

    now = datetime.now(UTC)

    def result(task: str, status: Status, **scores: Score) -> AttemptResult:
        return AttemptResult(
            task_id=task, epoch=0, status=status, started_at=now, finished_at=now, scores=scores
        )

    results = [
        result("a", Status.RESOLVED, intent=Score(value=1.0)),
        result("b", Status.FAILED, intent=Score(value=0.5, reasons=["x"])),
        result("c", Status.RESOLVED, intent=Score(value=0.0, judged=True)),
        result("d", Status.RESOLVED),
    ]
    assert {key: mean.model_dump() for key, mean in score_means(results).items()} == {
        "intent": {"mean": 0.75, "attempts": 2, "resolved": 1, "judged": False},
        "intent:judged": {"mean": 0.0, "attempts": 1, "resolved": 1, "judged": True},
    }
    assert summarize(results, 4).scores == score_means(results)
    assert "scores" not in summarize(results[3:], 1).as_json()
