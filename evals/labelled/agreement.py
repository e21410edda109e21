"""How often each eval's grader agrees with the labelled set (`evals.labelled`), measured
through the real runner: every trajectory is served over HTTP by a scripted agent and run
as `cursorbench run --evals` would run it, on the labelled split.

    PYTHONPATH=. python -m evals.labelled.agreement [--per-eval N] [--out DIR] [--list FILE]

prints, per eval, the items, how many the grader agrees on and the share, then every
disagreement with the reader's reason and the grader's; `--list` also writes the set
(scenario, trajectory, verdict, reason) as JSON lines. A scenario has several items, so
the items run in rounds: round r serves each scenario's r-th trajectory (a scenario with
fewer gets the null agent, whose attempt is not counted).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evals import EVALS
from evals.agents import reply_for
from evals.labelled import ACCEPT, PER_EVAL, SEED, Item, items
from harness.model.openai_server import Answer, OpenAIServer, Reply, first_user_message, step_index

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


def measure(
    chosen: list[Item], out: Path, per_eval: int = PER_EVAL, concurrency: int = 4
) -> list[Verdict]:
    from cursorbench import api
    from cursorbench.config import spec_from_options

    verdicts = []
    for number, batch in enumerate(rounds(chosen)):
        with OpenAIServer(Trajectories(batch)) as server:
            outcome = api.run(
                spec_from_options(
                    base_url=server.base_url,
                    model=MODEL,
                    evals=sorted({i.scenario.eval for i in batch}),
                    eval_split="generated",
                    eval_seed=SEED,
                    eval_sample=per_eval,
                    out=out / f"round-{number}",
                    db=f"sqlite:///{out / 'labelled.sqlite'}",
                    concurrency=concurrency,
                    retry_backoff=0.0,
                    max_retries=1,
                )
            )
        results = {result.task_id: result for result in outcome.results}
        for one in batch:
            result = results[one.scenario.id]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.labelled.agreement", description=__doc__)
    parser.add_argument("--per-eval", type=int, default=PER_EVAL)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--list", type=Path, default=None, help="write the set as JSON lines")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    chosen = list(items(args.per_eval))
    if args.list is not None:
        args.list.write_text(listing(chosen), encoding="utf-8")
    out = args.out or Path(tempfile.mkdtemp(prefix="cursorbench-labelled-"))
    verdicts = measure(chosen, out, args.per_eval, args.concurrency)
    (out / "verdicts.jsonl").write_text(
        "".join(v.model_dump_json() + "\n" for v in verdicts), encoding="utf-8"
    )
    print(report(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
