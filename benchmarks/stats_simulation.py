"""Simulation of the gate's rule and the leaderboard's intervals, vectorised with numpy.

Run:  .venv/bin/python benchmarks/stats_simulation.py [--reps 1000] [--seed 0] [--write]
      .venv/bin/python benchmarks/stats_simulation.py --quick   (CI's smoke: seconds)

Tasks are drawn from a population of difficulties (each task's chance of being resolved,
`p_i`); a run makes `k_i` attempts of task i. What every interval claims to cover is the
population's mean rate (what a new draw of tasks would measure): tasks, not attempts, are
the sampling unit. Five populations:

- `deterministic` (mean 0.4): p_i is 0 or 1 (a greedy endpoint: every epoch agrees);
- `bimodal` (0.4): p_i ~ Beta(0.3, 0.45), most tasks nearly always or nearly never solved;
- `spread` (0.4): p_i ~ Beta(2, 3), tasks of middling difficulty;
- `low` (0.09): Beta(0.5, 5.05), a weak model: an extreme rate;
- `high` (0.91): Beta(5.05, 0.5), a strong model that can lose a few tasks outright.

Epochs: `equal` (k_i = E), `unequal` (k_i uniform in 1..E) and `linked` (harder tasks get
more epochs, k_i = 1 + round((E - 1)(1 - p_i)), as a retry-on-failure policy would).

Per regime (population x tasks x epochs x scheme), over `--reps` simulated comparisons:

- `coverage`: of a run's 95% interval of its rate (`stats.task_rate_intervals`, the same
  computation as `stats.clustered_totals`), nominal at least 0.95;
- `false pass`: a candidate truly worse by exactly the margin (0.02) passes the gate's rule
  (`stats.non_inferiority_upper` below the margin; nominal at most alpha = 0.025), worst of
  three kinds of regression: `outright` (each task lost outright with chance margin / mean,
  the high-scoring model losing a few tasks), `shift` (every task's rate scaled down) and
  `churn` (tasks lost and others gained, 5% gained);
- `power`: an equal checkpoint (the same p_i, fresh epochs) passes.

A row past nominal is simulated again with ten times the comparisons and another seed (with
hundreds of rows, some pass nominal by Monte Carlo noise alone: the se is about 0.005).

Then `gate plan` is checked: for each population and E, a pilot baseline of 57 tasks x E
epochs is drawn, `stats.task_variance` / `stats.tasks_needed` size a comparison for 80%
power (as `cursorbench gate plan` does: at the noise's 90% upper bound), and equal
checkpoints of that size are simulated: their pass rate, averaged over pilots, must reach
0.8 (a single small pilot can misjudge the noise: the worst pilot is shown too).

`--write` appends the tables to benchmarks/RESULTS.md with date, machine and command.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard import stats

MARGIN, ALPHA, POWER, GAINED = 0.02, 0.025, 0.8, 0.05
POPULATIONS: dict[str, tuple[float, Callable[[np.random.Generator, tuple[int, int]], Any]]] = {
    "deterministic": (0.4, lambda rng, shape: (rng.random(shape) < 0.4).astype(float)),
    "bimodal": (0.4, lambda rng, shape: rng.beta(0.3, 0.45, shape)),
    "spread": (0.4, lambda rng, shape: rng.beta(2.0, 3.0, shape)),
    "low": (0.5 / 5.55, lambda rng, shape: rng.beta(0.5, 5.05, shape)),
    "high": (5.05 / 5.55, lambda rng, shape: rng.beta(5.05, 0.5, shape)),
}
TASKS = (10, 30, 57, 100, 189, 350, 500)
SCHEMES = ("equal", "unequal", "linked")
PILOT_TASKS, PILOTS = 57, 20


def epochs_for(scheme: str, p: Any, most: int, rng: np.random.Generator) -> Any:
    if scheme == "equal" or most == 1:
        return np.full(p.shape, most)
    if scheme == "unequal":
        return rng.integers(1, most + 1, p.shape)
    return 1 + np.rint((most - 1) * (1 - p)).astype(int)


def rates(p: Any, k: Any, rng: np.random.Generator) -> Any:
    """Each task's mean over its k epochs (a deterministic task repeats itself)."""
    return rng.binomial(k, p) / k


def regressed(kind: str, p: Any, mean: float, rng: np.random.Generator) -> Any:
    """A candidate whose population mean rate is exactly `MARGIN` below the baseline's."""
    if kind == "shift":
        return p * (1 - MARGIN / mean)
    draw = rng.random(p.shape)
    if kind == "outright":
        return np.where(draw < MARGIN / mean, 0.0, p)
    lose = (MARGIN + GAINED * (1 - mean)) / mean  # churn: lose - gain = the margin
    return np.where(draw < lose, 0.0, np.where(draw > 1 - GAINED, 1.0, p))


def regime(population: str, n: int, most: int, scheme: str, reps: int, seed: int) -> dict:
    mean, draw = POPULATIONS[population]
    rng = np.random.default_rng(seed)
    p = draw(rng, (reps, n))
    k = epochs_for(scheme, p, most, rng)
    base = rates(p, k, rng)
    _, low, high = stats.task_rate_intervals(base)
    figures = {"coverage": float(np.mean((low <= mean) & (mean <= high)))}
    same = rates(p, k, rng)
    upper = stats.non_inferiority_upper(base - same, MARGIN, ALPHA)
    figures["power"] = float(np.mean(upper < MARGIN))
    for kind in ("outright", "shift", "churn"):
        worse = rates(regressed(kind, p, mean, rng), k, rng)
        upper = stats.non_inferiority_upper(base - worse, MARGIN, ALPHA)
        figures[kind] = float(np.mean(upper < MARGIN))
    figures["false_pass"] = max(figures["outright"], figures["shift"], figures["churn"])
    weighted = (base * k).sum(axis=1) / k.sum(axis=1)  # over attempts, as before
    figures["bias_attempts"] = float(np.mean(weighted) - mean)
    return figures


def plan_check(population: str, most: int, reps: int, seed: int) -> dict:
    """Pilot baselines sized by `gate plan`'s arithmetic; equal checkpoints of that size."""
    _, draw = POPULATIONS[population]
    rng = np.random.default_rng(seed)
    planned, achieved = [], []
    for _ in range(PILOTS):
        p = draw(rng, (1, PILOT_TASKS))[0]
        k = np.full(PILOT_TASKS, most)
        pilot = rng.binomial(k, p)
        variance = stats.task_variance(pilot.tolist(), k.tolist())
        sd = stats.difference_sd(variance.within_upper, 0.0, most)
        n = stats.tasks_needed(sd, MARGIN, ALPHA, POWER)
        if n is None:
            continue
        q = draw(rng, (reps, n))
        kk = np.full(q.shape, most)
        upper = stats.non_inferiority_upper(rates(q, kk, rng) - rates(q, kk, rng), MARGIN, ALPHA)
        planned.append(n)
        achieved.append(float(np.mean(upper < MARGIN)))
    return {
        "tasks": int(np.median(planned)),
        "power": float(np.mean(achieved)),
        "worst": float(np.min(achieved)),
    }


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few regimes, 200 reps")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    reps = 200 if args.quick else args.reps
    tasks = (30, 189) if args.quick else TASKS
    rows = []
    for index, population in enumerate(POPULATIONS):
        for n in tasks:
            for most in (1, 3, 5):
                for scheme in ("equal",) if most == 1 else SCHEMES:
                    seed = args.seed + 1000 * index + 10 * n + most
                    rows.append(
                        (
                            population,
                            n,
                            most,
                            scheme,
                            regime(population, n, most, scheme, reps, seed),
                        )
                    )
    for population, n, most, scheme, figures in rows:  # past nominal: again, 10x the reps
        if figures["false_pass"] > ALPHA or figures["coverage"] < 0.95:
            again = regime(population, n, most, scheme, 10 * reps, args.seed + 7 + n + most)
            figures["again"] = again
    plans = [
        (population, most, plan_check(population, most, 100 if args.quick else 300, args.seed))
        for population in POPULATIONS
        for most in (1, 3, 5)
        if not args.quick or most == 3
    ]
    elapsed = time.perf_counter() - started
    text = render(rows, plans, reps, elapsed, args)
    print(text)
    if args.write:
        with Path(__file__).with_name("RESULTS.md").open("a", encoding="utf-8") as out:
            out.write("\n" + text)
    return text


def render(rows: list, plans: list, reps: int, elapsed: float, args: Any) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "benchmarks/stats_simulation.py" + (" --quick" if args.quick else f" --reps {reps}")
    final = [f.get("again", f) for *_, f in rows]
    worst_false = max(f["false_pass"] for f in final)
    worst_cover = min(f["coverage"] for f in final)
    lines = [
        f"## stats_simulation — {when}",
        "",
        f"`{command}` on {platform.node()} ({platform.machine()}, {os.cpu_count()} cores, "
        f"{elapsed:.0f} s): "
        f"{reps} simulated comparisons per row. Gate rule: non-inferiority at margin {MARGIN}, "
        f"alpha {ALPHA} (`stats.non_inferiority`). False pass: a candidate worse by exactly "
        f"the margin passes (worst of outright / shift / churn; nominal at most {ALPHA}; "
        f"Monte Carlo se about {np.sqrt(ALPHA * (1 - ALPHA) / reps):.3f}). Power: an equal "
        "checkpoint passes. Coverage: a run's 95% rate interval. Bias: the mean over "
        "attempts (the old estimate) minus the true rate. A row past nominal (false pass "
        f"above {ALPHA}, coverage below 0.95) is run again with {10 * reps} comparisons "
        "and another seed: `first → again`. Worst over all rows (after reruns): false pass "
        f"{worst_false:.3f}, coverage {worst_cover:.3f}.",
        "",
        "| population | tasks | epochs | scheme | false pass (outright/shift/churn) | power | "
        "coverage | bias over attempts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for population, n, most, scheme, f in rows:
        again = f.get("again")
        false = f"{f['false_pass']:.3f}" + (f" → {again['false_pass']:.3f}" if again else "")
        cover = f"{f['coverage']:.3f}" + (f" → {again['coverage']:.3f}" if again else "")
        lines.append(
            f"| {population} | {n} | {most} | {scheme} | {false} "
            f"({f['outright']:.3f}/{f['shift']:.3f}/{f['churn']:.3f}) | {f['power']:.3f} | "
            f"{cover} | {f['bias_attempts']:+.3f} |"
        )
    lines += [
        "",
        f"`gate plan` checked: per row, {PILOTS} pilot baselines of {PILOT_TASKS} tasks x E "
        f"epochs; the tasks plan asks for (median) at margin {MARGIN}, alpha {ALPHA}, power "
        f"{POWER}; the pass rate of equal checkpoints of that size (mean, and worst pilot).",
        "",
        "| population | epochs | tasks planned | power achieved | worst pilot |",
        "|---|---|---|---|---|",
    ]
    for population, most, f in plans:
        lines.append(
            f"| {population} | {most} | {f['tasks']} | {f['power']:.3f} | {f['worst']:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
