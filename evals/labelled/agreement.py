"""How often each eval's grader agrees with the labelled set (`evals.labelled`): every
trajectory is served over HTTP by a scripted agent (`Trajectories`) and run through the
real runner as `cursorbench run --evals` would run it, on the labelled split; `verdicts_of`
reads the grader's verdicts from a round's results and `report` tells them. A scenario has
several items, so the items run in rounds (`rounds`): round r serves each scenario's r-th
trajectory (a scenario with fewer gets the null agent, whose attempt is not counted).

The runs are made above the evals, by `cursorbench.calibration.agreement`
(`python -m cursorbench.calibration.agreement`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from pydantic import BaseModel

from evals import EVALS
from evals.agents import reply_for
from evals.labelled import ACCEPT, Item
from harness.model.openai_server import Answer, Reply, first_user_message, step_index
from harness.results import AttemptResult

MODEL = "labelled-trajectories"


class Trajectories:
    """Serves one trajectory per scenario (known by its prompt); anything else finishes."""

    models = [MODEL]

    def __init__(self, chosen: list[Item]) -> None:
        self._replies = {i.scenario.prompt.strip(): [reply_for(s) for s in i.steps] for i in chosen}

    def respond(self, request: dict[str, Any]) -> Answer:
        script = self._replies.get(first_user_message(request).strip(), [])
        index = step_index(request)
        if index >= len(script):
            return Reply(tool_calls=[("finish", {"summary": "done"})])
        return script[index]


class Verdict(BaseModel):
    item: str
    eval: str
    category: str
    label: bool  # the reader accepts it
    graded: bool  # the grader accepts it: resolved and score >= ACCEPT
    score: float | None
    resolved: bool
    reason: str  # the reader's
    grader: list[str]  # the grader's reasons (and the failure, if any)
    known: str | None = None  # why the grader disagrees, where that is known (KNOWN)

    @property
    def agrees(self) -> bool:
        return self.label == self.graded


def rounds(chosen: list[Item]) -> list[list[Item]]:
    by_scenario: dict[str, list[Item]] = defaultdict(list)
    for one in chosen:
        by_scenario[one.scenario.id].append(one)
    depth = max((len(v) for v in by_scenario.values()), default=0)
    return [[v[r] for v in by_scenario.values() if r < len(v)] for r in range(depth)]


def verdicts_of(batch: list[Item], results: list[AttemptResult]) -> list[Verdict]:
    """The grader's verdict on each item of one round, from that round's results."""
    by_task = {result.task_id: result for result in results}
    verdicts = []
    for one in batch:
        result = by_task[one.scenario.id]
        score = result.scores.get(one.scenario.eval)
        value = None if score is None else score.value
        reasons = [] if score is None else list(score.reasons)
        if result.failure is not None:
            reasons.append(f"failure: {result.failure}")
        if not result.resolved and value is not None and value >= 0.5:
            reasons.append("not resolved: the hidden tests fail")
        verdicts.append(
            Verdict(
                item=one.id,
                eval=one.scenario.eval,
                category=one.category,
                label=one.accept,
                graded=bool(result.resolved and value is not None and value >= ACCEPT),
                score=value,
                resolved=result.resolved,
                reason=one.reason,
                grader=reasons,
                known=one.known,
            )
        )
    return verdicts


def report(verdicts: list[Verdict]) -> str:
    rows = [
        "| eval | items | accept / reject (labels) | agree | agreement |",
        "|---|---|---|---|---|",
    ]
    for name in [*EVALS, "all"]:
        mine = [v for v in verdicts if name in ("all", v.eval)]
        if not mine:
            continue
        agree = sum(v.agrees for v in mine)
        accepted = sum(v.label for v in mine)
        rows.append(
            f"| {name} | {len(mine)} | {accepted} / {len(mine) - accepted} | {agree} | "
            f"{agree / len(mine):.1%} |"
        )
    by_category = defaultdict(list)
    for v in verdicts:
        by_category[v.category].append(v)
    rows += ["", "| category | items | agree |", "|---|---|---|"]
    for category, mine in sorted(by_category.items()):
        rows.append(f"| {category} | {len(mine)} | {sum(v.agrees for v in mine)} |")
    wrong = [v for v in verdicts if not v.agrees]
    rows += ["", f"Disagreements ({len(wrong)}):", ""]
    for v in wrong:
        said = "accept" if v.label else "reject"
        got = "accepts" if v.graded else "rejects"
        score = "no score" if v.score is None else f"{v.score:.2f}"
        because = "; ".join(v.grader) or "no reason given"
        rows.append(
            f"- `{v.item}` ({v.category}): reader {said}s ({v.reason}); grader {got} "
            f"({score}, resolved={v.resolved}: {because})"
            + (f". Known: {v.known}" if v.known else ". Not explained yet")
        )
    return "\n".join(rows)


def listing(chosen: list[Item]) -> str:
    return "".join(
        json.dumps(
            {
                "item": one.id,
                "scenario": one.scenario.id,
                "eval": one.scenario.eval,
                "prompt": one.scenario.prompt,
                "category": one.category,
                "accept": one.accept,
                "reason": one.reason,
                "steps": [step.model_dump(exclude_none=True) for step in one.steps],
            }
        )
        + "\n"
        for one in chosen
    )
