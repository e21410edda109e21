"""Runs the baselines every behaviour eval must score about 0 on (`evals.baselines`): each
scripted double served over real HTTP and run through the real runner over the evals'
scenarios, as `cursorbench run --base-url` would.

    PYTHONPATH=. python -m cursorbench.calibration.baselines [--evals a,b] [--out DIR]
        [--concurrency N] [--split all|curated|generated] [--sample N] [--seed S]

prints, per baseline and eval, the mean score, the attempts and how many resolved; it
exits 1 when a baseline's mean on an eval is over `FLOOR` or any attempt resolved.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cursorbench import api
from cursorbench.config import LocalExecutorSpec, OpenAIModel, RunSpec, SqlStoreSpec
from evals import EVALS
from evals.baselines import BASELINES, Floor, floor_figures, table
from evals.catalogue import load_scenarios
from evals.scenario import Split
from harness.model.openai_server import OpenAIServer


def baseline_spec(
    evals: list[str],
    base_url: str,
    model: str,
    out: Path,
    concurrency: int = 4,
    split: Split = "all",
    seed: int | None = None,
    sample: int | None = None,
) -> RunSpec:
    """The run of one baseline answering at `base_url`: the evals' scenarios (`split`,
    `seed`, `sample` as a run's `eval_split`, `eval_seed`, `eval_sample`) into `out`."""
    return RunSpec(
        evals=evals,
        eval_split=split,
        eval_seed=seed,
        eval_sample=sample,
        out=out,
        model=OpenAIModel(base_url=base_url, name=model, retry_backoff_s=0.0, max_retries=1),
        executor=LocalExecutorSpec(concurrency=concurrency),
        store=SqlStoreSpec(url=f"sqlite:///{out / 'baselines.sqlite'}"),
    )


def measure(
    baseline: str,
    evals: list[str],
    out: Path,
    concurrency: int = 4,
    split: Split = "all",
    seed: int | None = None,
    sample: int | None = None,
) -> list[Floor]:
    """Runs one baseline over the evals' scenarios into `out`; its figures per eval."""
    out.mkdir(parents=True, exist_ok=True)
    responder = BASELINES[baseline]()
    with OpenAIServer(responder) as server:
        spec = baseline_spec(
            evals, server.base_url, responder.models[0], out, concurrency, split, seed, sample
        )
        outcome = api.run(spec)
    picked = load_scenarios(evals, split=split, seed=seed, sample=sample)
    owner = {scenario.id: scenario.eval for scenario in picked}
    return floor_figures(baseline, evals, outcome.results, owner)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cursorbench.calibration.baselines", description=__doc__
    )
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
            baseline, evals, out / baseline, args.concurrency, args.split, args.seed, args.sample
        )
    ]
    print(table(floors))
    return 0 if all(floor.ok for floor in floors) else 1


if __name__ == "__main__":
    sys.exit(main())
