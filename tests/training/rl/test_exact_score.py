"""Exact held-out scores over trajectories: on a pool of every possible trajectory they are
the policy's true mean reward and best-of-k (checked by enumeration), on a partial pool
lower bounds with the mass they miss, and a trajectory's probability is the sampler's."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch

from training.model import ModelConfig, Transformer
from training.rl.exact_score import (
    Trajectory,
    best_of_k,
    exact_score,
    load_pool,
    log_probability,
    save_pool,
    trajectories,
)
from training.rl.learner import Rollout
from training.rl.policy import Sampler

CONTEXT = (1, 2, 3)
VOCAB = 6


def _model(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=VOCAB, d_model=16, n_layers=1, n_heads=2, d_ff=32)
    return Transformer(config)


def _reward(tokens: tuple[int, ...]) -> float:
    return {0: 0.0, 1: 1 / 3}.get(tokens.count(4), 1.1)  # two 4s: the "reference"


def _every_trajectory() -> list[Trajectory]:
    return [
        Trajectory("t", ((CONTEXT, tokens),), _reward(tokens))
        for tokens in itertools.product(range(VOCAB), repeat=2)
    ]


def test_a_trajectory_s_probability_is_the_sampler_s() -> None:
    model = _model()
    segment = Sampler(model).sample(list(CONTEXT), 2, set(), seed=3)
    rollout = Rollout("t", 0, [segment], 1.0)
    (trajectory,) = trajectories([rollout, rollout])  # the same one twice: kept once
    assert log_probability(model, trajectory) == pytest.approx(sum(segment.logprobs), abs=1e-5)


def test_over_every_trajectory_the_scores_are_the_true_ones() -> None:
    model = _model()
    pool = _every_trajectory()
    probabilities = [math.exp(log_probability(model, t)) for t in pool]
    rewards = [t.reward for t in pool]
    mean = sum(p * r for p, r in zip(probabilities, rewards, strict=True))
    pairs = itertools.product(range(len(pool)), repeat=2)
    best_of_two = sum(
        probabilities[i] * probabilities[j] * max(rewards[i], rewards[j]) for i, j in pairs
    )
    score = exact_score(model, pool, k=2)
    assert score.covered == pytest.approx(1.0, abs=1e-5)
    assert score.mean_reward == pytest.approx(mean, abs=1e-6)
    assert score.best_of_k == pytest.approx(best_of_two, abs=1e-6)
    assert exact_score(model, pool, k=1).best_of_k == pytest.approx(mean, abs=1e-6)


def test_a_partial_pool_gives_lower_bounds_and_the_mass_it_misses() -> None:
    model = _model()
    full = exact_score(model, _every_trajectory(), k=3)
    part = exact_score(model, _every_trajectory()[::2], k=3)
    assert part.covered < 0.9
    assert part.mean_reward < full.mean_reward and part.best_of_k < full.best_of_k


def test_best_of_k_with_the_unseen_mass_at_zero() -> None:
    assert best_of_k([0.5], [1.0], 2) == pytest.approx(0.75)
    assert best_of_k([0.5], [1.0], 1) == pytest.approx(0.5)
    assert best_of_k([0.25, 0.75], [1.0, 0.5], 2) == pytest.approx(1 - 0.75**2 + 0.5 * 0.75**2)
    assert best_of_k([], [], 4) == 0.0


def test_two_policies_on_one_pool_differ_only_by_their_weights(tmp_path: Path) -> None:
    pool = _every_trajectory()
    save_pool(tmp_path / "pool.jsonl", pool[:20])
    save_pool(tmp_path / "pool.jsonl", pool[10:])  # overlapping appends: each kept once
    loaded = load_pool(tmp_path / "pool.jsonl")
    assert loaded == pool
    same = _model()
    assert exact_score(same, loaded, 2) == exact_score(_model(), loaded, 2)
    assert exact_score(_model(seed=1), loaded, 2) != exact_score(same, loaded, 2)


def test_an_empty_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="no trajectories"):
        exact_score(_model(), [], 2)
