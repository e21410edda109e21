"""Each eval's score with its interval, as the leaderboard shows stored runs
(`leaderboard.summaries`): clustered by scenario (the epochs of one scenario are one
cluster, not independent samples; each scenario's epochs are averaged first, and the
effective sample size is at most the scenarios), a continuity-corrected Wilson interval
inside [0, 1], and never [1, 1] for a run whose scenarios all scored the same (`degenerate`:
the widest interval that many scenarios allow). An attempt of an eval's scenario without
that eval's score counts 0.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from harness.results import AttemptResult
from leaderboard.stats import clustered_totals, z_for

WORST_SD = 0.5  # the largest spread scores in [0, 1] can have


class EvalFigures(BaseModel):
    eval: str
    mean: float
    low: float
    high: float
    scenarios: int
    attempts: int
    degenerate: bool  # every scenario's mean was the same: the interval is not measured
    sd: float  # the spread of the scenarios' means
    detectable: float  # the smallest difference two runs of this size detect (see below)


def eval_figures(
    results: list[AttemptResult], owner: dict[str, str], level: float = 0.95
) -> dict[str, EvalFigures]:
    """Per eval (`owner` maps a scenario id to its eval): mean and interval over scenarios."""
    cells: dict[str, dict[str, list[float]]] = {}
    for result in results:
        name = owner.get(result.task_id)
        if name is None:
            continue
        score = result.scores.get(name)
        cells.setdefault(name, {}).setdefault(result.task_id, []).append(
            score.value if score is not None else 0.0
        )
    figures = {}
    for name, by_scenario in sorted(cells.items()):
        values = list(by_scenario.values())
        interval = clustered_totals([sum(v) for v in values], [len(v) for v in values], level)
        sd = _sd([sum(v) / len(v) for v in values])
        figures[name] = EvalFigures(
            eval=name,
            mean=round(interval.estimate, 4),
            low=round(interval.low, 4),
            high=round(interval.high, 4),
            scenarios=interval.clusters,
            attempts=interval.n,
            degenerate=interval.degenerate,
            sd=round(sd, 4),
            detectable=detectable_difference(interval.clusters, sd, level),
        )
    return figures


def _sd(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def detectable_difference(
    scenarios: int, sd: float, level: float = 0.95, power: float = 0.8
) -> float:
    """The smallest difference in mean score between two runs over `scenarios` scenarios
    each that a two-sided test at `level` detects with `power`: (z_a + z_b) * sd *
    sqrt(2 / n), with sd the scenarios' spread, never under 0.1 of the worst case (a run
    whose scenarios all scored alike has not measured its spread: the worst case, 0.5, is
    used then). Capped at 1."""
    if scenarios == 0:
        return 1.0
    spread = sd if sd > 0 else WORST_SD
    spread = max(spread, 0.1 * WORST_SD)
    z = z_for(level) + z_for(2 * power - 1)
    return round(min(1.0, z * spread * math.sqrt(2 / scenarios)), 4)
