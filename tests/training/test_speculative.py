"""Speculative decoding: exact main-model distribution, greedy identity, acceptance = 1 - TV."""

from __future__ import annotations

import functools
import itertools

import pytest
import torch

from training.model import ModelConfig, Transformer, mtp_distillation_loss, next_token_loss
from training.muon import build_optimizers
from training.speculative import (
    acceptance_probability,
    plain_decode,
    probabilities,
    residual_distribution,
    sample,
    speculative_decode,
    total_variation,
)


def test_verification_samples_p_and_accepts_at_one_minus_total_variation() -> None:
    """The accept/resample rule on fixed p and q, 200k draws at once."""
    generator = torch.Generator().manual_seed(0)
    vocab, draws = 6, 200_000
    p = torch.tensor([0.30, 0.25, 0.20, 0.15, 0.07, 0.03])
    q = torch.tensor([0.05, 0.10, 0.15, 0.20, 0.25, 0.25])
    drafts = sample(q.expand(draws, vocab), generator)
    accepted = torch.rand(draws, generator=generator) < acceptance_probability(
        p.expand(draws, vocab), q.expand(draws, vocab), drafts
    )
    replacements = sample(residual_distribution(p, q).expand(draws, vocab), generator)
    emitted = torch.where(accepted, drafts, replacements)

    expected_rate = 1 - float(total_variation(p, q))  # 1 - 0.5 * sum|p - q| = 0.55 here
    assert abs(float(accepted.float().mean()) - expected_rate) < 0.005  # ~4.5 sigma
    frequencies = torch.bincount(emitted, minlength=vocab).float() / draws
    torch.testing.assert_close(frequencies, p, atol=0.005, rtol=0)
    # Without the residual (resampling from p on rejection) the output would be biased to q.
    naive = torch.where(accepted, drafts, sample(p.expand(draws, vocab), generator))
    naive_frequencies = torch.bincount(naive, minlength=vocab).float() / draws
    assert (naive_frequencies - p).abs().max() > 0.03


def test_greedy_probabilities_are_one_hot_and_verification_is_exact_match() -> None:
    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.5]])
    p = probabilities(logits, temperature=0)
    assert p.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    q = probabilities(torch.tensor([[0.0, 5.0, 0.0], [0.0, 5.0, 0.0]]), temperature=0)
    drafts = torch.tensor([1, 1])
    assert acceptance_probability(p, q, drafts).tolist() == [1.0, 0.0]
    assert residual_distribution(p[1], q[1]).tolist() == [1.0, 0.0, 0.0]


CYCLE = 7


@functools.cache
def _cycle_model() -> Transformer:
    """A toy model with 3 MTP heads, trained briefly on a noisy cycle so drafts often agree."""
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=16, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_seq_len=64, n_mtp_heads=3
    )
    model = Transformer(config)
    optimizers = build_optimizers(model, lr=0.02, weight_decay=0.0)
    generator = torch.Generator().manual_seed(1)
    for _ in range(40):
        start = torch.randint(0, CYCLE, (8, 1), generator=generator)
        tokens = (start + torch.arange(33)) % CYCLE
        noise = torch.rand(tokens.shape, generator=generator) < 0.15
        tokens = torch.where(noise, torch.randint(0, 16, tokens.shape, generator=generator), tokens)
        output = model(tokens[:, :-1])
        loss = next_token_loss(output.logits, tokens[:, 1:], None) + mtp_distillation_loss(output)
        for optimizer in optimizers:
            optimizer.zero_grad()
        loss.backward()
        for optimizer in optimizers:
            optimizer.step()
    return model.eval()


def test_greedy_speculative_output_is_plain_greedy_output() -> None:
    model = _cycle_model()
    generator = torch.Generator().manual_seed(2)
    accepted = rejected = 0
    for _ in range(4):
        prompt = torch.randint(0, 16, (5,), generator=generator).tolist()
        plain = plain_decode(model, prompt, max_new_tokens=24, temperature=0)
        fast = speculative_decode(model, prompt, max_new_tokens=24, temperature=0)
        assert fast.tokens == plain.tokens
        assert fast.stats.forward_passes < plain.stats.forward_passes
        accepted += fast.stats.accepted
        rejected += fast.stats.drafted - fast.stats.accepted
    assert accepted > 0 and rejected > 0  # both branches of the verifier ran


def test_sampled_acceptance_matches_exact_acceptance_probabilities() -> None:
    """Over every checked draft, accepted count ~ sum of 1 - TV(p, q) at that draft."""
    model = _cycle_model()
    generator = torch.Generator().manual_seed(3)
    accepted = expected = drafted = 0.0
    for _ in range(6):
        prompt = torch.randint(0, 16, (4,), generator=generator).tolist()
        result = speculative_decode(model, prompt, 40, temperature=1.0, generator=generator)
        accepted += result.stats.accepted
        expected += result.stats.expected_accepted
        drafted += result.stats.drafted
    # Bernoulli variance is at most 1/4 per draft: a 4-sigma bound.
    assert 0 < expected < drafted
    assert abs(accepted - expected) <= 4 * (drafted / 4) ** 0.5, (accepted, expected, drafted)


def _exact_joint(
    model: Transformer, prompt: list[int], length: int
) -> dict[tuple[int, ...], float]:
    """P(next `length` tokens) under the main model by enumerating every continuation."""
    vocab = model.config.vocab_size
    joint: dict[tuple[int, ...], float] = {(): 1.0}
    for _ in range(length):
        prefixes = list(joint)
        batch = torch.tensor([prompt + list(prefix) for prefix in prefixes])
        with torch.no_grad():
            next_probs = model(batch).logits[:, -1].float().softmax(-1)
        joint = {
            (*prefix, token): joint[prefix] * float(next_probs[i, token])
            for i, prefix in enumerate(prefixes)
            for token in range(vocab)
        }
    return joint


@pytest.mark.slow
def test_speculative_samples_follow_the_main_model_joint_distribution() -> None:
    """Untrained model, 3-token vocabulary: drafts are poor, so the residual path carries weight."""
    torch.manual_seed(4)
    config = ModelConfig(
        vocab_size=3, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq_len=16, n_mtp_heads=2
    )
    model = Transformer(config).eval()
    with torch.no_grad():  # sharper than the near-uniform init: TV(p, q) ~ 0.15-0.35 here
        model.head.weight.mul_(5)
    prompt = [1, 2]
    exact = _exact_joint(model, prompt, 3)
    generator = torch.Generator().manual_seed(5)
    draws = 1500
    counts = dict.fromkeys(itertools.product(range(3), repeat=3), 0)
    rejections = 0
    for _ in range(draws):
        result = speculative_decode(model, prompt, 3, n_draft=2, generator=generator)
        counts[tuple(result.tokens)] += 1
        rejections += result.stats.drafted - result.stats.accepted
    assert rejections > draws // 4
    assert min(exact.values()) * draws > 5  # every cell big enough for the chi-square
    # Pearson chi-square over the 27 outcomes (26 degrees of freedom; p = 0.001 at 54.05).
    chi_square = sum((counts[k] - draws * exact[k]) ** 2 / (draws * exact[k]) for k in counts)
    assert chi_square < 54.05, chi_square
