"""Statistics for the leaderboard and the gate: pure functions of numbers, no I/O.

- the unit of inference is the task: a run's rate or score is first averaged within each
  task (or eval scenario) over its epochs, also when tasks have unequal epochs, and its
  interval is `clustered_interval`, a continuity-corrected Wilson interval on the effective
  sample size (Korn & Graubard 1998), never more than the number of tasks, so epochs of one
  task are not counted as independent samples; it stays inside [0, 1] and, when every task
  scored the same, is flagged `degenerate` and as wide as that many tasks allow;
- `wilson_interval` (a rate over independent trials), `normal_interval` and
  `bootstrap_interval` (any score; the bootstrap resamples whatever items it is given);
- `pass_at_k` (the unbiased estimator of Chen et al. 2021) and `best_of_k` over epochs;
- paired comparison of two runs over their shared tasks (each task's mean over its epochs):
  `sign_flip_p`, the exact paired permutation test (exact McNemar over tasks when each task
  has one epoch); `paired_rate_difference`, a MOVER interval for a difference of rates that
  stays honest when few or no tasks differ (never [0, 0]); `paired_bootstrap` intervals
  that resample tasks, for unbounded measures (cost, latency);
- `non_inferiority`: the gate's rule, a t bound over tasks on the mean regression with the
  variance of unseen outright losses at the margin added; `task_variance`, `disagreement`,
  `difference_sd` and `tasks_needed`: how many tasks x epochs a decision at a margin needs
  (`cursorbench gate plan`); `task_rate_intervals` and `non_inferiority_upper`: the same
  figures for many simulated runs at once (numpy);
- `ci_aware_ranks`: an entry's rank is 1 + the number of entries whose interval lies wholly
  above its own, so entries whose intervals overlap share a rank.

Every interval is 95% unless `level` says otherwise. Bootstraps take a `seed`, so the same
inputs give the same interval (the gate's decisions must be reproducible). Bootstraps run in
numpy (`resample_means`) but draw exactly the resamples the pure-Python version drew.

Not covered here: fetching the numbers (`leaderboard.queries`) or deciding (`leaderboard.gate`).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy is imported where a bootstrap needs it: recording runs does not
    import numpy as np

DEFAULT_RESAMPLES = 2000


def z_for(level: float) -> float:
    """The two-sided normal quantile for a confidence level, e.g. 1.95996 for 0.95."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when there are no trials."""
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    z = z_for(level)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def t_for(level: float, df: float) -> float:
    """The two-sided Student t quantile for a confidence level and `df` degrees of freedom
    (exact for 1 and 2, else the Cornish-Fisher expansion in 1/df: within 0.2% for df >= 3,
    1e-4 from df 10)."""
    z = z_for(level)
    p = 0.5 + level / 2
    if df < 1:
        raise ValueError(f"need at least one degree of freedom, not {df}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    terms = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    return z + sum(term / df ** (i + 1) for i, term in enumerate(terms))


@dataclass(frozen=True)
class Interval:
    """A mean over clusters (tasks, or eval scenarios) with its interval inside [0, 1].

    `degenerate`: every cluster had the same mean (no spread to measure), so the interval is
    the widest one that many clusters allow, not a measured one; say so when showing it."""

    estimate: float
    low: float
    high: float
    clusters: int
    n: int  # observations (attempts) behind it
    degenerate: bool


def clustered_interval(clusters: Sequence[Sequence[float]], level: float = 0.95) -> Interval:
    """The mean over clusters (tasks) of each cluster's mean of observations in [0, 1] (a
    task's epochs), with its interval: `clustered_totals`."""
    sizes = [len(values) for values in clusters if values]
    sums = [float(sum(values)) for values in clusters if values]
    return clustered_totals(sums, sizes, level)


def clustered_totals(sums: Sequence[float], sizes: Sequence[int], level: float = 0.95) -> Interval:
    """The mean of per-cluster means (each cluster's sum over its observations: a task's
    epochs averaged first, so a task with more epochs weighs no more), with a Wilson score
    interval with continuity correction on the effective sample size (Korn & Graubard 1998).

    The effective size is p(1-p) / variance, the variance being that of the cluster means
    over clusters (var / n), and it is never more than the number of clusters: the task is
    the unit of inference, epochs only make each task's mean less noisy. The continuity
    correction keeps the stated coverage at extreme rates on few tasks (Wilson's own dips
    to ~0.94 there; `benchmarks/stats_simulation.py`). When every cluster has the same mean
    (all 0, all 1, all equal) each counts as one trial and the interval is `degenerate`."""
    n, total = len(sizes), int(sum(sizes))
    if n == 0:
        return Interval(0.0, 0.0, 1.0, 0, 0, True)
    means = [y / m if m else 0.0 for y, m in zip(sums, sizes, strict=True)]
    p = min(1.0, max(0.0, sum(means) / n))
    spread = sum((value - p) ** 2 for value in means)
    variance = spread / (n - 1) / n if n > 1 else 0.0
    degenerate = variance <= 1e-15 * max(p * (1 - p), 1e-300)
    effective = float(n)  # no spread measured, or more than the tasks would give: one per task
    if not degenerate and p * (1 - p) > 0:
        effective = min(effective, p * (1 - p) / variance)
    low, high = wilson_corrected(p, effective, z_for(level))
    return Interval(p, low, high, n, total, degenerate)


def wilson_corrected(p: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score interval with continuity correction (Newcombe 1998, method 4) for a
    rate p over n (possibly effective, fractional) trials, inside [0, 1]."""
    z2, centre, denominator = z * z, 2 * n * p + z * z, 2 * (n + z * z)
    low_root = z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)
    high_root = z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1)
    low = 0.0 if p <= 0 else (centre - 1 - z * math.sqrt(max(0.0, low_root))) / denominator
    high = 1.0 if p >= 1 else (centre + 1 + z * math.sqrt(max(0.0, high_root))) / denominator
    return max(0.0, min(low, p)), min(1.0, max(high, p))


def task_rate_intervals(means: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, ...]:
    """`clustered_totals` of many runs at once, for simulation: `means` is (runs x tasks) of
    each task's mean over its epochs; returns (estimate, low, high), one per run."""
    import numpy as np

    n = means.shape[1]
    p = np.clip(means.mean(axis=1), 0.0, 1.0)
    variance = means.var(axis=1, ddof=1) / n if n > 1 else np.zeros(len(means))
    measured = (variance > 1e-15 * np.maximum(p * (1 - p), 1e-300)) & (p * (1 - p) > 0)
    ratio = np.divide(p * (1 - p), variance, out=np.full_like(p, float(n)), where=measured)
    effective = np.minimum(float(n), ratio)
    z = z_for(level)
    z2, centre, denominator = z * z, 2 * effective * p + z * z, 2 * (effective + z * z)
    low_root = z2 - 2 - 1 / effective + 4 * p * (effective * (1 - p) + 1)
    high_root = z2 + 2 - 1 / effective + 4 * p * (effective * (1 - p) - 1)
    low = (centre - 1 - z * np.sqrt(np.maximum(0.0, low_root))) / denominator
    high = (centre + 1 + z * np.sqrt(np.maximum(0.0, high_root))) / denominator
    low = np.where(p <= 0, 0.0, np.clip(np.minimum(low, p), 0.0, 1.0))
    high = np.where(p >= 1, 1.0, np.clip(np.maximum(high, p), 0.0, 1.0))
    return p, low, high


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def normal_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean +- z standard errors; the mean itself for fewer than two values."""
    n = len(values)
    centre = mean(values)
    if n < 2:
        return centre, centre
    variance = sum((value - centre) ** 2 for value in values) / (n - 1)
    half = z_for(level) * math.sqrt(variance / n)
    return centre - half, centre + half


def bootstrap_interval(
    values: Sequence[float],
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    import numpy as np

    means = resample_means(np.asarray(values, dtype=float)[:, None], resamples, seed)[:, 0]
    return _percentiles(np.sort(means), level)


RESAMPLE_CHUNK = 1 << 15  # resample x item cells drawn at a time: small enough to stay in cache
COUNTS_KEPT = 4  # resample count tables kept (by items, resamples, seed)
COUNTS_KEPT_CELLS = 1 << 25  # the largest table kept: 32 MiB of uint8 (2,000 x 16,000 items)


def resample_means(columns: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of each column of `columns` (items x k) over `resamples` bootstrap resamples of
    its rows: a (resamples x k) array.

    The resamples are exactly those `random.Random(seed).choices(items, k=n)` would draw, one
    after another (Python's Mersenne Twister state is handed to numpy's, whose `random_sample`
    is the same 53-bit draw, and `choices` takes `floor(random() * n)`), so results equal the
    pure-Python bootstrap's up to floating-point summation order; columns share the draws.

    Which items a resample draws depends only on (n, resamples, seed), not on the values, so
    the table of how often each resample drew each item (`resample_counts`) is kept for the
    last few such triples: a dashboard comparing many pairs of runs over the same tasks, or a
    gate run again, draws them once; each mean is then a row of that table times the values."""
    import numpy as np

    n = columns.shape[0]
    counts = resample_counts(n, resamples, seed)
    means = np.empty((resamples, columns.shape[1]))
    per_chunk = max(1, RESAMPLE_CHUNK // n)
    for start in range(0, resamples, per_chunk):
        block = counts[start : start + per_chunk].astype(np.float64)
        means[start : start + len(block)] = block @ columns / n
    return means


def resample_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples x n): how many times each bootstrap resample drew each of n items, drawn as
    `resample_means` says; read-only, as it may be shared."""
    key = (n, resamples, seed)
    found = _COUNTS.get(key)
    if found is not None:
        _COUNTS[key] = _COUNTS.pop(key)  # most recently used last
        return found
    counts = _draw_counts(n, resamples, seed)
    if counts.size <= COUNTS_KEPT_CELLS:
        _COUNTS[key] = counts
        while len(_COUNTS) > COUNTS_KEPT:
            _COUNTS.pop(next(iter(_COUNTS)))
    return counts


_COUNTS: dict[tuple[int, int, int], np.ndarray] = {}


def _draw_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    import numpy as np

    state = random.Random(seed).getstate()[1]
    generator = np.random.RandomState()
    # (name, key, position, has_gauss, cached_gaussian): no Gaussian is cached, as in a fresh state
    generator.set_state(("MT19937", np.array(state[:624], dtype=np.uint32), state[624], 0, 0.0))
    per_chunk = max(1, RESAMPLE_CHUNK // n)
    offsets = np.repeat(np.arange(per_chunk, dtype=np.int64) * n, n)  # a bin range per resample
    counts: np.ndarray = np.empty((resamples, n), dtype=np.uint8)  # a count is at most n
    for start in range(0, resamples, per_chunk):
        rows = min(per_chunk, resamples - start)
        draws = generator.random_sample(rows * n)
        draws *= n
        picks = draws.astype(np.int64)  # floor: draws are not negative
        picks += offsets[: rows * n]
        block = np.bincount(picks, minlength=rows * n).reshape(rows, n)
        if counts.dtype == np.uint8 and block.max() > 255:  # never seen beyond tiny n; exact
            counts = counts.astype(np.int64)
        counts[start : start + rows] = block
    counts.flags.writeable = False
    return counts


def _percentiles(sorted_values: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    last = len(sorted_values) - 1
    low = sorted_values[max(0, math.floor(tail * last))]
    high = sorted_values[min(last, math.ceil((1 - tail) * last))]
    return float(low), float(high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: 1 - C(n-c, k) / C(n, k), from n samples, c correct."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(outcomes: Mapping[str, Sequence[bool]], k: int) -> float:
    """pass@k averaged over tasks, each task's outcomes being its epochs."""
    if not outcomes:
        return 0.0
    return mean([pass_at_k(len(runs), sum(runs), k) for runs in outcomes.values()])


def best_of_k(outcomes: Mapping[str, Sequence[bool]], k: int) -> float:
    """The share of tasks resolved by at least one of their first k epochs (what a user who
    runs k tries and keeps the best gets; pass@k is its expectation over orderings)."""
    if not outcomes:
        return 0.0
    return mean([float(any(runs[:k])) for runs in outcomes.values()])


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: b tasks only the first run
    resolved, c only the second. Under the null each discordant pair is a fair coin:
    p = min(1, 2 * P(Binomial(b + c, 1/2) <= min(b, c)))."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    n = b + c
    if n == 0:
        return 1.0
    term = total = 1  # C(n, 0); each next binomial coefficient from the last, exactly
    for i in range(min(b, c)):
        term = term * (n - i) // (i + 1)
        total += term
    return min(1.0, 2 * (total / 2**n))


def sign_flip_p(
    differences: Sequence[float], resamples: int = 20000, seed: int = 0, scale: int = 0
) -> float:
    """Two-sided p-value of the paired sign-flip permutation test that the differences (one
    per task: second minus first, each task's mean over its epochs) are centred on 0.

    Under the null each task's difference is as likely to have either sign, so p is the share
    of the 2^n sign assignments whose sum is at least as far from 0 as the observed one. With
    `scale` > 0 the differences are multiples of 1/scale (epochs per task: scale = their
    least common multiple) and p is exact, by convolution; with one epoch it is the exact
    McNemar test over tasks. Otherwise (or when the exact table would be large) `resamples`
    seeded sign flips estimate it, as (hits + 1) / (resamples + 1)."""
    nonzero = [float(d) for d in differences if d != 0]
    if not nonzero:
        return 1.0
    if scale > 0:
        steps = [round(abs(d) * scale) for d in nonzero]
        exact = all(abs(s - abs(d) * scale) < 1e-6 for s, d in zip(steps, nonzero, strict=True))
        if exact and sum(steps) <= 200_000:
            return _sign_flip_exact(steps, abs(round(sum(nonzero) * scale)))
    import numpy as np

    values = np.asarray(nonzero)
    observed_sum = abs(values.sum())
    generator = np.random.default_rng(seed)
    hits = 0
    for start in range(0, resamples, 1000):
        rows = min(1000, resamples - start)
        signs = generator.integers(0, 2, size=(rows, len(values))) * 2 - 1
        hits += int(np.sum(np.abs(signs @ values) >= observed_sum - 1e-12))
    return (hits + 1) / (resamples + 1)


def _sign_flip_exact(steps: list[int], observed: int) -> float:
    """P(|sum of +-steps| >= observed) over fair independent signs, exactly.

    Small tables are counted in exact integers; past `EXACT_INTEGER_STEPS` the same
    distribution is built in floating point (`_sign_flip_float`: the same convolution, in
    probabilities, to ~1e-15), since integer counts cost seconds at thousands of tasks."""
    import numpy as np

    total = sum(steps)
    if total > EXACT_INTEGER_STEPS:
        return _sign_flip_float(steps, observed)
    counts = np.zeros(2 * total + 1, dtype=object)  # exact integers: 2^n overflows int64
    counts[total] = 1
    for step in steps:
        shifted = np.zeros_like(counts)
        shifted[step:] += counts[: len(counts) - step]
        shifted[: len(counts) - step] += counts[step:]
        counts = shifted
    sums = np.arange(-total, total + 1)
    extreme = int(counts[np.abs(sums) >= observed].sum())
    return min(1.0, extreme / 2 ** len(steps))


EXACT_INTEGER_STEPS = 500


def _sign_flip_float(steps: list[int], observed: int) -> float:
    """`_sign_flip_exact` in probabilities: the steps grouped by size, each group's sum a
    scaled binomial (pmf from log-gamma), the groups convolved."""
    import numpy as np

    total = sum(steps)
    distribution = np.zeros(1)
    distribution[0] = 1.0  # P(sum = -0), on a grid starting at the most negative sum so far
    for step, m in sorted(Counter(steps).items()):
        k = np.arange(m + 1)
        log_pmf = (
            math.lgamma(m + 1)
            - np.array([math.lgamma(i + 1) + math.lgamma(m - i + 1) for i in k])
            - m * math.log(2)
        )
        group = np.zeros(2 * step * m + 1)
        group[2 * step * k] = np.exp(log_pmf)  # sum = step * (2k - m), shifted by step * m
        distribution = np.convolve(distribution, group)
    sums = np.arange(-total, total + 1)
    return min(1.0, float(distribution[np.abs(sums) >= observed].sum()))


@dataclass(frozen=True)
class NonInferiority:
    """The gate's rule on paired tasks: is the candidate worse than the baseline by less than
    `margin`? `regression` is the mean over tasks of (baseline - candidate), each a task's
    rate over its shared epochs; `upper` and `lower` its one-sided 1 - alpha bounds."""

    n: int
    regression: float
    lower: float
    upper: float
    sd: float  # of the per-task differences
    margin: float
    alpha: float

    @property
    def outcome(self) -> Literal["pass", "fail", "inconclusive"]:
        """`pass`: the regression's upper bound is below the margin; `fail`: its lower bound
        is above it; else `inconclusive`."""
        if self.upper < self.margin:
            return "pass"
        return "fail" if self.lower > self.margin else "inconclusive"


def non_inferiority(
    baseline: Sequence[float], candidate: Sequence[float], margin: float, alpha: float = 0.025
) -> NonInferiority:
    """Non-inferiority of paired per-task rates at `margin`: a t bound over tasks of the mean
    regression, regression +- t_{1-alpha, n-1} * sqrt((sd^2 + margin (1 - margin)) / n).

    The task is the unit (n tasks, n - 1 degrees of freedom, however many epochs). To the
    observed variance of the per-task differences is added margin (1 - margin), the variance
    of a regression of the margin's size made of tasks lost outright: a few such losses are
    easily not seen at all (none of n with chance about (1 - margin)^n), and a t bound on the
    observed spread alone then passes a real regression (4-5% of the time instead of 2.5% for
    a high-scoring model at 30-57 tasks x 5 epochs; `benchmarks/stats_simulation.py`). So
    nothing passes on fewer than about t^2 (1 - margin) / margin tasks (189 at a 2% margin,
    alpha 2.5%), whatever the epochs. Fewer than two tasks decide nothing."""
    if len(baseline) != len(candidate):
        raise ValueError(f"paired samples differ in length: {len(baseline)} and {len(candidate)}")
    deltas = [float(b) - float(c) for b, c in zip(baseline, candidate, strict=True)]
    return non_inferiority_of(len(deltas), mean(deltas), _sd(deltas), margin, alpha)


def non_inferiority_of(
    n: int, regression: float, sd: float, margin: float, alpha: float = 0.025
) -> NonInferiority:
    """`non_inferiority` from the number of tasks, the mean and the sd of their differences."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, not {alpha}")
    if n < 2:
        return NonInferiority(n, regression, -1.0, 1.0, sd, margin, alpha)
    half = t_for(1 - 2 * alpha, n - 1) * math.hypot(sd, _floor(margin)) / math.sqrt(n)
    lower, upper = max(-1.0, regression - half), min(1.0, regression + half)
    return NonInferiority(n, regression, lower, upper, sd, margin, alpha)


def _floor(margin: float) -> float:
    return math.sqrt(max(0.0, margin * (1 - margin)))


def non_inferiority_upper(
    regressions: np.ndarray, margin: float, alpha: float = 0.025
) -> np.ndarray:
    """`non_inferiority(...).upper` of many comparisons at once, for simulation:
    `regressions` is (comparisons x tasks) of baseline - candidate per task."""
    import numpy as np

    n = regressions.shape[1]
    if n < 2:
        return np.ones(len(regressions))
    sd = np.hypot(regressions.std(axis=1, ddof=1), _floor(margin))
    half = t_for(1 - 2 * alpha, n - 1) * sd / math.sqrt(n)
    upper: np.ndarray = np.minimum(1.0, regressions.mean(axis=1) + half)
    return upper


@dataclass(frozen=True)
class TaskVariance:
    """What one run says about how noisy a task's rate is (`task_variance`).

    `within`: the mean over tasks of p_i (1 - p_i), a task's variance from one epoch to the
    next; `within_upper`: its one-sided 90% upper bound (what plans use, so that a plan from
    a small baseline errs toward more tasks); `between`: the variance of the tasks' true
    rates (their difficulty)."""

    tasks: int
    epochs: float  # attempts per task, on average
    rate: float  # the mean of the tasks' rates
    within: float
    within_upper: float
    between: float
    within_assumed: bool  # one epoch per task: within is taken as rate (1 - rate), the most


PLAN_Z = 1.2816  # one-sided 90%: the upper bounds a plan takes of what it estimates


def task_variance(resolved: Sequence[float], attempts: Sequence[int]) -> TaskVariance:
    """From each task's resolved attempts and attempts. `within` is the unbiased
    p(1 - p) k / (k - 1) averaged over the tasks with at least two epochs, its upper bound
    that plus PLAN_Z standard errors; with no such task it cannot be told from difficulty, and
    is taken as rate (1 - rate) (every task as hard as the mean: the noisiest), its upper
    bound at the end of the rate's 80% interval nearer 1/2."""
    pairs = [(y / k, k) for y, k in zip(resolved, attempts, strict=True) if k > 0]
    if not pairs:
        return TaskVariance(0, 0.0, 0.0, 0.25, 0.25, 0.0, True)
    rates = [r for r, _ in pairs]
    rate = mean(rates)
    repeated = [r * (1 - r) * k / (k - 1) for r, k in pairs if k > 1]
    assumed = not repeated
    if assumed:
        within = rate * (1 - rate)
        low, high = wilson_interval(round(rate * len(rates)), len(rates), 0.8)
        nearest = min(max(0.5, low), high)
        upper = nearest * (1 - nearest)
    else:
        within = mean(repeated)
        spread = PLAN_Z * _sd(repeated) / math.sqrt(len(repeated))
        upper = max(within, min(0.25, within + spread))
    noise = mean([within / k for _, k in pairs])
    total = _sd(rates) ** 2 if len(rates) > 1 else 0.0
    between = 0.0 if assumed else max(0.0, total - noise)
    epochs = mean([float(k) for _, k in pairs])
    return TaskVariance(len(pairs), epochs, rate, within, upper, between, assumed)


def disagreement(
    baseline: Sequence[float], candidate: Sequence[float], epochs: Sequence[int],
    within: float,
) -> float:  # fmt: skip
    """The variance of two runs' true per-task differences (the tasks one model does better
    than the other, beyond epoch noise): var(d_i) - 2 within / k, never below 0."""
    deltas = [float(b) - float(c) for b, c in zip(baseline, candidate, strict=True)]
    if len(deltas) < 2:
        return 0.0
    noise = mean([2 * within / k for k in epochs])
    return max(0.0, _sd(deltas) ** 2 - noise)


def difference_sd(within: float, disagree: float, epochs: int) -> float:
    """The sd of a per-task difference between two runs of `epochs` epochs each."""
    return math.sqrt(max(0.0, disagree + 2 * within / epochs))


def tasks_needed(
    sd: float, margin: float, alpha: float = 0.025, power: float = 0.8, limit: int = 10**7
) -> int | None:
    """The fewest tasks for which a candidate as good as its baseline passes `non_inferiority`
    at `margin` with chance `power`, when the per-task differences have standard deviation
    `sd`: the least n with sqrt(n) margin >= t_{1-alpha, n-1} sqrt(sd^2 + margin (1 - margin))
    + z_power sd
    (normal approximation; `benchmarks/stats_simulation.py` checks it). None at margin 0 (an
    equal candidate is never shown better than its baseline) or past `limit`."""
    if margin <= 0:
        return None
    beta = NormalDist().inv_cdf(power)
    z = NormalDist().inv_cdf(1 - alpha)
    wide = math.hypot(sd, _floor(margin))
    n = max(2, math.ceil(((z * wide + beta * sd) / margin) ** 2))
    while math.sqrt(n) * margin < t_for(1 - 2 * alpha, n - 1) * wide + beta * sd:
        n += max(1, n // 200)
        if n > limit:
            return None
    return n


def smallest_margin(
    tasks: int, sd_at: float, alpha: float = 0.025, power: float = 0.8
) -> float:  # fmt: skip
    """The smallest margin `tasks` tasks decide with `power` (inverse of `tasks_needed`)."""
    if tasks < 2:
        return 1.0
    low, high = 1e-6, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        needed = tasks_needed(sd_at, middle, alpha, power, limit=tasks)
        low, high = (low, middle) if needed is not None and needed <= tasks else (middle, high)
    return high


def paired_rate_difference(
    first: Sequence[float],
    second: Sequence[float],
    level: float = 0.95,
) -> PairedDifference:
    """Mean of (second - first) over paired tasks, each value a task's rate in [0, 1] (its
    epochs averaged), with a MOVER interval (Newcombe 1998; Zou & Donner 2008).

    The difference is split into what was gained and what was lost, g_i = max(d_i, 0) and
    l_i = max(-d_i, 0) (a task is one or the other); each share gets its task-clustered Wilson
    interval over tasks (`clustered_totals`, its effective size
    at most the tasks), and the two are recombined with their correlation r:
    low = d - sqrt((g - g_low)^2 + (l_high - l)^2 - 2 r (g - g_low)(l_high - l)), and high
    likewise. Because a share seen as 0 of n still has a Wilson upper end of about z^2/n,
    one-sided or absent discordance is not read as certainty: with no task differing the
    interval is about +-3.84/(n + 3.84) (`degenerate`), with one task gained of ten it still
    reaches well below 0. Epochs never narrow it beyond what that many tasks allow."""
    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} and {len(second)}")
    n = len(first)
    if n == 0:
        return PairedDifference(0, 0.0, -1.0, 1.0, degenerate=True)
    deltas = [float(b) - float(a) for a, b in zip(first, second, strict=True)]
    gained = [max(d, 0.0) for d in deltas]
    lost = [max(-d, 0.0) for d in deltas]
    g = clustered_totals(gained, [1] * n, level)
    loss = clustered_totals(lost, [1] * n, level)
    r = _correlation(gained, lost)
    difference = g.estimate - loss.estimate
    down = _mover(g.estimate - g.low, loss.high - loss.estimate, r)
    up = _mover(g.high - g.estimate, loss.estimate - loss.low, r)
    spread = _sd(deltas)
    return PairedDifference(
        n,
        difference,
        max(-1.0, difference - down),
        min(1.0, difference + up),
        degenerate=not any(deltas),
        spread=spread,
    )


def _mover(one: float, two: float, r: float) -> float:
    return math.sqrt(max(0.0, one * one + two * two - 2 * r * one * two))


def sd(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1); 0 for fewer than two values."""
    return _sd(values)


def _sd(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    centre = mean(values)
    return math.sqrt(sum((v - centre) ** 2 for v in values) / (len(values) - 1))


def _correlation(xs: Sequence[float], ys: Sequence[float]) -> float:
    sx, sy = _sd(xs), _sd(ys)
    if sx == 0 or sy == 0:
        return 0.0
    mx, my = mean(xs), mean(ys)
    covariance = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (len(xs) - 1)
    return max(-1.0, min(1.0, covariance / (sx * sy)))


@dataclass(frozen=True)
class PairedDifference:
    """Second minus first, over paired items (tasks), with its interval.

    `degenerate`: no item differed. For a rate (`paired_rate_difference`) the interval is
    then the width that many tied tasks allow; for a bootstrap (cost, latency) it is [0, 0],
    which is no measured spread either way: show it as "no task differs", not as certainty."""

    n: int
    difference: float
    low: float
    high: float
    degenerate: bool = False
    spread: float = 0.0  # the standard deviation of the per-item differences


def paired_bootstrap(
    first: Sequence[float],
    second: Sequence[float],
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedDifference:
    """Mean of (second - first) over pairs, with a percentile bootstrap interval that
    resamples pairs (tasks), keeping each task's two values together."""
    return paired_bootstraps({"": (first, second)}, level, resamples, seed)[""]


def paired_bootstraps(
    pairs: dict[str, tuple[Sequence[float], Sequence[float]]],
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, PairedDifference]:
    """`paired_bootstrap` of several measures of the same items (tasks) at once, by name; each
    result equals `paired_bootstrap` of that measure alone with the same seed. A measure that
    never differs gets [0, 0], marked `degenerate`."""
    names = list(pairs)
    lengths = {len(one) for one, _ in pairs.values()} | {len(two) for _, two in pairs.values()}
    for one, two in pairs.values():
        if len(one) != len(two):
            raise ValueError(f"paired samples differ in length: {len(one)} and {len(two)}")
    if len(lengths) > 1:
        raise ValueError(f"measures differ in length: {sorted(lengths)}")
    if not names:
        return {}
    n = lengths.pop()
    if n == 0:
        return {name: PairedDifference(0, 0.0, 0.0, 0.0, degenerate=True) for name in names}
    import numpy as np

    deltas = np.column_stack(
        [np.asarray(two, dtype=float) - np.asarray(one, dtype=float) for one, two in pairs.values()]
    )
    means = np.sort(resample_means(deltas, resamples, seed), axis=0)
    found = {}
    for index, name in enumerate(names):
        column = deltas[:, index]
        spread = float(column.std(ddof=1)) if n > 1 else 0.0
        low, high = _percentiles(means[:, index], level)
        if not np.any(column != 0):
            found[name] = PairedDifference(n, 0.0, 0.0, 0.0, degenerate=True)
            continue
        found[name] = PairedDifference(n, float(column.mean()), low, high, spread=spread)
    return found


@dataclass(frozen=True)
class Ranked:
    name: str
    mean: float
    low: float
    high: float


def ci_aware_ranks(entries: Sequence[Ranked]) -> dict[str, int]:
    """Rank = 1 + the number of entries whose low end is above this entry's high end."""
    return {entry.name: 1 + sum(other.low > entry.high for other in entries) for entry in entries}


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names of the (name, cost, score) points no other point beats on both: cheaper or as
    cheap, and better or as good, strictly one of the two. Ordered by cost."""
    front = [
        (cost, name)
        for name, cost, score in points
        if not any((c <= cost and s >= score) and (c < cost or s > score) for _, c, s in points)
    ]
    return [name for _, name in sorted(front)]
