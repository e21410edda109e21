"""The held-out best-of-k is the unbiased estimate from n samples (like pass@k), and the warm
start is shared by content hash: the same settings reuse one checkpoint, other settings get
their own."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from training.checkpoint import load_model
from training.rl.run import best_of_k
from training.rl.warm_cache import cached_warm_start, warm_start_key


def test_best_of_k_is_the_mean_best_over_all_k_subsets() -> None:
    rewards = [0.0, 1.1, 0.33, 0.0, 1.0]
    for k in range(1, len(rewards) + 1):
        subsets = list(itertools.combinations(rewards, k))
        expected = sum(max(s) for s in subsets) / len(subsets)
        assert best_of_k(rewards, k) == pytest.approx(expected)
    assert best_of_k(rewards, 1) == pytest.approx(sum(rewards) / len(rewards))
    with pytest.raises(ValueError):
        best_of_k(rewards, 6)


def test_the_warm_start_is_trained_once_per_setting(tmp_path: Path) -> None:
    first = cached_warm_start(tmp_path, steps=1, seed=0, operations=["sum"], context_length=1024)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    again = cached_warm_start(tmp_path, steps=1, seed=0, operations=["sum"], context_length=1024)
    assert again == first
    assert (again / "model.safetensors").stat().st_mtime_ns == stamp  # not trained again
    assert load_model(first).config.max_seq_len == 1024
    other = warm_start_key(2, 0, ["sum"], 1024)
    assert other != warm_start_key(1, 0, ["sum"], 1024)
    assert other != warm_start_key(2, 1, ["sum"], 1024)
    assert not (tmp_path / other).exists()
