"""Run-level figures from attempt results: pure functions, no I/O.

`summarize` gives a `RunSummary`, which summary.json and the result store keep as
JSON (`RunSummary.as_json`) and read back with `RunSummary.read` (older files lack
some figures; those take their defaults).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.results import AttemptResult, Status, in_order


class TaskTally(BaseModel):
    """One task's attempts in a run."""

    attempts: int = 0
    resolved: int = 0
    errors: int = 0


class ScoreMean(BaseModel):
    """One score key's mean over the attempts that carry it, and how many of those resolved."""

    mean: float
    attempts: int
    resolved: int
    judged: bool = False


class RunSummary(BaseModel):
    """A run's figures (summary.json). Identity fields are None where a summary is made
    from results alone (an imported folder)."""

    model_config = ConfigDict(extra="ignore")

    run_id: str | None = None
    model: str | None = None
    endpoint: str | None = None
    sandbox: str | None = None
    confined: bool | None = None  # None: a summary made from results alone
    planned: int = 0
    finished: int = 0
    complete: bool = True
    attempts: int
    resolved: int
    failed: int = 0
    errors: int = 0
    resolved_rate: float
    resolved_rate_planned: float = 0.0
    resolved_rate_judged: float = 0.0
    failures: dict[str, int] = {}
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_estimated: bool = False  # some model call's endpoint reported no usage
    estimated_calls: int = 0
    truncated_replies: int = 0
    cost_usd: float = 0.0
    cost_estimated: bool = False  # part of `cost_usd` was priced from estimated tokens
    turns: int = 0
    wall_time_s: float = 0.0
    attempt_time_s: float | None = None  # None: an older summary, whose wall time was this
    pass_at_k: dict[str, float] = {}
    per_task: dict[str, TaskTally] = {}
    scores: dict[str, ScoreMean] | None = None  # behaviour checks' means, when any ran
    interrupted: bool | None = None  # True: written as the run was interrupted

    def as_json(self) -> dict[str, Any]:
        """The JSON that summary.json and the store keep (unset optional figures left out)."""
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def read(cls, data: object) -> RunSummary | None:
        """A stored summary, or None when it is not one (missing, or unreadable)."""
        try:
            return cls.model_validate(data)
        except ValidationError:
            return None

    def with_identity(
        self, run_id: str, model: str, endpoint: str, sandbox: str, confined: bool | None = None
    ) -> RunSummary:
        identity = {"run_id": run_id, "model": model, "endpoint": endpoint, "sandbox": sandbox}
        return self.model_copy(update=identity | {"confined": confined})


def summarize(
    results: list[AttemptResult], planned: int, wall_time_s: float | None = None
) -> RunSummary:
    """Figures over the finished attempts of a run made of `planned` attempts.

    With behaviour checks (evals), `scores` has each one's mean by name (`score_means`).

    A run with fewer finished than planned is partial (`complete` false). `resolved_rate`
    is over the finished attempts, errors counted as unresolved; `resolved_rate_planned`
    is over the planned ones; `resolved_rate_judged` leaves errored attempts out.
    `wall_time_s` is the run's wall time when known (else the attempts' sum, as
    `attempt_time_s` always is: attempts overlap, so it is usually longer).
    """
    attempt_time = round(sum(result.wall_time_s for result in results), 3)
    finished = len(results)
    resolved = sum(result.resolved for result in results)
    errors = sum(result.status is Status.ERROR for result in results)
    judged = finished - errors
    estimated = sum(result.usage.estimated_calls for result in results)
    scores = score_means(results)
    return RunSummary(
        planned=planned,
        finished=finished,
        complete=finished >= planned,
        attempts=finished,
        resolved=resolved,
        failed=sum(result.status is Status.FAILED for result in results),
        errors=errors,
        resolved_rate=resolved / finished if finished else 0.0,
        resolved_rate_planned=resolved / planned if planned else 0.0,
        resolved_rate_judged=resolved / judged if judged else 0.0,
        failures=dict(Counter(r.failure.value for r in results if r.failure is not None)),
        tokens_in=sum(result.usage.tokens_in for result in results),
        tokens_out=sum(result.usage.tokens_out for result in results),
        tokens_estimated=estimated > 0,
        estimated_calls=estimated,
        truncated_replies=sum(result.usage.truncated_replies for result in results),
        cost_usd=round(sum(result.usage.cost_usd for result in results), 6),
        cost_estimated=any(result.usage.cost_estimated for result in results),
        turns=sum(result.turns for result in results),
        wall_time_s=attempt_time if wall_time_s is None else round(wall_time_s, 3),
        attempt_time_s=attempt_time,
        pass_at_k=pass_at(results),
        per_task=_per_task(results),
        scores=scores or None,
    )


def score_key(key: str, judged: bool) -> str:
    """Judged scores are reported under their own name, never averaged with programmatic ones."""
    return f"{key}:judged" if judged else key


def score_means(results: list[AttemptResult]) -> dict[str, ScoreMean]:
    """Per score key (e.g. an eval's name): the mean over the attempts that carry it, how
    many do, and how many of those resolved their task (correctness, next to the score)."""
    groups: dict[str, list[tuple[float, bool]]] = {}
    for result in results:
        for key, score in result.scores.items():
            groups.setdefault(score_key(key, score.judged), []).append(
                (score.value, result.resolved)
            )
    return {
        key: ScoreMean(
            mean=round(sum(value for value, _ in pairs) / len(pairs), 4),
            attempts=len(pairs),
            resolved=sum(resolved for _, resolved in pairs),
            judged=key.endswith(":judged"),
        )
        for key, pairs in sorted(groups.items())
    }


def pass_at_k(attempts: int, resolved: int, k: int) -> float:
    """Unbiased pass@k of one task from `attempts` samples, `resolved` of them good."""
    if attempts - resolved < k:
        return 1.0
    return 1.0 - math.comb(attempts - resolved, k) / math.comb(attempts, k)


def pass_at(results: list[AttemptResult]) -> dict[str, float]:
    """Mean pass@k over tasks, for k = 1 and k = the fewest attempts any task has."""
    counts: dict[str, list[int]] = {}
    for result in results:
        tally = counts.setdefault(result.task_id, [0, 0])
        tally[0] += 1
        tally[1] += result.resolved
    if not counts:
        return {}
    most = min(attempts for attempts, _ in counts.values())
    return {
        str(k): sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts)
        for k in sorted({1, most})
    }


def _per_task(results: list[AttemptResult]) -> dict[str, TaskTally]:
    table: dict[str, TaskTally] = {}
    for result in in_order(results):
        row = table.setdefault(result.task_id, TaskTally())
        row.attempts += 1
        row.resolved += result.resolved
        row.errors += result.status is Status.ERROR
    return table
