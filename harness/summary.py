"""Run-level figures from attempt results: pure functions, no I/O."""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness.results import AttemptResult, Status


def summarize(results: list[AttemptResult]) -> dict[str, Any]:
    """`resolved_rate` counts errored attempts as unresolved; the `_judged` rate leaves them out."""
    attempts = len(results)
    resolved = sum(result.resolved for result in results)
    errors = sum(result.status is Status.ERROR for result in results)
    judged = attempts - errors
    return {
        "attempts": attempts,
        "resolved": resolved,
        "failed": sum(result.status is Status.FAILED for result in results),
        "errors": errors,
        "resolved_rate": resolved / attempts if attempts else 0.0,
        "resolved_rate_judged": resolved / judged if judged else 0.0,
        "failures": dict(Counter(r.failure.value for r in results if r.failure is not None)),
        "tokens_in": sum(result.usage.tokens_in for result in results),
        "tokens_out": sum(result.usage.tokens_out for result in results),
        "cost_usd": round(sum(result.usage.cost_usd for result in results), 6),
        "turns": sum(result.turns for result in results),
        "wall_time_s": round(sum(result.wall_time_s for result in results), 3),
        "per_task": _per_task(results),
    }


def _per_task(results: list[AttemptResult]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for result in sorted(results, key=lambda r: (r.task_id, r.epoch)):
        row = table.setdefault(result.task_id, {"attempts": 0, "resolved": 0, "errors": 0})
        row["attempts"] += 1
        row["resolved"] += result.resolved
        row["errors"] += result.status is Status.ERROR
    return table
