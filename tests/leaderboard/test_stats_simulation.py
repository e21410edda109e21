"""A small, seeded simulation: the task-clustered interval covers at its nominal level, the
paired test over tasks holds its size, and the gate's interval does not pass a true
regression, where the statistics over attempts (as the leaderboard had them) do not.

Tasks are drawn from a population of difficulties with mean rate 0.4; what every interval
claims to cover is that mean. `benchmarks/stats_simulation.py` is the large version (its
figures are in benchmarks/RESULTS.md); this one runs 300 replications of one setting each:
the coverage estimates carry a standard error of about 1.3 points, hence the margins.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from leaderboard import stats

MEAN, TASKS, EPOCHS, REPS = 0.4, 30, 3, 300


def bimodal(rng: np.random.Generator) -> Any:
    """Per-task rates: most tasks nearly always or nearly never solved."""
    return rng.beta(0.3, 0.45, TASKS)


def epochs(p: Any, rng: np.random.Generator) -> Any:
    return (rng.random((len(p), EPOCHS)) < p[:, None]).astype(float)


def test_the_task_clustered_interval_covers_and_the_one_over_attempts_does_not() -> None:
    rng = np.random.default_rng(1)
    clustered = over_attempts = 0
    for _ in range(REPS):
        outcomes = epochs(bimodal(rng), rng)
        rate = stats.clustered_totals(outcomes.sum(axis=1).tolist(), [EPOCHS] * TASKS)
        clustered += rate.low <= MEAN <= rate.high
        low, high = stats.wilson_interval(int(outcomes.sum()), outcomes.size)
        over_attempts += low <= MEAN <= high
    assert clustered / REPS >= 0.92  # nominal 0.95
    assert over_attempts / REPS < 0.88  # epochs counted as samples: far too narrow


def test_the_paired_test_over_tasks_holds_its_size() -> None:
    """Two deterministic models of equal strength (every epoch of a task agrees): the exact
    McNemar over attempts counts each discordant task three times."""
    rng = np.random.default_rng(2)
    over_tasks = over_attempts = 0
    for _ in range(REPS):
        first = (rng.random(TASKS) < MEAN).astype(float)
        fresh = (rng.random(TASKS) < MEAN).astype(float)
        second = np.where(rng.random(TASKS) < 0.7, first, fresh)  # exchangeable: the null
        deltas = (second - first).tolist()
        over_tasks += stats.sign_flip_p(deltas, scale=1) < 0.05
        b = int(np.sum((first > 0) & (second == 0))) * EPOCHS
        c = int(np.sum((second > 0) & (first == 0))) * EPOCHS
        over_attempts += stats.mcnemar_exact(b, c) < 0.05
    assert over_tasks / REPS <= 0.065  # nominal 0.05 (exact, so conservative)
    assert over_attempts / REPS > 0.15


def test_the_gate_interval_does_not_pass_a_true_regression() -> None:
    """A candidate that loses each task with chance 0.15 and gains with 0.05 is 3 points
    worse; the gate's rule (low end at or above -0.02 passes) must pass it at most about
    2.5% of the time. The percentile bootstrap it used before passed it far more often."""
    rng = np.random.default_rng(3)
    passed = bootstrap_passed = covered = 0
    true_difference = 0.05 * (1 - MEAN) - 0.15 * MEAN
    for rep in range(REPS):
        p = bimodal(rng)
        draw = rng.random(TASKS)
        worse = np.where(draw < 0.15, 0.0, np.where(draw > 0.95, 1.0, p))
        one, two = epochs(p, rng).mean(axis=1), epochs(worse, rng).mean(axis=1)
        paired = stats.paired_rate_difference(one, two)
        passed += paired.low >= -0.02
        covered += paired.low <= true_difference <= paired.high
        bootstrap_passed += stats.paired_bootstrap(one, two, seed=rep).low >= -0.02
    assert passed / REPS <= 0.035
    assert covered / REPS >= 0.92
    assert bootstrap_passed >= passed


def test_the_gate_rule_does_not_pass_a_strong_model_that_loses_a_few_tasks() -> None:
    """A high-scoring model (mean 0.91) losing tasks outright at the margin's rate, on 57
    tasks x 5 epochs: the gate's rule passes it at most about alpha (2.5%) of the time; a t
    bound on the observed spread alone (what the outright-loss variance guards against)
    passes it about twice as often. Vectorised: 4,000 comparisons."""
    rng = np.random.default_rng(4)
    reps, n, k, margin = 4000, 57, 5, 0.02
    p = rng.beta(5.05, 0.5, (reps, n))
    lost = np.where(rng.random((reps, n)) < margin / (5.05 / 5.55), 0.0, p)
    regression = rng.binomial(k, p) / k - rng.binomial(k, lost) / k
    upper = stats.non_inferiority_upper(regression, margin)
    assert np.mean(upper < margin) <= 0.03
    spread_only = regression.mean(axis=1) + stats.t_for(0.95, n - 1) * regression.std(
        axis=1, ddof=1
    ) / np.sqrt(n)
    assert np.mean(spread_only < margin) > 0.035


def test_unequal_epochs_are_averaged_per_task_before_the_rate() -> None:
    """Epochs linked to difficulty (failed tasks retried more) bias the mean over attempts;
    the mean over tasks of each task's rate covers the true rate."""
    rng = np.random.default_rng(5)
    reps, n = 2000, 100
    p = rng.beta(2.0, 3.0, (reps, n))
    k = 1 + np.rint(4 * (1 - p)).astype(int)
    means = rng.binomial(k, p) / k
    estimate, low, high = stats.task_rate_intervals(means)
    assert abs(float(np.mean(estimate)) - 0.4) < 0.005
    assert np.mean((low <= 0.4) & (high >= 0.4)) >= 0.94
    over_attempts = (means * k).sum(axis=1) / k.sum(axis=1)
    assert float(np.mean(over_attempts)) < 0.37  # biased toward the retried, harder tasks


def test_the_simulation_benchmark_runs_and_its_plan_reaches_its_power() -> None:
    """`benchmarks/stats_simulation.py`'s pieces on small regimes (its `--quick` smoke runs
    them all): a regime's figures are rates, and runs sized by the plan reach about 0.8."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "stats_simulation.py"
    spec = importlib.util.spec_from_file_location("stats_simulation", path)
    assert spec is not None and spec.loader is not None
    simulation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(simulation)
    figures = simulation.regime("high", 57, 5, "linked", 300, 0)
    assert all(0 <= figures[k] <= 1 for k in ("coverage", "power", "false_pass"))
    assert figures["false_pass"] <= 0.05 and figures["coverage"] >= 0.9
    assert figures["bias_attempts"] < -0.02  # retried tasks drag the mean over attempts
    planned = simulation.plan_check("spread", 5, 100, 0)
    assert planned["tasks"] > 191 and planned["power"] >= 0.7
