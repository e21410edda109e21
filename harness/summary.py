"""Run-level figures from attempt results: pure functions, no I/O."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from harness.results import AttemptResult, Status, in_order


def summarize(
    results: list[AttemptResult], planned: int, wall_time_s: float | None = None
) -> dict[str, Any]:
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
    return {
        "planned": planned,
        "finished": finished,
        "complete": finished >= planned,
        "attempts": finished,
        "resolved": resolved,
        "failed": sum(result.status is Status.FAILED for result in results),
        "errors": errors,
        "resolved_rate": resolved / finished if finished else 0.0,
        "resolved_rate_planned": resolved / planned if planned else 0.0,
        "resolved_rate_judged": resolved / judged if judged else 0.0,
        "failures": dict(Counter(r.failure.value for r in results if r.failure is not None)),
        "tokens_in": sum(result.usage.tokens_in for result in results),
        "tokens_out": sum(result.usage.tokens_out for result in results),
        "tokens_estimated": estimated > 0,
        "estimated_calls": estimated,
        "truncated_replies": sum(result.usage.truncated_replies for result in results),
        "cost_usd": round(sum(result.usage.cost_usd for result in results), 6),
        "turns": sum(result.turns for result in results),
        "wall_time_s": attempt_time if wall_time_s is None else round(wall_time_s, 3),
        "attempt_time_s": attempt_time,
        "pass_at_k": pass_at(results),
        "per_task": _per_task(results),
    } | ({"scores": scores} if scores else {})


def score_key(key: str, judged: bool) -> str:
    """Judged scores are reported under their own name, never averaged with programmatic ones."""
    return f"{key}:judged" if judged else key


def score_means(results: list[AttemptResult]) -> dict[str, dict[str, Any]]:
    """Per score key (e.g. an eval's name): the mean over the attempts that carry it, how
    many do, and how many of those resolved their task (correctness, next to the score)."""
    groups: dict[str, list[tuple[float, bool]]] = {}
    for result in results:
        for key, score in result.scores.items():
            groups.setdefault(score_key(key, score.judged), []).append(
                (score.value, result.resolved)
            )
    return {
        key: {
            "mean": round(sum(value for value, _ in pairs) / len(pairs), 4),
            "attempts": len(pairs),
            "resolved": sum(resolved for _, resolved in pairs),
            "judged": key.endswith(":judged"),
        }
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


def _per_task(results: list[AttemptResult]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for result in in_order(results):
        row = table.setdefault(result.task_id, {"attempts": 0, "resolved": 0, "errors": 0})
        row["attempts"] += 1
        row["resolved"] += result.resolved
        row["errors"] += result.status is Status.ERROR
    return table
