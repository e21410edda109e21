"""The gate: is a candidate run at least as good as its baseline? `gate(...)` answers with a
`GateDecision` that CI (`cursorbench gate`) and the training loop share.

Before anything is checked, the two runs must be comparable: the same suite version, and
(`min_coverage`, 1 by default) both must have recorded every attempt of the tasks x epochs
either planned, so a partial or crashed run cannot pass by sharing a few easy attempts.
Otherwise, or for an unknown run, `GateError` (exit 2). So too for runs unfit on their provenance
(`leaderboard.provenance`): imported unverified, or on task contents that differ between
them or from this machine's tasks of the same ids.

Checks, each `pass`, `fail` or `inconclusive` (`GateRules`, from YAML or JSON):

- `judged`: each side must have judged something on the shared attempts: a run whose every
  shared attempt is an error (nothing was judged), or two runs that both resolve nothing,
  fail, at any number of tasks. Errors are counted and shown (they count as unresolved);
- `max_regression`: non-inferiority at a margin (`max_regression`, alias `margin`) with
  one-sided error rate `alpha`. The unit is the task: each task's shared epochs are averaged
  first (also when tasks have unequal epochs), and the regression is the mean over tasks of
  (baseline - candidate). `stats.non_inferiority` bounds it: its one-sided 1 - alpha upper
  bound below the margin passes; its lower bound above the margin fails; otherwise it is
  inconclusive, and the Markdown says about how many tasks at these epochs would decide for
  an equal candidate (`cursorbench gate plan` sizes runs before they are made). The bound
  adds to the observed spread the variance of a regression made of unseen outright losses,
  so a candidate not clearly better passes on no fewer than 191 tasks at a 2% margin (alpha
  2.5%), however many epochs: size runs to the margin rather than loosening
  `on_inconclusive`. A run gated
  against itself is inconclusive. The exact paired sign-flip p over tasks (exact McNemar
  with one epoch) and the paired 95% MOVER interval are reported;
- `min_resolved_rate`: the candidate's resolved rate (the mean over tasks of each task's
  rate over its epochs) must reach it;
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
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Connection, select

from harness.model.pricing import price_unknown
from harness.results import is_confined, tamper_evident
from leaderboard import queries, stats
from leaderboard.provenance import provenance_refusal
from leaderboard.schema import AttemptRow, RunRow
from leaderboard.store import SqlStore

Outcome = Literal["pass", "fail", "inconclusive"]
EXIT = {"pass": 0, "fail": 1}


class GateError(Exception):
    """The gate cannot decide: bad rules, unknown or incomparable runs (one line, exit 2)."""


class GateRules(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    min_resolved_rate: float | None = Field(default=None, ge=0, le=1)
    max_regression: float = Field(
        default=0.02,
        ge=0,
        le=1,
        validation_alias=AliasChoices("max_regression", "margin"),
        description="The non-inferiority margin: the candidate passes only if the one-sided "
        "upper bound of (baseline - candidate) resolved rate over tasks is below it.",
    )
    alpha: float = Field(
        default=0.025,
        gt=0,
        lt=0.5,
        description="The one-sided error rate: how often a candidate worse by the margin "
        "may pass (and an equal one fail).",
    )
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


def override(rules: GateRules, margin: float | None, alpha: float | None) -> GateRules:
    """The rules with the command line's margin and alpha, validated as the rules are."""
    changes = {"max_regression": margin, "alpha": alpha}
    data = rules.model_dump() | {k: v for k, v in changes.items() if v is not None}
    try:
        return GateRules.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "rules"
        raise GateError(f"--{where.replace('max_regression', 'margin')}: {first['msg']}") from None


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
    candidate_errors: int = 0  # shared attempts that are errors (not judged)
    baseline_errors: int = 0
    candidate_resolved: int = 0  # shared attempts resolved
    baseline_resolved: int = 0

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
    tasks_needed: int | None = None  # tasks at these epochs that would pass an equal candidate
    rule: stats.NonInferiority | None = None  # the max_regression check's figures
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
            "tasks x epochs planned). Errors (not judged, counted unresolved): candidate "
            f"{self.coverage.candidate_errors}, baseline {self.coverage.baseline_errors} of "
            f"{self.coverage.shared} shared attempts.",
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
        if self.rule is not None:
            u = self.rule
            lines += [
                "",
                f"Rule: pass only if the one-sided {1 - u.alpha:.1%} upper bound of the "
                f"regression (baseline - candidate, over {u.n} tasks, each task's epochs "
                f"averaged) is below the margin {u.margin:.3f}: it is {u.upper:+.3f}.",
            ]
        if self.tasks_needed is not None:
            lines += [
                "",
                f"Undecided: about {self.tasks_needed} tasks at these epochs would decide for "
                "a candidate as good as its baseline (80% power, this per-task spread); "
                "`cursorbench gate plan` sizes a run before it is made.",
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
    candidate_run_id: str,
    baseline_run_id: str,
    rules: GateRules,
    store: SqlStore,
    current_tasks: Mapping[str, Collection[str]] | None = None,
) -> GateDecision:
    """Decide, and record the decision on the candidate's checkpoint if it has one.
    `current_tasks`: task id -> this machine's digests of it, to refuse runs of other contents."""
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
        refusal = provenance_refusal({"candidate": candidate, "baseline": baseline}, current_tasks)
        if refusal is not None:
            raise GateError(refusal)
        coverage = _coverage(conn, candidate, baseline)
        _require(coverage, rules.min_coverage)
        comparison = queries.compare(conn, baseline_run_id, candidate_run_id, seed=rules.seed)
        detail = queries.run_detail(conn, candidate_run_id)
    same = candidate_run_id == baseline_run_id
    rule = _rule(comparison, rules)
    regression = _regression(rule, comparison, same)
    floors = _floors(rules, detail, price_unknown(candidate.warnings or []))
    checks = [_judged(coverage), regression, *floors]
    decision = _decide(checks)
    code = EXIT.get(decision, EXIT[rules.on_inconclusive])
    needed = None
    if regression.outcome == "inconclusive" and not same:
        needed = stats.tasks_needed(rule.sd, rules.max_regression, rules.alpha)
    result = GateDecision(
        candidate=candidate_run_id,
        baseline=baseline_run_id,
        decision=decision,
        exit_code=code,
        checks=checks,
        comparison=comparison,
        coverage=coverage,
        tasks_needed=needed,
        rule=rule,
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
    marks: dict[str, dict[tuple[str, int], tuple[bool, bool]]] = {key: {} for key in keys}
    query = select(
        AttemptRow.run_id,
        AttemptRow.task_id,
        AttemptRow.epoch,
        AttemptRow.status,
        AttemptRow.resolved,
    ).where(AttemptRow.run_id.in_(list(keys)))
    for run_id, task_id, epoch, status, resolved in conn.execute(query):
        keys[run_id].add((task_id, epoch))
        marks[run_id][(task_id, epoch)] = (status == "error", bool(resolved))
    one, two = keys[candidate.id], keys[baseline.id]
    shared = one & two
    planned = _planned(candidate.config, one) | _planned(baseline.config, two)

    def count(run_id: str, which: int) -> int:
        return sum(marks[run_id][key][which] for key in shared)

    return Coverage(
        planned=len(planned),
        candidate=len(one),
        baseline=len(two),
        shared=len(shared),
        candidate_errors=count(candidate.id, 0),
        baseline_errors=count(baseline.id, 0),
        candidate_resolved=count(candidate.id, 1),
        baseline_resolved=count(baseline.id, 1),
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


def _rule(comparison: queries.Comparison, rules: GateRules) -> stats.NonInferiority:
    """Non-inferiority over the shared tasks (each task's shared epochs averaged)."""
    paired = comparison.resolved  # candidate - baseline per task; its spread is the tasks' sd
    return stats.non_inferiority_of(
        paired.n, -paired.difference, paired.spread, rules.max_regression, rules.alpha
    )


def _judged(coverage: Coverage) -> Check:
    """Fail when a side judged nothing (every shared attempt an error) or neither resolved
    anything: there is then nothing to compare, at any number of tasks."""
    shared = coverage.shared
    judged = (shared - coverage.candidate_errors, shared - coverage.baseline_errors)
    words = (
        f"errors: candidate {coverage.candidate_errors}, baseline {coverage.baseline_errors} "
        f"of {shared} shared attempts (counted unresolved)"
    )
    if min(judged) == 0:
        side = "candidate" if judged[0] == 0 else "baseline"
        if judged == (0, 0):
            side = "candidate and baseline"
        outcome: Outcome = "fail"
        words = f"nothing judged: every shared attempt of the {side} is an error; " + words
    elif coverage.candidate_resolved == 0 and coverage.baseline_resolved == 0:
        outcome = "fail"
        words = "nothing measured: neither run resolved any shared attempt; " + words
    else:
        outcome = "pass"
    return Check(
        name="judged", outcome=outcome, value=float(min(judged)), threshold=1.0, detail=words
    )


def _regression(rule: stats.NonInferiority, comparison: queries.Comparison, same: bool) -> Check:
    paired = comparison.resolved
    outcome: Outcome = "inconclusive" if same else rule.outcome
    if same:
        words = "candidate and baseline are the same run: nothing is compared"
    elif outcome == "pass":
        words = "no worse than the margin"
    elif outcome == "fail":
        words = "worse than the margin"
    else:
        words = "too few tasks to tell (see gate plan)"
    level = 1 - rule.alpha
    return Check(
        name="max_regression",
        outcome=outcome,
        value=rule.regression,
        threshold=rule.margin,
        detail=(
            f"{words}: regression (baseline - candidate) {rule.regression:+.3f} over "
            f"{rule.n} tasks, one-sided {level:.1%} bounds [{rule.lower:+.3f}, "
            f"{rule.upper:+.3f}], margin {rule.margin:.3f}; 95% CI of the difference "
            f"[{paired.low:+.3f}, {paired.high:+.3f}], paired p={comparison.mcnemar_p:.3g}"
        ),
    )
