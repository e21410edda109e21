"""Baselines every behaviour eval must score about 0 on (issue 17): the null agent (finishes
at once), the always-edit agent (one irrelevant edit, chosen at random) and the agent that
breaks the code. Each is a scripted double (`harness.model.doubles`) served over real HTTP and
run through the real runner, as `cursorbench run --base-url` would; `floor_figures` reads a
baseline's figures per eval from its run's results, and a baseline whose mean on an eval is
over `FLOOR`, or with any attempt resolved, fails.

The runs are made above the evals, by `cursorbench.calibration.baselines`
(`python -m cursorbench.calibration.baselines`).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from evals.stats import eval_figures
from harness.model.doubles import BreakingDouble, FinishAtOnceDouble, IrrelevantEditDouble
from harness.model.openai_server import Responder
from harness.results import AttemptResult

FLOOR = 0.05  # a baseline's mean score on any eval must not be above this
BASELINES: dict[str, Callable[[], Responder]] = {
    "null": FinishAtOnceDouble,
    "always-edit": IrrelevantEditDouble,
    "breaks-code": BreakingDouble,
}


class Floor(BaseModel):
    """One baseline's figures on one eval."""

    baseline: str
    eval: str
    mean: float
    low: float  # the interval clustered by scenario (evals.stats)
    high: float
    attempts: int
    scored: int  # attempts that got a score (an unscored one counts 0 in `mean`)
    resolved: int

    @property
    def ok(self) -> bool:
        return self.mean <= FLOOR and self.resolved == 0 and self.scored == self.attempts


def floor_figures(
    baseline: str, evals: list[str], results: list[AttemptResult], owner: dict[str, str]
) -> list[Floor]:
    """One baseline's figures per eval, from its run's results (`owner`: each scenario's
    eval)."""
    figures = eval_figures(results, owner)
    found = []
    for name in evals:
        mine = [result for result in results if owner.get(result.task_id) == name]
        values = [result.scores[name].value for result in mine if name in result.scores]
        found.append(
            Floor(
                baseline=baseline,
                eval=name,
                mean=round(sum(values) / len(mine), 4) if mine else 0.0,
                low=figures[name].low if name in figures else 0.0,
                high=figures[name].high if name in figures else 1.0,
                attempts=len(mine),
                scored=len(values),
                resolved=sum(result.resolved for result in mine),
            )
        )
    return found


def table(floors: list[Floor]) -> str:
    rows = [
        f"{'baseline':<12} {'eval':<22} {'mean':>6} {'95% interval':>15} "
        f"{'scored':>7} {'resolved':>9}"
    ]
    for floor in floors:
        mark = "" if floor.ok else "  <- above the floor"
        rows.append(
            f"{floor.baseline:<12} {floor.eval:<22} {floor.mean:>6.3f} "
            f"  [{floor.low:.3f}, {floor.high:.3f}] "
            f"{floor.scored:>3}/{floor.attempts:<3} {floor.resolved:>5}/{floor.attempts:<3}{mark}"
        )
    return "\n".join(rows)
