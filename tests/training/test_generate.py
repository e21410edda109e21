"""Sampling: the cached forward pass equals the full one, greedy decoding equals argmax over the
full forward pass, seeds reproduce, top-p never leaves the nucleus, stops and budgets end."""

from __future__ import annotations

import pytest
import torch

from training.generate import (
    KVCache,
    SamplingParams,
    cached_logits,
    generate,
    sample_token,
    stream_tokens,
)
from training.model import ModelConfig, MoEConfig, Transformer

VOCAB = 64


def toy_model(moe: bool = False, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(
        vocab_size=VOCAB,
        d_model=32,
        n_layers=2,
        n_heads=4,
        d_ff=64,
        max_seq_len=64,
        moe=MoEConfig(n_experts=4, top_k=2, d_expert=32, every=2) if moe else None,
        init_std=0.2,  # peaked enough that greedy paths differ between tokens
    )
    return Transformer(config).eval()


@pytest.mark.parametrize("moe", [False, True])
def test_cached_logits_equal_the_full_forward_pass(moe: bool) -> None:
    model = toy_model(moe)
    tokens = torch.randint(0, VOCAB, (1, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(tokens).logits[0]
    cache = KVCache.empty(len(model.blocks))
    prefix = cached_logits(model, tokens[:, :12], cache)  # a prefix at once ...
    torch.testing.assert_close(prefix[0], full[11], atol=1e-5, rtol=1e-4)
    several = cached_logits(model, tokens[:, 12:15], cache)  # ... several after a prefix ...
    torch.testing.assert_close(several[0], full[14], atol=1e-5, rtol=1e-4)
    for position in range(15, 20):  # ... then one at a time
        step = cached_logits(model, tokens[:, position : position + 1], cache)
        torch.testing.assert_close(step[0], full[position], atol=1e-5, rtol=1e-4)
    assert cache.length == 20


def test_greedy_generation_equals_argmax_over_the_full_forward_pass() -> None:
    model = toy_model()
    prompt = [3, 1, 4, 1, 5]
    produced = generate(model, prompt, SamplingParams(temperature=0, max_tokens=12), set())
    sequence = list(prompt)
    with torch.no_grad():
        for _ in range(12):
            sequence.append(int(model(torch.tensor([sequence])).logits[0, -1].argmax()))
    assert produced.tokens == sequence[len(prompt) :]
    assert produced.finish_reason == "length"
    assert len(set(produced.tokens)) > 1  # not a degenerate model


def test_a_seed_reproduces_a_sample_and_another_seed_differs() -> None:
    model = toy_model()
    params = SamplingParams(temperature=1.5, max_tokens=16, seed=7)
    first = generate(model, [1, 2, 3], params, set()).tokens
    again = generate(model, [1, 2, 3], params, set()).tokens
    other = generate(model, [1, 2, 3], SamplingParams(1.5, max_tokens=16, seed=8), set()).tokens
    assert first == again and first != other


def test_generation_stops_at_a_stop_token_and_includes_it() -> None:
    model = toy_model()
    greedy = generate(model, [9, 9], SamplingParams(temperature=0, max_tokens=8), set()).tokens
    stop = greedy[2]
    stopped = generate(model, [9, 9], SamplingParams(temperature=0, max_tokens=8), {stop})
    assert stopped.tokens == greedy[: greedy.index(stop) + 1]
    assert stopped.finish_reason == "stop"
    assert len(list(stream_tokens(model, [9], SamplingParams(max_tokens=3, seed=0), set()))) == 3


def test_top_p_samples_only_from_the_nucleus() -> None:
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])  # probabilities .64 .23 .09 .03 .01
    generator = torch.Generator().manual_seed(0)
    top = {sample_token(logits, SamplingParams(top_p=0.5), generator) for _ in range(200)}
    assert top == {0}
    nucleus = {sample_token(logits, SamplingParams(top_p=0.9), generator) for _ in range(400)}
    assert nucleus == {0, 1, 2}  # .64 + .23 < .9, so the third is needed; never the tail
    everything = {sample_token(logits, SamplingParams(), generator) for _ in range(2000)}
    assert everything == {0, 1, 2, 3, 4}
    assert sample_token(logits, SamplingParams(temperature=0), generator) == 0


def test_bad_sampling_parameters_are_refused() -> None:
    for bad in ({"temperature": -1}, {"top_p": 0}, {"top_p": 1.5}, {"max_tokens": 0}):
        with pytest.raises(ValueError):
            SamplingParams(**bad)


def test_a_cache_handed_on_reuses_the_shared_prefix_and_changes_nothing() -> None:
    model = toy_model()
    params = SamplingParams(temperature=0, max_tokens=6)
    first, second = [5, 6, 7, 8, 9, 10], [5, 6, 7, 8, 11]
    cache = KVCache.empty(len(model.blocks))
    out_first = generate_with(model, first, params, cache)
    assert cache.fed == first + out_first[:-1]  # the last id sampled is not fed yet
    keys_before = cache.keys[0]
    out_second = generate_with(model, second, params, cache)
    assert cache.fed[:5] == second and cache.keys[0] is not keys_before
    assert out_first == generate(model, first, params, set()).tokens
    assert out_second == generate(model, second, params, set()).tokens
    kept = KVCache.empty(len(model.blocks))
    generate_with(model, first, params, kept)
    assert kept.reuse(first) == len(first) - 1  # the last prompt id is always fed again
    assert kept.reuse([1, 2]) == 0 and kept.length == 0 and kept.keys[0] is None


def generate_with(
    model: Transformer, prompt: list[int], params: SamplingParams, cache: KVCache
) -> list[int]:
    return list(stream_tokens(model, prompt, params, set(), cache=cache))
