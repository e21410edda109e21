"""Baselines every behaviour eval must score about 0 on (issue 17): the null agent (finishes
at once), the always-edit agent (one irrelevant edit, chosen at random) and the agent that
breaks the code. Each is a scripted double (`harness.model.doubles`) served over real HTTP and
run through the real runner, as `cursorbench run --base-url` would.

    PYTHONPATH=. python -m evals.baselines [--evals a,b] [--out DIR] [--concurrency N]
        [--split all|curated|generated] [--sample N] [--seed S]

prints, per baseline and eval, the mean score, the attempts and how many resolved; it
exits 1 when a baseline's mean on an eval is over `FLOOR` or any attempt resolved.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evals import EVALS
from evals.stats import eval_figures
from harness.model.doubles import BreakingDouble, FinishAtOnceDouble, IrrelevantEditDouble
from harness.model.openai_server import OpenAIServer, Responder

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


def measure(
    baseline: str, evals: list[str], out: Path, concurrency: int = 4, **options: Any
) -> list[Floor]:
    """Runs one baseline over the evals' scenarios; its figures per eval."""
    from cursorbench import api
    from cursorbench.config import spec_from_options
    from evals.scenario import load_scenarios

    out.mkdir(parents=True, exist_ok=True)
    options.setdefault("db", f"sqlite:///{out / 'baselines.sqlite'}")
    responder = BASELINES[baseline]()
    chosen = {k: options[k] for k in ("eval_split", "eval_seed", "eval_sample") if k in options}
    picked = load_scenarios(
        evals,
        split=chosen.get("eval_split", "all"),
        seed=chosen.get("eval_seed"),
        sample=chosen.get("eval_sample"),
    )
    owner = {scenario.id: scenario.eval for scenario in picked}
    with OpenAIServer(responder) as server:
        outcome = api.run(
            spec_from_options(
                base_url=server.base_url,
                model=responder.models[0],
                evals=evals,
                out=out,
                concurrency=concurrency,
                retry_backoff=0.0,
                max_retries=1,
                **options,
            )
        )
    figures = eval_figures(outcome.results, owner)
    floors = []
    for name in evals:
        mine = [result for result in outcome.results if owner.get(result.task_id) == name]
        values = [result.scores[name].value for result in mine if name in result.scores]
        floors.append(
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
    return floors


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.baselines", description=__doc__)
    parser.add_argument("--evals", default=",".join(EVALS))
    parser.add_argument("--baselines", default=",".join(BASELINES))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--split", choices=["all", "curated", "generated"], default="all")
    parser.add_argument("--sample", type=int, default=None, help="generated scenarios per eval")
    parser.add_argument("--seed", type=int, default=None, help="the generated split's seed")
    args = parser.parse_args(argv)
    evals = [name for name in args.evals.split(",") if name]
    out = args.out or Path(tempfile.mkdtemp(prefix="cursorbench-baselines-"))
    floors = [
        floor
        for baseline in args.baselines.split(",")
        for floor in measure(
            baseline,
            evals,
            out / baseline,
            args.concurrency,
            eval_split=args.split,
            eval_seed=args.seed,
            eval_sample=args.sample,
        )
    ]
    print(table(floors))
    return 0 if all(floor.ok for floor in floors) else 1


if __name__ == "__main__":
    sys.exit(main())
