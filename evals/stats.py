"""Each eval's score with its interval, as the leaderboard shows stored runs
(`leaderboard.summaries`): clustered by scenario (the epochs of one scenario are one
cluster, not independent samples), a Wilson interval inside [0, 1], and never [1, 1] for
a run whose scenarios all scored the same (`degenerate`: the widest interval that many
scenarios allow). An attempt of an eval's scenario without that eval's score counts 0.
"""

from __future__ import annotations

from pydantic import BaseModel

from harness.results import AttemptResult
from leaderboard.stats import clustered_totals


class EvalFigures(BaseModel):
    eval: str
    mean: float
    low: float
    high: float
    scenarios: int
    attempts: int
    degenerate: bool  # every scenario's mean was the same: the interval is not measured


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
        figures[name] = EvalFigures(
            eval=name,
            mean=round(interval.estimate, 4),
            low=round(interval.low, 4),
            high=round(interval.high, 4),
            scenarios=interval.clusters,
            attempts=interval.n,
            degenerate=interval.degenerate,
        )
    return figures
