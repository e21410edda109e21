"""Coverage and false-positive simulation of the leaderboard's statistics.

Run:  .venv/bin/python benchmarks/stats_simulation.py [--reps 2000] [--seed 0] [--write]

Tasks are drawn from a population of difficulties (each task's chance of being resolved,
`p_i`), and each run makes `epochs` attempts per task. The quantity every interval claims to
cover is the population's mean rate (what a new draw of tasks would measure): tasks, not
attempts, are the sampling unit. Three populations, all with mean 0.4:

- `deterministic`: p_i is 0 or 1 (a greedy endpoint: every epoch of a task agrees);
- `bimodal`: p_i ~ Beta(0.3, 0.45), most tasks nearly always or nearly never solved;
- `spread`: p_i ~ Beta(2, 3), tasks of middling difficulty.

Per (population, tasks, epochs), over `--reps` simulated runs:

- coverage of the 95% interval of a run's resolved rate: Wilson over attempts (what the
  leaderboard did before) and `stats.clustered_totals` (what it does now);
- false-positive rate at 5% of two models of equal strength (the second's rate on a task is
  the first's with chance 0.7, else a fresh draw; fresh epochs): exact McNemar over attempts
  (before) and `stats.sign_flip_p` over tasks (now);
- a candidate that truly regressed by 3 points (each task lost with chance 0.15, gained with
  0.05): coverage of `stats.paired_rate_difference` (the gate's interval), and how often the
  gate's rule at the default margin (0.02) would wrongly pass it (nominal at most 2.5%), now
  and with the percentile bootstrap it used before.

`--write` appends the table to benchmarks/RESULTS.md with date and machine.
"""

from __future__ import annotations

import argparse
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard import stats

MEAN = 0.4
POPULATIONS = ("deterministic", "bimodal", "spread")
LOSE, GAIN = 0.15, 0.05  # the regressed candidate: true difference 0.05 * 0.6 - 0.15 * 0.4
TRUE_DIFFERENCE = GAIN * (1 - MEAN) - LOSE * MEAN
MARGIN = 0.02


def difficulties(population: str, n: int, rng: np.random.Generator) -> Any:
    if population == "deterministic":
        return (rng.random(n) < MEAN).astype(float)
    if population == "bimodal":
        return rng.beta(0.3, 0.45, n)
    return rng.beta(2.0, 3.0, n)


def attempts(p: Any, epochs: int, rng: np.random.Generator, population: str) -> Any:
    """(tasks x epochs) outcomes; a deterministic endpoint repeats itself exactly."""
    if population == "deterministic":
        return np.repeat(p[:, None], epochs, axis=1)
    return (rng.random((len(p), epochs)) < p[:, None]).astype(float)


def equal_model(p: Any, population: str, rng: np.random.Generator) -> Any:
    """Another model as strong as the first on the population: on each task its rate is the
    first's with chance 0.7, else a fresh draw (so the pair is exchangeable: the null)."""
    fresh = difficulties(population, len(p), rng)
    return np.where(rng.random(len(p)) < 0.7, p, fresh)


@dataclass
class Tally:
    wilson_attempts: int = 0
    clustered: int = 0
    mcnemar_attempts: int = 0
    sign_flip_tasks: int = 0
    paired_covers: int = 0
    gate_false_pass: int = 0
    bootstrap_false_pass: int = 0


def one_setting(population: str, n: int, epochs: int, reps: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    tally = Tally()
    for rep in range(reps):
        p = difficulties(population, n, rng)
        first = attempts(p, epochs, rng, population)
        low, high = stats.wilson_interval(int(first.sum()), first.size)
        tally.wilson_attempts += low <= MEAN <= high
        rate = stats.clustered_totals(first.sum(axis=1).tolist(), [epochs] * n)
        tally.clustered += rate.low <= MEAN <= rate.high
        same = attempts(equal_model(p, population, rng), epochs, rng, population)
        b = int(np.sum((first > 0) & (same == 0)))
        c = int(np.sum((same > 0) & (first == 0)))
        tally.mcnemar_attempts += stats.mcnemar_exact(b, c) < 0.05
        deltas = (same.mean(axis=1) - first.mean(axis=1)).tolist()
        tally.sign_flip_tasks += stats.sign_flip_p(deltas, scale=epochs) < 0.05
        draw = rng.random(n)
        regressed = np.where(draw < LOSE, 0.0, np.where(draw > 1 - GAIN, 1.0, p))
        worse = attempts(regressed, epochs, rng, population)
        paired = stats.paired_rate_difference(
            first.mean(axis=1), worse.mean(axis=1), epochs=[epochs] * n
        )
        tally.paired_covers += paired.low <= TRUE_DIFFERENCE <= paired.high
        tally.gate_false_pass += paired.low >= -MARGIN
        old = stats.paired_bootstrap(first.mean(axis=1), worse.mean(axis=1), seed=rep)
        tally.bootstrap_false_pass += old.low >= -MARGIN
    return {name: count / reps for name, count in vars(tally).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default="10,30,100")
    parser.add_argument("--epochs", default="1,3,5")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows = []
    for population in POPULATIONS:
        for n in (int(x) for x in args.tasks.split(",")):
            for epochs in (int(x) for x in args.epochs.split(",")):
                if population == "deterministic" and epochs > 3:
                    continue  # repeats of one outcome: more epochs change nothing
                figures = one_setting(population, n, epochs, args.reps, args.seed)
                rows.append((population, n, epochs, figures))
                print(population, n, epochs, {k: round(v, 3) for k, v in figures.items()})
    table = render(rows, args.reps)
    print(table)
    if args.write:
        results = Path(__file__).with_name("RESULTS.md")
        with results.open("a", encoding="utf-8") as out:
            out.write("\n" + table)


def render(rows: list[tuple[str, int, int, dict[str, float]]], reps: int) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"## stats_simulation — {when}",
        "",
        f"`benchmarks/stats_simulation.py --reps {reps}` on {platform.node()} "
        f"({platform.machine()}): {reps} simulated runs per row, tasks drawn from a population "
        f"of mean rate {MEAN}. Coverage of 95% intervals (nominal 0.95) and false-positive "
        "rate of 5% tests on two models of equal strength (nominal 0.05); before = over "
        "attempts, "
        f"now = over tasks. Regressed candidate: true difference {TRUE_DIFFERENCE:+.2f}; "
        f"gate false pass at margin {MARGIN} (nominal at most 0.025).",
        "",
        "| population | tasks | epochs | Wilson over attempts | clustered (now) | "
        "McNemar over attempts | sign-flip over tasks (now) | paired interval coverage | "
        "gate false pass (now) | gate false pass (bootstrap, before) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for population, n, epochs, f in rows:
        lines.append(
            f"| {population} | {n} | {epochs} | {f['wilson_attempts']:.3f} | "
            f"{f['clustered']:.3f} | {f['mcnemar_attempts']:.3f} | {f['sign_flip_tasks']:.3f} | "
            f"{f['paired_covers']:.3f} | {f['gate_false_pass']:.3f} | "
            f"{f['bootstrap_false_pass']:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
