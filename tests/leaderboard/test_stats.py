"""Statistics: hand-checked values and properties (hypothesis)."""

from __future__ import annotations

import itertools
import math
import random
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
def test_a_bootstrap_of_identical_runs_is_marked_degenerate(values: list[float]) -> None:
    paired = stats.paired_bootstrap(values, list(values), resamples=100)
    assert (paired.difference, paired.low, paired.high, paired.degenerate) == (0, 0, 0, True)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_identical_rates_get_the_tied_tasks_width_not_zero(values: list[float]) -> None:
    paired = stats.paired_rate_difference(values, list(values))
    n = len(values)
    assert paired.degenerate and paired.difference == 0.0
    assert paired.high == pytest.approx(-paired.low)
    assert 1.96**2 / (n + 1.96**2) - 1e-3 <= paired.high <= 1.0  # at least the Wilson width


def test_tied_tasks_bound_the_difference_by_the_wilson_width() -> None:
    # 13 tied tasks (two runs that both solve nothing): the continuity-corrected Wilson
    # upper end of 0 of 13, not [0, 0]
    tied = stats.paired_rate_difference([0.0] * 13, [0.0] * 13)
    assert tied.high == pytest.approx(stats.wilson_corrected(0.0, 13, stats.z_for(0.95))[1])
    assert tied.low == -tied.high and tied.high > 0.25
    needed = stats.tasks_needed(0.0, 0.02)
    assert needed == 191  # the rule's bound on tied tasks: t * sqrt(0.02 * 0.98 / n) < 0.02
    for n, inside in ((needed, True), (needed - 1, False)):
        rule = stats.non_inferiority([1.0] * n, [1.0] * n, 0.02)
        assert (rule.outcome == "pass") is inside


def test_one_sided_discordance_is_not_certainty() -> None:
    # one task gained of ten, none lost: the bootstrap said [0, 0.3]; 10 tasks cannot rule
    # out a loss
    paired = stats.paired_rate_difference([0.0] * 10, [1.0] + [0.0] * 9)
    assert paired.difference == pytest.approx(0.1)
    assert paired.low < -0.1 and paired.high < 1
    old = stats.paired_bootstrap([0.0] * 10, [1.0] + [0.0] * 9)
    assert old.low == 0.0  # the measured fault, for the record


@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=40),
    st.integers(1, 5),
)
def test_the_rate_difference_contains_its_estimate_inside_minus_1_1(
    pairs: list[tuple[float, float]], epochs: int
) -> None:
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    paired = stats.paired_rate_difference(first, second)
    assert -1.0 <= paired.low <= paired.difference + 1e-12
    assert paired.difference - 1e-12 <= paired.high <= 1.0
    assert paired.low < paired.high


def test_clustered_interval_hand_values() -> None:
    # 13 tasks x 3 epochs, 10 always solved, 3 never: the Wilson over 39 attempts would say
    # [61.7%, 87.4%]; the tasks are 13 samples, not 39
    rate = stats.clustered_interval([[1, 1, 1]] * 10 + [[0, 0, 0]] * 3)
    assert rate.estimate == pytest.approx(10 / 13) and not rate.degenerate
    assert (rate.clusters, rate.n) == (13, 39)
    assert rate.low < stats.wilson_interval(10, 13)[0] < stats.wilson_interval(30, 39)[0]
    # with one epoch and 0/1 outcomes it is the continuity-corrected Wilson over tasks: wider
    one = stats.clustered_interval([[1]] * 10 + [[0]] * 3)
    assert one.low < stats.wilson_interval(10, 13)[0]
    # every task alike: degenerate, each task one trial, never [0, 0]
    none = stats.clustered_interval([[0, 0, 0]] * 13)
    z = stats.z_for(0.95)
    assert none.degenerate and (none.low, none.high) == stats.wilson_corrected(0.0, 13, z)
    assert stats.clustered_interval([]).degenerate


@given(st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=5), min_size=1, max_size=30))
def test_clustered_intervals_stay_in_0_1_and_contain_the_mean(
    clusters: list[list[float]],
) -> None:
    rate = stats.clustered_interval(clusters)
    assert 0.0 <= rate.low <= rate.estimate + 1e-9 <= rate.high + 2e-9 <= 1.0 + 2e-9
    assert rate.high - rate.low > 0  # never certainty


def test_t_quantiles() -> None:
    # Student t 97.5% quantiles (tables): df 1, 2, 3, 5, 12, 30
    for df, value in ((1, 12.7062), (2, 4.3027), (3, 3.1824), (5, 2.5706), (12, 2.1788),
                      (30, 2.0423)):  # fmt: skip
        assert stats.t_for(0.95, df) == pytest.approx(value, rel=2e-3)


@given(st.integers(0, 30), st.integers(0, 30))
def test_the_sign_flip_test_over_0_1_tasks_is_exact_mcnemar(b: int, c: int) -> None:
    deltas = [-1.0] * b + [1.0] * c + [0.0] * 5
    assert stats.sign_flip_p(deltas, scale=1) == pytest.approx(stats.mcnemar_exact(b, c))


def test_the_exact_sign_flip_test_with_epochs_matches_enumeration() -> None:
    deltas = [1 / 3, -2 / 3, 1.0, 1.0, 1 / 3, 0.0, 2 / 3]
    nonzero = [d for d in deltas if d]
    observed = abs(sum(nonzero))
    sums = [abs(sum(s * d for s, d in zip(signs, nonzero, strict=True)))
            for signs in itertools.product((-1, 1), repeat=len(nonzero))]  # fmt: skip
    exact = sum(total >= observed - 1e-9 for total in sums) / len(sums)
    assert stats.sign_flip_p(deltas, scale=3) == pytest.approx(exact)
    assert stats.sign_flip_p(deltas, resamples=20000) == pytest.approx(exact, abs=0.02)
    assert stats.sign_flip_p([0.0, 0.0]) == 1.0


def test_tasks_needed() -> None:
    # spread 0.2 per task, margin 2%, alpha 2.5%, 80% power: about
    # ((1.96 * sqrt(0.04 + 0.0196) + 0.8416 * 0.2) / 0.02)^2 = 1047 tasks (t adds a few)
    needed = stats.tasks_needed(0.2, 0.02)
    assert needed is not None and 1047 <= needed <= 1060
    n = needed
    assert n**0.5 * 0.02 >= stats.t_for(0.95, n - 1) * (0.04 + 0.0196) ** 0.5 + 0.8416 * 0.2
    half = stats.tasks_needed(0.2, 0.02, power=0.5)  # the bound alone
    assert half is not None and half < needed
    assert stats.tasks_needed(0.2, 0.0) is None  # an equal candidate never beats margin 0


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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_float_sign_flip_table_matches_the_integer_one(seed: int) -> None:
    """Past EXACT_INTEGER_STEPS the exact test is built in probabilities (milliseconds at
    thousands of tasks, not seconds); both tables agree to ~1e-12."""
    rng = random.Random(seed)
    steps = [rng.choice([1, 1, 2, 3]) for _ in range(250)]
    observed = rng.randrange(0, 50)
    exact = stats._sign_flip_exact(steps, observed)
    assert sum(steps) <= stats.EXACT_INTEGER_STEPS  # so `exact` was counted in integers
    assert stats._sign_flip_float(steps, observed) == pytest.approx(exact, rel=1e-12, abs=1e-15)


def test_resample_counts_are_drawn_once_per_task_count_and_shared_read_only() -> None:
    counts = stats.resample_counts(50, 200, 3)
    assert stats.resample_counts(50, 200, 3) is counts  # a second comparison draws nothing
    assert not counts.flags.writeable
    assert counts.shape == (200, 50) and (counts.sum(axis=1) == 50).all()
    assert stats.resample_counts(50, 200, 4) is not counts
