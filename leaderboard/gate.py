"""The gate: is a candidate run at least as good as its baseline? `gate(...)` answers with a
`GateDecision` that CI (`cursorbench gate`) and the training loop share.

Checks, each `pass`, `fail` or `inconclusive` (`GateRules`, from YAML or JSON):

- `min_resolved_rate`: the candidate's resolved rate must reach it;
- `max_regression`: on the shared attempts, the paired 95% interval of (candidate - baseline)
  resolved rate (bootstrap over tasks) decides: its high end below `-max_regression` is a
  significant regression beyond what is allowed (fail); its low end at or above it means the
  candidate is no worse than allowed (pass); otherwise the difference is too noisy to call
  (inconclusive). The exact McNemar p-value is reported alongside;
- `eval_floors` / `category_floors`: the candidate's mean per eval / resolved rate per task
  category must reach each floor;
- `max_cost_usd`: the candidate's total cost must not exceed it.

The decision is `fail` if any check fails, else `inconclusive` if any is, else `pass`.
`exit_code`: 0 pass, 1 fail, and inconclusive as `on_inconclusive` says (fail by default: not
proven safe). Runs of different suite versions, an unknown run, or a candidate with no shared
attempts are a `GateError` (exit 2). When the candidate is a checkpoint's run, the decision is
recorded on the checkpoint row.

Not covered here: the statistics themselves (`leaderboard.stats`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from leaderboard import queries
from leaderboard.schema import RunRow
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


class GateDecision(BaseModel):
    candidate: str
    baseline: str
    decision: Outcome
    exit_code: int
    checks: list[Check]
    comparison: queries.Comparison
    rules: GateRules

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def to_markdown(self) -> str:
        mark = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}
        c = self.comparison
        lines = [
            f"## Gate: {mark[self.decision]}",
            "",
            f"Candidate `{self.candidate}` vs baseline `{self.baseline}`: "
            f"{c.shared_tasks} shared tasks, {c.shared_attempts} shared attempts.",
            "",
            "| check | outcome | value | threshold | detail |",
            "|---|---|---|---|---|",
        ]
        for check in self.checks:
            lines.append(
                f"| {check.name} | {mark[check.outcome]} | {check.value:.4g} | "
                f"{check.threshold:.4g} | {check.detail} |"
            )
        lines += [
            "",
            f"Resolved rate difference {c.resolved.difference:+.3f} "
            f"(95% CI {c.resolved.low:+.3f} to {c.resolved.high:+.3f}); "
            f"McNemar exact p = {c.mcnemar_p:.4g} "
            f"({c.first_only} lost, {c.second_only} gained).",
        ]
        if c.lost:
            lines.append("")
            lines.append("Tasks lost: " + ", ".join(f"`{flip.task_id}`" for flip in c.lost))
        return "\n".join(lines) + "\n"


def gate(
    candidate_run_id: str, baseline_run_id: str, rules: GateRules, store: SqlStore
) -> GateDecision:
    """Decide, and record the decision on the candidate's checkpoint if it has one."""
    with store.engine.connect() as conn:
        runs = {
            row.id: row
            for row in conn.execute(
                select(RunRow.id, RunRow.suite_version, RunRow.checkpoint_id).where(
                    RunRow.id.in_([candidate_run_id, baseline_run_id])
                )
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
        comparison = queries.compare(conn, baseline_run_id, candidate_run_id, seed=rules.seed)
        if comparison.shared_attempts == 0:
            raise GateError("the runs share no attempts: nothing to compare")
        detail = queries.run_detail(conn, candidate_run_id)
    checks = _checks(rules, comparison, detail)
    decision = _decide(checks)
    code = EXIT.get(decision, EXIT[rules.on_inconclusive])
    result = GateDecision(
        candidate=candidate_run_id,
        baseline=baseline_run_id,
        decision=decision,
        exit_code=code,
        checks=checks,
        comparison=comparison,
        rules=rules,
    )
    if candidate.checkpoint_id:
        store.record_gate(
            candidate.checkpoint_id, baseline_run_id, decision, json.loads(result.to_json())
        )
    return result


def _decide(checks: list[Check]) -> Outcome:
    outcomes = {check.outcome for check in checks}
    if "fail" in outcomes:
        return "fail"
    return "inconclusive" if "inconclusive" in outcomes else "pass"


def _checks(
    rules: GateRules, comparison: queries.Comparison, detail: queries.RunDetail
) -> list[Check]:
    checks = [_regression(rules.max_regression, comparison)]
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
        cost = float(figures.get("cost_usd") or 0.0)
        ok = cost <= rules.max_cost_usd
        checks.append(
            Check(
                name="max_cost_usd",
                outcome="pass" if ok else "fail",
                value=cost,
                threshold=rules.max_cost_usd,
                detail=f"total cost ${cost:.4f}",
            )
        )
    return checks


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


def _regression(allowed: float, comparison: queries.Comparison) -> Check:
    paired = comparison.resolved
    if paired.high < -allowed:
        outcome: Outcome = "fail"
        words = "significant regression beyond the allowed"
    elif paired.low >= -allowed:
        outcome = "pass"
        words = "no worse than allowed"
    else:
        outcome = "inconclusive"
        words = "interval straddles the allowed regression"
    return Check(
        name="max_regression",
        outcome=outcome,
        value=paired.difference,
        threshold=-allowed,
        detail=(
            f"{words}: diff {paired.difference:+.3f}, 95% CI [{paired.low:+.3f}, "
            f"{paired.high:+.3f}], McNemar p={comparison.mcnemar_p:.3g}"
        ),
    )
