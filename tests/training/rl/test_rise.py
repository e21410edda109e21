"""The paired rise: zero when nothing changed, above zero only when the checkpoint's rewards
rose sample by sample, refused when the two lists are not paired; and the coupling it rests
on, the sampler writing the same tokens for two close policies given one seed."""

from __future__ import annotations

import copy

import pytest
import torch

from training.model import ModelConfig, Transformer
from training.rl.policy import Sampler
from training.rl.rise import paired_rise


def test_the_same_rewards_do_not_rise() -> None:
    rewards = [0.0, 1.0, 1.1, 0.33] * 4
    rise = paired_rise(rewards, list(rewards))
    assert (rise.difference, rise.low, rise.high, rise.improved, rise.worsened) == (0, 0, 0, 0, 0)
    assert not rise.rose


def test_a_rise_sample_by_sample_is_above_zero_and_a_mixed_one_is_not() -> None:
    flat = [0.0] * 12 + [1.0] * 4
    assert paired_rise([1.0] * 10 + [0.0] * 2 + [1.0] * 4, flat).rose
    mixed = paired_rise([1.0] * 3 + [0.0] * 9 + [0.0, 0.0, 1.0, 1.0], flat)
    assert mixed.improved == 3 and mixed.worsened == 2 and not mixed.rose
    assert mixed.low < 0 < mixed.high


def test_the_bootstrap_keeps_each_task_s_samples_apart() -> None:
    """Two tasks of four samples: only the second rose; blocks stay within their task."""
    rise = paired_rise([0.0] * 4 + [1.0] * 4, [0.0] * 8, tasks=2)
    assert rise.difference == 0.5 and rise.low == rise.high == 0.5


@pytest.mark.parametrize(
    ("trained", "flat", "tasks"), [([1.0], [1.0, 0.0], 1), ([1.0] * 3, [0.0] * 3, 2), ([], [], 1)]
)
def test_unpaired_rewards_are_refused(trained: list[float], flat: list[float], tasks: int) -> None:
    with pytest.raises(ValueError, match="not paired"):
        paired_rise(trained, flat, tasks)


def test_one_seed_couples_the_samples_of_two_close_policies() -> None:
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=48, d_model=32, n_layers=1, n_heads=2, d_ff=64, max_seq_len=64)
    model = Transformer(config)
    moved = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in moved.parameters():
            parameter.add_(0.02 * torch.randn_like(parameter))
    same = differ = 0  # first tokens equal: the moved policy's, another seed's
    for seed in range(40):
        first = Sampler(model).sample([1, 2, 3], 1, set(), seed).tokens
        same += Sampler(moved).sample([1, 2, 3], 1, set(), seed).tokens == first
        differ += Sampler(model).sample([1, 2, 3], 1, set(), seed + 1000).tokens == first
    assert same >= 30 and differ <= 6  # seen: 38 and 1; independent draws: about 1
