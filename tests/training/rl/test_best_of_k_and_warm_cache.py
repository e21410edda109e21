"""Held-out best-of-k is the exact expectation over k-subsets of the samples; the warm start
is cached by content, so a second run with the same settings loads the first's weights."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from training.checkpoint import load_model
from training.rl.run import best_of_k
from training.rl.warm_cache import cached_warm_start, warm_start_key


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_best_of_k_is_the_mean_best_over_all_k_subsets(k: int) -> None:
    rewards = [0.0, 1.1, 0.333, 0.0, 1.1]
    subsets = list(itertools.combinations(rewards, k))
    expected = sum(max(s) for s in subsets) / len(subsets)
    assert best_of_k(rewards, k) == pytest.approx(expected)
    with pytest.raises(ValueError):
        best_of_k(rewards, len(rewards) + 1)


def test_the_warm_start_is_trained_once_per_content(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    first = cached_warm_start(tmp_path, steps=2, seed=0, operations=["sum"])
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    again = cached_warm_start(tmp_path, steps=2, seed=0, operations=["sum"])
    assert again == first
    assert (again / "model.safetensors").stat().st_mtime_ns == stamp  # loaded, not retrained
    assert (first / "tokenizer.json").exists()
    assert warm_start_key(2, 1, ["sum"], 1536) != warm_start_key(2, 0, ["sum"], 1536)
    assert warm_start_key(3, 0, ["sum"], 1536) != warm_start_key(2, 0, ["sum"], 1536)
    fresh = cached_warm_start(tmp_path / "other", steps=2, seed=0, operations=["sum"])
    a, b = load_model(first).state_dict(), load_model(fresh).state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)  # deterministic in its key
