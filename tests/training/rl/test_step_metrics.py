"""What a learner step logs to say whether it can learn: the share of groups with a non-zero
advantage, the sampled tokens' mean -log p, and KL to the reference (0 against itself)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from training.model import ModelConfig, Transformer
from training.rl.learner import Learner, LearnerConfig, Rollout
from training.rl.microtasks import write_micro_tasks
from training.rl.policy import Sampler


def _model() -> Transformer:
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=12, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq_len=32)
    return Transformer(config)


def test_a_step_logs_advantage_share_entropy_and_kl_to_the_reference() -> None:
    model = _model()
    learner = Learner(
        model, LearnerConfig(lr=1e-2, group_size=2, max_tokens=4), copy.deepcopy(model)
    )
    sampler = Sampler(model)
    segments = [sampler.sample([1, 2, 3], 4, set(), seed) for seed in range(4)]
    rewards = [1.0, 0.0, 0.5, 0.5]  # the first group differs, the second does not
    rollouts = [
        Rollout("t", i // 2, [s], r) for i, (s, r) in enumerate(zip(segments, rewards, strict=True))
    ]
    metrics = learner.step(rollouts)
    assert metrics.nonzero_groups == 0.5
    logps = [lp for s in segments for lp in s.logprobs]
    assert metrics.entropy == pytest.approx(-sum(logps) / len(logps), rel=1e-5)
    assert metrics.kl_ref == pytest.approx(0.0, abs=1e-6)  # the policy was the reference
    later = learner.step(rollouts)  # the weights moved: KL to the reference is now positive
    assert later.kl_ref > 0.0


def test_flat_rate_is_allowed_and_moves_nothing() -> None:
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    learner = Learner(model, LearnerConfig(lr=0.0, group_size=2, max_tokens=4))
    sampler = Sampler(model)
    rollouts = [Rollout("t", 0, [sampler.sample([1, 2], 4, set(), s)], float(s)) for s in (0, 1)]
    learner.step(rollouts)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_micro_tasks_of_one_operation(tmp_path: Path) -> None:
    paths = write_micro_tasks(tmp_path, held_out=True, operations=["sum"])
    assert [p.stem for p in paths] == ["micro-sum-held-0", "micro-sum-held-1"]
    with pytest.raises(ValueError, match="choose from"):
        write_micro_tasks(tmp_path, operations=["quotient"])


def _rollouts(model: Transformer) -> list[Rollout]:
    sampler = Sampler(model)
    segments = [sampler.sample([1, 2, 3], 6, set(), seed) for seed in range(8)]
    return [Rollout("t", i // 4, [s], float(i % 2)) for i, s in enumerate(segments)]


def test_a_step_past_the_kl_bound_is_retried_at_a_lower_rate() -> None:
    """At a rate that moves the batch far in one step, the bound undoes and retries it: the
    step kept is within the bound, taken at a halved rate, and the weights moved less."""
    free = _model()
    unbounded = Learner(free, LearnerConfig(lr=0.3, group_size=4, max_tokens=6))
    moved = unbounded.step(_rollouts(_model()))
    assert moved.step_kl > 0.01 and moved.step_lr == 0.3
    bounded_model = _model()
    config = LearnerConfig(lr=0.3, group_size=4, max_tokens=6, max_step_kl=0.01, step_retries=12)
    bounded = Learner(bounded_model, config)
    kept = bounded.step(_rollouts(_model()))
    assert kept.step_kl <= 0.01 and kept.step_lr < 0.3
    assert bounded.optimizer.param_groups[0]["lr"] == 0.3  # the configured rate again
    start = _model().state_dict()
    distance = lambda m: sum(float((v - start[k]).abs().sum()) for k, v in m.state_dict().items())  # noqa: E731
    assert 0 < distance(bounded_model) < distance(free)


def test_a_step_within_the_bound_is_taken_once_at_the_full_rate() -> None:
    model = _model()
    config = LearnerConfig(lr=1e-4, group_size=4, max_tokens=6, max_step_kl=0.5)
    kept = Learner(model, config).step(_rollouts(_model()))
    assert kept.step_lr == 1e-4 and 0 < kept.step_kl <= 0.5
