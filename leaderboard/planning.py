"""`cursorbench gate plan`: how many tasks x epochs a gate decision at a margin needs.

From a baseline run's per-task figures (`stats.task_variance`: each task's epoch-to-epoch
noise, and how much tasks differ in difficulty) and, when a second run is given, how much
the two runs' true per-task rates disagree beyond that noise (`stats.disagreement`; its
paired correlation is shown), `plan` gives, for 1 to 5 epochs, the standard deviation of a
task's (baseline - candidate) and the tasks a candidate as good as its baseline needs to
pass `stats.non_inferiority` at the margin with the stated power (`stats.tasks_needed`),
and the smallest margin the baseline's own number of tasks decides.

Without a second run the candidate is assumed as good as the baseline on every task (the
pair differs by epoch noise only); with one epoch per task the noise cannot be told from
difficulty and is taken at its largest. Both assumptions are stated in the output.

Not covered here: the rule itself (`leaderboard.gate`), the arithmetic (`leaderboard.stats`).
"""

from __future__ import annotations

import math

from pydantic import BaseModel
from sqlalchemy import Connection, select

from leaderboard import stats
from leaderboard.schema import AttemptRow

EPOCHS = (1, 2, 3, 4, 5)


class PlanRow(BaseModel):
    epochs: int
    sd: float  # of one task's (baseline - candidate) at these epochs
    tasks: int | None  # tasks needed; None: no number of tasks decides
    smallest_margin: float  # what the baseline's number of tasks decides at these epochs


class Plan(BaseModel):
    baseline: str
    candidate: str | None
    tasks: int  # the baseline's tasks
    epochs: float  # the baseline's attempts per task, on average
    rate: float
    within: float  # epoch noise: the mean over tasks of p(1 - p)
    within_upper: float  # its one-sided 90% upper bound, which the plan uses
    between: float  # task difficulty: the variance of the tasks' rates
    disagreement: float  # variance of the true per-task differences (0 when assumed equal)
    correlation: float | None  # of the two runs' per-task rates, when a candidate is given
    assumptions: list[str]
    margin: float
    alpha: float
    power: float
    rows: list[PlanRow]
    fewest_tasks: int | None  # at any number of epochs

    def to_text(self) -> str:
        lines = [
            f"Gate plan: margin {self.margin:.3f}, alpha {self.alpha:.3f} (one-sided), "
            f"power {self.power:.2f}",
            f"Baseline {self.baseline}: {self.tasks} tasks x {self.epochs:.3g} epochs, resolved "
            f"{self.rate:.1%}; epoch noise p(1-p) {self.within:.4f} (planned at its 90% upper "
            f"bound {self.within_upper:.4f}), task difficulty variance {self.between:.4f}",
        ]
        if self.candidate is not None:
            shown = "n/a" if self.correlation is None else f"{self.correlation:.3f}"
            lines.append(
                f"Paired with {self.candidate}: correlation of per-task rates {shown}, "
                f"disagreement beyond epoch noise (variance) {self.disagreement:.4f}"
            )
        lines += [f"Assumed: {text}" for text in self.assumptions]
        lines += [
            "",
            f"| epochs | sd of a task's difference | tasks needed | smallest margin at "
            f"{self.tasks} tasks |",
            "|---|---|---|---|",
        ]
        for row in self.rows:
            tasks = "never" if row.tasks is None else str(row.tasks)
            lines.append(f"| {row.epochs} | {row.sd:.3f} | {tasks} | {row.smallest_margin:.3f} |")
        if self.fewest_tasks is not None:
            lines += [
                "",
                f"No number of epochs decides a {self.margin:.3f} margin on fewer than "
                f"{self.fewest_tasks} tasks ("
                + (
                    "the pair's per-task disagreement, which epochs do not average away, and "
                    if self.disagreement > 0
                    else ""
                )
                + "a regression of a few tasks lost outright, which fewer tasks do not show).",
            ]
        return "\n".join(lines) + "\n"


def plan(
    conn: Connection,
    baseline: str,
    margin: float,
    alpha: float = 0.025,
    power: float = 0.8,
    candidate: str | None = None,
) -> Plan:
    """The plan for gating against `baseline` at `margin` (see the module's docstring)."""
    if not 0 < margin < 1:
        raise ValueError(f"margin must be between 0 and 1, not {margin}")
    if not 0 < alpha < 0.5 or not 0 < power < 1:
        raise ValueError(f"need 0 < alpha < 0.5 and 0 < power < 1, got {alpha} and {power}")
    outcomes = _outcomes(conn, [baseline] + ([candidate] if candidate else []))
    mine = outcomes[baseline]
    if not mine:
        raise ValueError(f"run {baseline!r} has no attempts to plan from")
    resolved, attempts = _per_task(mine, None)
    variance = stats.task_variance(resolved, attempts)
    assumptions = []
    if variance.within_assumed:
        assumptions.append(
            "one epoch per task: epoch noise cannot be told from difficulty, so it is taken "
            "at its largest, rate (1 - rate); a baseline of 2+ epochs measures it"
        )
    disagree, correlation = 0.0, None
    if candidate is None:
        assumptions.append(
            "no --candidate: a candidate as good as the baseline on every task (the pair "
            "differs by epoch noise only); give a second run to measure how they disagree"
        )
    else:
        disagree, correlation = _paired(mine, outcomes[candidate], variance.within)
    rows = []
    for epochs in EPOCHS:
        sd = stats.difference_sd(variance.within_upper, disagree, epochs)
        rows.append(
            PlanRow(
                epochs=epochs,
                sd=sd,
                tasks=stats.tasks_needed(sd, margin, alpha, power),
                smallest_margin=stats.smallest_margin(variance.tasks, sd, alpha, power),
            )
        )
    return Plan(
        baseline=baseline,
        candidate=candidate,
        tasks=variance.tasks,
        epochs=variance.epochs,
        rate=variance.rate,
        within=variance.within,
        within_upper=variance.within_upper,
        between=variance.between,
        disagreement=disagree,
        correlation=correlation,
        assumptions=assumptions,
        margin=margin,
        alpha=alpha,
        power=power,
        rows=rows,
        fewest_tasks=stats.tasks_needed(math.sqrt(disagree), margin, alpha, power),
    )


Outcomes = dict[tuple[str, int], bool]


def _outcomes(conn: Connection, run_ids: list[str]) -> dict[str, Outcomes]:
    found: dict[str, Outcomes] = {run_id: {} for run_id in run_ids}
    query = select(
        AttemptRow.run_id, AttemptRow.task_id, AttemptRow.epoch, AttemptRow.resolved
    ).where(AttemptRow.run_id.in_(run_ids))
    for run_id, task_id, epoch, resolved in conn.execute(query):
        found[run_id][(task_id, epoch)] = bool(resolved)
    return found


def _per_task(outcomes: Outcomes, keep: set[tuple[str, int]] | None) -> tuple[list, list]:
    """Each task's resolved attempts and attempts (only the `keep` attempts, if given), in
    task order."""
    sums: dict[str, list[int]] = {}
    for (task_id, epoch), resolved in outcomes.items():
        if keep is None or (task_id, epoch) in keep:
            cell = sums.setdefault(task_id, [0, 0])
            cell[0] += resolved
            cell[1] += 1
    ordered = sorted(sums)
    return [float(sums[t][0]) for t in ordered], [sums[t][1] for t in ordered]


def _paired(one: Outcomes, two: Outcomes, within: float) -> tuple[float, float | None]:
    """Disagreement beyond epoch noise, and the correlation of per-task rates, over the
    attempts both runs made."""
    shared = set(one) & set(two)
    if not shared:
        raise ValueError("the runs share no attempts: nothing to pair")
    first, attempts = _per_task(one, shared)
    second, _ = _per_task(two, shared)
    a = [y / k for y, k in zip(first, attempts, strict=True)]
    b = [y / k for y, k in zip(second, attempts, strict=True)]
    disagree = stats.disagreement(a, b, attempts, within)
    sa, sb = stats.sd(a), stats.sd(b)
    if sa == 0 or sb == 0:
        return disagree, None
    ma, mb = stats.mean(a), stats.mean(b)
    covariance = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / (len(a) - 1)
    return disagree, covariance / (sa * sb)
