"""Statistics for the leaderboard and the gate: pure functions of numbers, no I/O.

- intervals for a run's mean: `wilson_interval` (a rate), `normal_interval` and
  `bootstrap_interval` (any score);
- `pass_at_k` (the unbiased estimator of Chen et al. 2021) and `best_of_k` over epochs;
- paired comparison of two runs on their shared tasks: `mcnemar_exact` for resolved,
  `paired_bootstrap` for continuous scores, cost and latency;
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

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


def resample_means(columns: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of each column of `columns` (items x k) over `resamples` bootstrap resamples of
    its rows: a (resamples x k) array.

    The resamples are exactly those `random.Random(seed).choices(items, k=n)` would draw, one
    after another (Python's Mersenne Twister state is handed to numpy's, whose `random_sample`
    is the same 53-bit draw, and `choices` takes `floor(random() * n)`), so results equal the
    pure-Python bootstrap's up to floating-point summation order; columns share the draws."""
    import numpy as np

    n = columns.shape[0]
    state = random.Random(seed).getstate()[1]
    generator = np.random.RandomState()
    # (name, key, position, has_gauss, cached_gaussian): no Gaussian is cached, as in a fresh state
    generator.set_state(("MT19937", np.array(state[:624], dtype=np.uint32), state[624], 0, 0.0))
    means = np.empty((resamples, columns.shape[1]))
    per_chunk = max(1, RESAMPLE_CHUNK // n)
    for start in range(0, resamples, per_chunk):
        rows = min(per_chunk, resamples - start)
        draws = generator.random_sample(rows * n)
        draws *= n
        picks = draws.astype(np.int64)  # floor: draws are not negative
        picks += np.repeat(np.arange(rows, dtype=np.int64) * n, n)  # one bin range per resample
        counts = np.bincount(picks, minlength=rows * n).reshape(rows, n).astype(np.float64)
        means[start : start + rows] = counts @ columns / n
    return means


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


@dataclass(frozen=True)
class PairedDifference:
    """Second minus first, over paired items, with its interval."""

    n: int
    difference: float
    low: float
    high: float


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
    result equals `paired_bootstrap` of that measure alone with the same seed."""
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
        return {name: PairedDifference(0, 0.0, 0.0, 0.0) for name in names}
    import numpy as np

    deltas = np.column_stack(
        [np.asarray(two, dtype=float) - np.asarray(one, dtype=float) for one, two in pairs.values()]
    )
    means = np.sort(resample_means(deltas, resamples, seed), axis=0)
    found = {}
    for index, name in enumerate(names):
        low, high = _percentiles(means[:, index], level)
        found[name] = PairedDifference(n, float(deltas[:, index].mean()), low, high)
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
