"""Statistics: hand-checked values and properties (hypothesis)."""

from __future__ import annotations

import itertools
import math
from dataclasses import astuple

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from leaderboard import stats

outcomes = st.lists(st.booleans(), min_size=1, max_size=12)


# --- hand-checked numbers ---------------------------------------------------------------------


def test_wilson_known_value() -> None:
    # 8 of 10 at 95%: the textbook Wilson interval (Newcombe 1998, Agresti & Coull 1998).
    low, high = stats.wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


def test_mcnemar_exact_against_the_closed_form() -> None:
    # p = 2 * sum_{i <= min(b, c)} C(b + c, i) / 2^(b + c)
    assert stats.mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # 0.0625
    assert stats.mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)  # 0.021484375
    assert stats.mcnemar_exact(15, 0) == pytest.approx(2 / 2**15)
    assert stats.mcnemar_exact(3, 3) == 1.0
    assert stats.mcnemar_exact(0, 0) == 1.0


def test_pass_at_k_hand_values() -> None:
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert stats.pass_at_k(10, 0, 3) == 0.0
    assert stats.pass_at_k(4, 2, 3) == 1.0  # fewer than k wrong samples: always one right
    assert stats.pass_at_k(3, 1, 1) == pytest.approx(1 / 3)


def test_best_of_k_and_mean_pass_at_k() -> None:
    runs = {"a": [False, True, False], "b": [False, False, False], "c": [True, True, True]}
    assert stats.best_of_k(runs, 1) == pytest.approx(1 / 3)
    assert stats.best_of_k(runs, 2) == pytest.approx(2 / 3)
    assert stats.mean_pass_at_k(runs, 1) == pytest.approx((1 / 3 + 0 + 1) / 3)


def test_paired_bootstrap_of_a_clear_difference_excludes_zero() -> None:
    first = [1.0] * 30 + [0.0] * 10
    second = [0.0] * 15 + [1.0] * 15 + [0.0] * 10
    paired = stats.paired_bootstrap(first, second, seed=1)
    assert paired.difference == pytest.approx(-15 / 40)
    assert paired.high < 0 < paired.n


def test_ci_aware_ranks_share_a_rank_when_intervals_overlap() -> None:
    entries = [
        stats.Ranked("top", 0.9, 0.85, 0.95),
        stats.Ranked("close", 0.83, 0.78, 0.88),  # overlaps top
        stats.Ranked("far", 0.4, 0.3, 0.5),
    ]
    assert stats.ci_aware_ranks(entries) == {"top": 1, "close": 1, "far": 3}


def test_pareto_front() -> None:
    points = [("cheap", 1.0, 0.5), ("dear", 5.0, 0.9), ("dominated", 6.0, 0.6), ("mid", 2, 0.7)]
    assert stats.pareto_front(points) == ["cheap", "mid", "dear"]


# --- properties -------------------------------------------------------------------------------


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_the_rate_and_stays_in_0_1(pair: tuple[int, int]) -> None:
    k, n = pair
    low, high = stats.wilson_interval(k, n)
    assert 0.0 <= low <= high <= 1.0
    if n:
        assert low - 1e-12 <= k / n <= high + 1e-12


@given(outcomes, st.integers(1, 12))
def test_pass_at_k_matches_its_definition(samples: list[bool], k: int) -> None:
    """pass@k = P(a k-subset of the n samples, drawn uniformly, holds a correct one)."""
    n = len(samples)
    if k > n:
        return
    subsets = list(itertools.combinations(range(n), k))
    by_definition = sum(any(samples[i] for i in subset) for subset in subsets) / len(subsets)
    assert stats.pass_at_k(n, sum(samples), k) == pytest.approx(by_definition)


@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p = stats.mcnemar_exact(b, c)
    assert 0.0 < p <= 1.0
    assert p == stats.mcnemar_exact(c, b)
    n, m = b + c, min(b, c)
    if n:
        closed = min(1.0, 2 * sum(math.comb(n, i) for i in range(m + 1)) / 2**n)
        assert p == pytest.approx(closed)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.integers(0, 5))
def test_bootstrap_interval_lies_within_the_data(values: list[float], seed: int) -> None:
    low, high = stats.bootstrap_interval(values, resamples=200, seed=seed)
    assert min(values) - 1e-9 <= low <= high <= max(values) + 1e-9
    assert stats.bootstrap_interval(values, resamples=200, seed=seed) == (low, high)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_identical_runs_get_the_tied_tasks_bound_not_a_zero_width_interval(
    values: list[float],
) -> None:
    paired = stats.paired_bootstrap(values, list(values), resamples=100)
    bound = stats.no_difference_bound(len(values))
    assert paired.degenerate and paired.difference == 0.0
    assert (paired.low, paired.high) == (-bound, bound)
    assert 0 < bound < 1


def test_the_tied_tasks_bound_is_the_rule_of_three() -> None:
    # 13 tied tasks (two runs that both solve nothing): +-24.7%, not [0, 0]
    assert stats.no_difference_bound(13) == pytest.approx(1 - 0.025 ** (1 / 13))
    assert stats.no_difference_bound(13) > 0.2
    assert stats.no_difference_bound(200) == pytest.approx(3.69 / 200, rel=0.02)
    # and it is the number of tied tasks that bounds a 2% margin
    needed = stats.tasks_to_decide(0.0, 0.0, 0.02)
    assert needed is not None
    assert stats.no_difference_bound(needed) <= 0.02 < stats.no_difference_bound(needed - 1)


@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 0.2)).map(lambda t: (t[0], t[1])),
        min_size=1,
        max_size=15,
    )
)
def test_the_best_entry_ranks_first_and_ranks_are_monotone(
    pairs: list[tuple[float, float]],
) -> None:
    entries = [stats.Ranked(str(i), m, m - h, m + h) for i, (m, h) in enumerate(pairs)]
    ranks = stats.ci_aware_ranks(entries)
    best = max(entries, key=lambda e: e.low)
    assert ranks[best.name] == 1
    for one in entries:
        for other in entries:
            if one.low > other.high:
                assert ranks[one.name] < ranks[other.name]


@given(st.lists(st.tuples(st.floats(0, 10), st.floats(0, 1)), min_size=1, max_size=15))
def test_pareto_front_points_are_not_dominated(points: list[tuple[float, float]]) -> None:
    named = [(str(i), cost, score) for i, (cost, score) in enumerate(points)]
    front = set(stats.pareto_front(named))
    assert front
    for name, cost, score in named:
        dominated = any(c <= cost and s >= score and (c < cost or s > score) for _, c, s in named)
        assert (name in front) == (not dominated)


def _pure_python_paired_bootstrap(
    first: list[float], second: list[float], resamples: int, seed: int
) -> tuple[float, float]:
    """The bootstrap as first written, in pure Python: the reference the numpy one must equal."""
    import random

    deltas = [b - a for a, b in zip(first, second, strict=True)]
    n = len(deltas)
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(deltas, k=n)) / n for _ in range(resamples))
    last = len(means) - 1
    return means[math.floor(0.025 * last)], means[math.ceil(0.975 * last)]


@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=60),
    st.integers(0, 9),
)
def test_numpy_bootstrap_draws_the_pure_python_resamples(
    pairs: list[tuple[float, float]], seed: int
) -> None:
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    assume(first != second)  # with no difference at all the interval is the tied bound
    low, high = _pure_python_paired_bootstrap(first, second, 300, seed)
    paired = stats.paired_bootstrap(first, second, resamples=300, seed=seed)
    assert paired.low == pytest.approx(low, abs=1e-12)
    assert paired.high == pytest.approx(high, abs=1e-12)
    together = stats.paired_bootstraps({"x": (first, second), "y": (second, first)}, 0.95, 300)
    alone = stats.paired_bootstrap(first, second, resamples=300)
    for got, want in zip(astuple(together["x"]), astuple(alone), strict=True):
        assert got == pytest.approx(want, abs=1e-12)
