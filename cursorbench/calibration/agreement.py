"""Runs the labelled set through the real runner (`evals.labelled.agreement`): every
trajectory served over HTTP by a scripted agent and run as `cursorbench run --evals` would
run it, on the labelled split, round by round.

    PYTHONPATH=. python -m cursorbench.calibration.agreement [--per-eval N] [--out DIR]
        [--list FILE] [--concurrency N]

prints, per eval, the items, how many the grader agrees on and the share, then every
disagreement with the reader's reason and the grader's; `--list` also writes the set
(scenario, trajectory, verdict, reason) as JSON lines.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cursorbench import api
from cursorbench.config import LocalExecutorSpec, OpenAIModel, RunSpec, SqlStoreSpec
from evals.labelled import PER_EVAL, SEED, Item, items
from evals.labelled.agreement import (
    MODEL,
    Trajectories,
    Verdict,
    listing,
    report,
    rounds,
    verdicts_of,
)
from harness.model.openai_server import OpenAIServer


def round_spec(
    batch: list[Item], number: int, base_url: str, out: Path, per_eval: int, concurrency: int
) -> RunSpec:
    """The run of round `number` (folder `out/round-N`, results also in `out`'s database):
    its items' evals on the labelled split, answered at `base_url`."""
    return RunSpec(
        evals=sorted({one.scenario.eval for one in batch}),
        eval_split="generated",
        eval_seed=SEED,
        eval_sample=per_eval,
        out=out / f"round-{number}",
        model=OpenAIModel(base_url=base_url, name=MODEL, retry_backoff_s=0.0, max_retries=1),
        executor=LocalExecutorSpec(concurrency=concurrency),
        store=SqlStoreSpec(url=f"sqlite:///{out / 'labelled.sqlite'}"),
    )


def measure(
    chosen: list[Item], out: Path, per_eval: int = PER_EVAL, concurrency: int = 4
) -> list[Verdict]:
    """The grader's verdict on every chosen item, one run per round under `out`."""
    verdicts = []
    for number, batch in enumerate(rounds(chosen)):
        with OpenAIServer(Trajectories(batch)) as server:
            spec = round_spec(batch, number, server.base_url, out, per_eval, concurrency)
            outcome = api.run(spec)
        verdicts += verdicts_of(batch, outcome.results)
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cursorbench.calibration.agreement", description=__doc__
    )
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
