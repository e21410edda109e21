"""The gate: is a candidate run at least as good as its baseline? `gate(...)` answers with a
`GateDecision` that CI (`cursorbench gate`) and the training loop share.

Before anything is checked, the two runs must be comparable: the same suite version, and
(`min_coverage`, 1 by default) both must have recorded every attempt of the tasks x epochs
either planned, so a partial or crashed run cannot pass by sharing a few easy attempts.
Otherwise, or for an unknown run, `GateError` (exit 2).

Checks, each `pass`, `fail` or `inconclusive` (`GateRules`, from YAML or JSON):

- `max_regression`: the unit is the task (each task's epochs averaged first). The paired 95%
  interval of (candidate - baseline) resolved rate over tasks (`stats.paired_rate_difference`,
  a MOVER interval) decides: its high
  end below `-max_regression` is a regression beyond what is allowed (fail); its low end at or
  above it means the candidate is no worse than allowed (pass); otherwise the difference is
  too noisy to call (inconclusive), and the Markdown says about how many tasks would decide.
  When no task differs the interval is not [0, 0] but the bound that many tied tasks allow
  (about 3.84/n for n tied tasks), so a handful of ties, or two runs that both
  solve nothing on few tasks, are inconclusive. A run gated against itself is inconclusive.
  The exact paired sign-flip p over tasks (exact McNemar with one epoch) is reported;
- `min_resolved_rate`: the candidate's resolved rate (over all its attempts) must reach it;
- `eval_floors` / `category_floors`: the candidate's mean per eval / resolved rate per task
  category must reach each floor (every eval over all attempts: `tests_passed` counts an
  attempt never graded as 0);
- `max_cost_usd`: the candidate's total cost must not exceed it; a cost not known (no price
  for the model) fails it.

The decision is `fail` if any check fails, else `inconclusive` if any is, else `pass`.
`exit_code`: 0 pass, 1 fail, and inconclusive as `on_inconclusive` says (fail by default: not
proven safe). When the candidate is a checkpoint's run, the decision is recorded on the
checkpoint row.

Not covered here: the statistics themselves (`leaderboard.stats`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Connection, select

from harness.model.pricing import price_unknown
from harness.results import is_confined, tamper_evident
from leaderboard import queries, stats
from leaderboard.schema import AttemptRow, RunRow
from leaderboard.store import SqlStore

Outcome = Literal["pass", "fail", "inconclusive"]
EXIT = {"pass": 0, "fail": 1}


class GateError(Exception):
    """The gate cannot decide: bad rules, unknown or incomparable runs (one line, exit 2)."""


class GateRules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_resolved_rate: float | None = Field(default=None, ge=0, le=1)
    max_regression: float = Field(default=0.02, ge=0, le=1)
    eval_floors: dict[str, float] = Field(default_factory=dict)
    category_floors: dict[str, float] = Field(default_factory=dict)
    max_cost_usd: float | None = Field(default=None, ge=0)
    on_inconclusive: Literal["pass", "fail"] = "fail"
    min_coverage: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="Share of the tasks x epochs either run planned that both must have "
        "recorded; 1: both complete, on the same tasks and epochs.",
    )
    allow_unconfined: bool = Field(
        default=False,
        description="Gate runs made with --sandbox subprocess (unconfined: they could read "
        "the answers) or whose verdicts are not tamper-evident (imported Harbor tasks without "
        "a canary run: they could have been forced); refused by default.",
    )
    seed: int = 0


def load_rules(path: Path | None) -> GateRules:
    if path is None:
        return GateRules()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return GateRules.model_validate(data)
    except OSError as error:
        raise GateError(f"cannot read rules {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise GateError(f"rules {path}: not YAML or JSON: {' '.join(str(error).split())}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "rules"
        raise GateError(f"rules {path}: {where}: {first['msg']}") from None


class Check(BaseModel):
    name: str
    outcome: Outcome
    value: float
    threshold: float
    detail: str


class Coverage(BaseModel):
    """Which attempts each run recorded, against the tasks x epochs either planned."""

    planned: int  # tasks x epochs in the union of both runs' plans
    candidate: int  # attempts recorded
    baseline: int
    shared: int

    @property
    def share(self) -> float:
        return self.shared / self.planned if self.planned else 0.0


class GateDecision(BaseModel):
    candidate: str
    baseline: str
    decision: Outcome
    exit_code: int
    checks: list[Check]
    comparison: queries.Comparison
    coverage: Coverage
    tasks_needed: int | None = None  # tasks that would decide an inconclusive regression check
    rules: GateRules

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def to_markdown(self, link: str | None = None) -> str:
        """The summary CI shows; `link`: the dashboard's base URL, to link each flipped task."""
        mark = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}
        c = self.comparison
        lines = [
            f"## Gate: {mark[self.decision]}",
            "",
            "| | run | model | resolved [95% CI, over tasks] |",
            "|---|---|---|---|",
            f"| candidate | `{self.candidate}` | {_cell(c.second_model)} | "
            f"{_rate(c.second_rate)} |",
            f"| baseline | `{self.baseline}` | {_cell(c.first_model)} | {_rate(c.first_rate)} |",
            "",
            f"Suite {c.suite_version}: {c.shared_tasks} shared tasks, {c.shared_attempts} "
            f"shared attempts ({self.coverage.share:.0%} of the {self.coverage.planned} "
            "tasks x epochs planned).",
            "",
            "| check | outcome | value | threshold | detail |",
            "|---|---|---|---|---|",
        ]
        for check in self.checks:
            lines.append(
                f"| {check.name} | {mark[check.outcome]} | {check.value:.4g} | "
                f"{check.threshold:.4g} | {_cell(check.detail)} |"
            )
        r = c.resolved
        lines += [
            "",
            f"Resolved rate difference {r.difference:+.3f} (95% CI {r.low:+.3f} to "
            f"{r.high:+.3f}{', no task differs' if r.degenerate else ''}); paired exact "
            f"p = {c.mcnemar_p:.4g} over tasks ({c.first_only} lost, {c.second_only} gained).",
        ]
        if self.tasks_needed is not None:
            lines += [
                "",
                f"Undecided: about {self.tasks_needed} tasks would decide (80% power) at this "
                "difference and per-task spread.",
            ]
        for label, flips in (("lost", c.lost), ("gained", c.gained)):
            if flips:
                shown = ", ".join(self._flip(flip, link) for flip in flips)
                lines += ["", f"Tasks {label} ({len(flips)}): {shown}"]
        return "\n".join(lines) + "\n"

    def _flip(self, flip: queries.Flip, link: str | None) -> str:
        text = f"`{flip.task_id}` {flip.first:.2f} → {flip.second:.2f}"
        if not link:
            return text
        url = f"{link.rstrip('/')}/runs/{self.candidate}/attempts/{quote(flip.task_id)}/0"
        return f"[{text}]({url})"


def _rate(rate: stats.Interval) -> str:
    text = f"{rate.estimate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"
    return text + (" (every task alike)" if rate.degenerate else "")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (model names are the user's)."""
    return " ".join(text.split()).replace("|", "\\|")


def gate(
    candidate_run_id: str, baseline_run_id: str, rules: GateRules, store: SqlStore
) -> GateDecision:
    """Decide, and record the decision on the candidate's checkpoint if it has one."""
    with store.engine.connect() as conn:
        runs = {
            row.id: row
            for row in conn.execute(
                select(
                    RunRow.id,
                    RunRow.suite_version,
                    RunRow.checkpoint_id,
                    RunRow.config,
                    RunRow.warnings,
                    RunRow.sandbox,
                ).where(RunRow.id.in_([candidate_run_id, baseline_run_id]))
            )
        }
        for run_id in (candidate_run_id, baseline_run_id):
            if run_id not in runs:
                raise GateError(f"no run {run_id!r} in '{store.url}'")
        candidate, baseline = runs[candidate_run_id], runs[baseline_run_id]
        if candidate.suite_version != baseline.suite_version:
            raise GateError(
                f"runs are on different suite versions ({candidate.suite_version} vs "
                f"{baseline.suite_version}); scores compare only within a version"
            )
        for role, run in (("candidate", candidate), ("baseline", baseline)):
            if not is_confined(run.sandbox) and not rules.allow_unconfined:
                raise GateError(
                    f"the {role} ran unconfined (--sandbox {run.sandbox}), so it could read "
                    "the answers; gate confined runs (or set allow_unconfined in the rules)"
                )
            if not tamper_evident(run.warnings) and not rules.allow_unconfined:
                raise GateError(
                    f"the {role}'s verdicts are not tamper-evident (some tasks had no canary "
                    "run, so the agent's code could have forced them); gate tamper-evident "
                    "runs (or set allow_unconfined in the rules)"
                )
        coverage = _coverage(conn, candidate, baseline)
        _require(coverage, rules.min_coverage)
        comparison = queries.compare(conn, baseline_run_id, candidate_run_id, seed=rules.seed)
        detail = queries.run_detail(conn, candidate_run_id)
    same = candidate_run_id == baseline_run_id
    regression = _regression(rules.max_regression, comparison, same)
    checks = [regression, *_floors(rules, detail, price_unknown(candidate.warnings or []))]
    decision = _decide(checks)
    code = EXIT.get(decision, EXIT[rules.on_inconclusive])
    needed = None
    if regression.outcome == "inconclusive" and not same:
        r = comparison.resolved
        needed = stats.tasks_to_decide(r.difference, r.spread, rules.max_regression)
    result = GateDecision(
        candidate=candidate_run_id,
        baseline=baseline_run_id,
        decision=decision,
        exit_code=code,
        checks=checks,
        comparison=comparison,
        coverage=coverage,
        tasks_needed=needed,
        rules=rules,
    )
    if candidate.checkpoint_id:
        store.record_gate(
            candidate.checkpoint_id, baseline_run_id, decision, json.loads(result.to_json())
        )
    return result


def _planned(config: Any, recorded: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The run's tasks x epochs from its config; what it recorded when the config lacks them."""
    tasks = config.get("tasks") if isinstance(config, dict) else None
    epochs = config.get("epochs") if isinstance(config, dict) else None
    if not isinstance(tasks, dict | list) or not isinstance(epochs, int):
        return recorded
    return {(task, epoch) for task in tasks for epoch in range(epochs)}


def _coverage(conn: Connection, candidate: Any, baseline: Any) -> Coverage:
    keys: dict[str, set[tuple[str, int]]] = {candidate.id: set(), baseline.id: set()}
    query = select(AttemptRow.run_id, AttemptRow.task_id, AttemptRow.epoch).where(
        AttemptRow.run_id.in_(list(keys))
    )
    for run_id, task_id, epoch in conn.execute(query):
        keys[run_id].add((task_id, epoch))
    one, two = keys[candidate.id], keys[baseline.id]
    planned = _planned(candidate.config, one) | _planned(baseline.config, two)
    return Coverage(
        planned=len(planned), candidate=len(one), baseline=len(two), shared=len(one & two)
    )


def _require(coverage: Coverage, needed: float) -> None:
    if coverage.shared == 0:
        raise GateError("the runs share no attempts: nothing to compare")
    if coverage.share + 1e-12 < needed:
        raise GateError(
            f"the runs share {coverage.shared} of the {coverage.planned} tasks x epochs they "
            f"planned ({coverage.share:.0%}; candidate recorded {coverage.candidate}, baseline "
            f"{coverage.baseline}); the rules need {needed:.0%} (min_coverage): finish both runs "
            "on the same tasks and epochs"
        )


def _decide(checks: list[Check]) -> Outcome:
    outcomes = {check.outcome for check in checks}
    if "fail" in outcomes:
        return "fail"
    return "inconclusive" if "inconclusive" in outcomes else "pass"


def _floors(rules: GateRules, detail: queries.RunDetail, cost_unknown: bool) -> list[Check]:
    checks = []
    figures = detail.figures
    if rules.min_resolved_rate is not None:
        rate = float(figures.get("resolved_rate", 0.0))
        checks.append(_floor("min_resolved_rate", rate, rules.min_resolved_rate))
    means = {(row["kind"], row["key"]): row["mean"] for row in detail.breakdowns}
    for name, floor in sorted(rules.eval_floors.items()):
        checks.append(_floor(f"eval {name}", means.get(("eval", name)), floor))
    for name, floor in sorted(rules.category_floors.items()):
        checks.append(_floor(f"category {name}", means.get(("category", name)), floor))
    if rules.max_cost_usd is not None:
        checks.append(
            _cost(float(figures.get("cost_usd") or 0.0), rules.max_cost_usd, cost_unknown)
        )
    return checks


def _cost(cost: float, limit: float, unknown: bool) -> Check:
    if unknown:
        return Check(
            name="max_cost_usd",
            outcome="fail",
            value=0.0,
            threshold=limit,
            detail="cost unknown: no price for the candidate's model (see --prices)",
        )
    ok = cost <= limit
    return Check(
        name="max_cost_usd",
        outcome="pass" if ok else "fail",
        value=cost,
        threshold=limit,
        detail=f"total cost ${cost:.4f}",
    )


def _floor(name: str, value: float | None, floor: float) -> Check:
    if value is None:
        return Check(
            name=name, outcome="fail", value=0.0, threshold=floor, detail="not measured in run"
        )
    ok = value >= floor
    return Check(
        name=name,
        outcome="pass" if ok else "fail",
        value=value,
        threshold=floor,
        detail=f"{value:.3f} {'>=' if ok else '<'} {floor:.3f}",
    )


def _regression(allowed: float, comparison: queries.Comparison, same: bool) -> Check:
    paired = comparison.resolved
    tied = f" (no task differs: {paired.n} tied tasks bound it)" if paired.degenerate else ""
    if same:
        outcome: Outcome = "inconclusive"
        words = "candidate and baseline are the same run: nothing is compared"
    elif paired.high < -allowed:
        outcome = "fail"
        words = "significant regression beyond the allowed"
    elif paired.low >= -allowed:
        outcome = "pass"
        words = "no worse than allowed" + tied
    else:
        outcome = "inconclusive"
        words = (
            "too few tasks to tell" + tied
            if paired.degenerate
            else ("interval straddles the allowed regression")
        )
    return Check(
        name="max_regression",
        outcome=outcome,
        value=paired.difference,
        threshold=-allowed,
        detail=(
            f"{words}: diff {paired.difference:+.3f}, 95% CI [{paired.low:+.3f}, "
            f"{paired.high:+.3f}], paired p={comparison.mcnemar_p:.3g}"
        ),
    )
