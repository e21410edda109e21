"""Speculative decoding with the model's own MTP heads as the drafter.

One forward pass of the main model over `committed + drafts` does two jobs: its main-head
logits verify the K drafted tokens (standard speculative sampling: accept draft d with
probability min(1, p(d) / q(d)), on the first rejection sample from the residual
normalize(max(0, p - q)), after K acceptances sample a bonus token from p), and its MTP heads,
read at the position before the last committed token, propose the next K drafts. MTP head k at
position t predicts token t + k + 2 without seeing token t + 1, so the drafts it makes there
depend only on committed tokens. Every emitted token is therefore distributed exactly as the
main model would sample it; the acceptance probability of a draft is 1 - TV(p, q).

Greedy decoding (temperature 0) is the same algorithm with one-hot p and q, and reproduces
plain greedy decoding token for token.

Sampling happens on the CPU (one vocabulary-sized row per token), so a CPU `generator` makes
runs reproducible whatever device the model is on.

No KV cache: each forward pass recomputes the whole prefix, for plain decoding as well, so the
speedup measured here is in forward passes, each slightly longer when it carries drafts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from training.model import Transformer


def probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Sampling distribution over the last dimension; temperature 0 is one-hot argmax."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return (logits.float() / temperature).softmax(-1)


def acceptance_probability(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor) -> torch.Tensor:
    """min(1, p(draft) / q(draft)) for drafts drawn from q; batched over leading dimensions."""
    index = draft.unsqueeze(-1)
    p_draft = p.gather(-1, index).squeeze(-1)
    q_draft = q.gather(-1, index).squeeze(-1)
    return (p_draft / q_draft).clamp(max=1.0)


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """normalize(max(0, p - q)): what to sample from after rejecting a draft from q.

    Where p == q (so a rejection has probability 0) the residual is empty; p is returned then.
    """
    residual = (p - q).clamp(min=0)
    total = residual.sum(-1, keepdim=True)
    return torch.where(total > 0, residual / total.clamp(min=1e-30), p)


def total_variation(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return 0.5 * (p - q).abs().sum(-1)


def sample(distribution: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of `distribution` (`[..., V]` -> `[...]`)."""
    flat = distribution.reshape(-1, distribution.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(distribution.shape[:-1])


@dataclass
class DecodeStats:
    forward_passes: int = 0
    drafted: int = 0  # drafts that were checked (the ones after a rejection are not)
    accepted: int = 0
    # Sum over checked drafts of their exact acceptance probability 1 - TV(p, q).
    expected_accepted: float = 0.0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0


@dataclass
class Decoded:
    tokens: list[int]  # generated tokens only (an eos that stopped decoding is included)
    stats: DecodeStats = field(default_factory=DecodeStats)

    @property
    def tokens_per_forward(self) -> float:
        return len(self.tokens) / max(self.stats.forward_passes, 1)


def _finish(tokens: list[int], max_new_tokens: int, eos_id: int | None) -> list[int]:
    tokens = tokens[:max_new_tokens]
    if eos_id is not None and eos_id in tokens:
        tokens = tokens[: tokens.index(eos_id) + 1]
    return tokens


def _done(tokens: list[int], max_new_tokens: int, eos_id: int | None) -> bool:
    return len(tokens) >= max_new_tokens or (eos_id is not None and eos_id in tokens)


def _check_prompt(prompt: Sequence[int], max_new_tokens: int) -> None:
    if not prompt:
        raise ValueError("the prompt needs at least one token")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")


@torch.no_grad()
def plain_decode(
    model: Transformer,
    prompt: Sequence[int],
    max_new_tokens: int,
    temperature: float = 1.0,
    eos_id: int | None = None,
    generator: torch.Generator | None = None,
) -> Decoded:
    """Token-by-token sampling from the main head (the reference the speculative decoder meets)."""
    _check_prompt(prompt, max_new_tokens)
    device = next(model.parameters()).device
    stats = DecodeStats()
    tokens = list(prompt)
    new: list[int] = []
    while not _done(new, max_new_tokens, eos_id):
        logits = model(torch.tensor([tokens + new], device=device)).logits[0, -1].cpu()
        stats.forward_passes += 1
        new.append(int(sample(probabilities(logits, temperature), generator)))
    return Decoded(_finish(new, max_new_tokens, eos_id), stats)


@torch.no_grad()
def speculative_decode(
    model: Transformer,
    prompt: Sequence[int],
    max_new_tokens: int,
    temperature: float = 1.0,
    n_draft: int | None = None,
    eos_id: int | None = None,
    generator: torch.Generator | None = None,
) -> Decoded:
    """Sample like `plain_decode`, drafting `n_draft` tokens per forward with the MTP heads."""
    _check_prompt(prompt, max_new_tokens)
    n_heads = len(model.mtp_heads)
    drafts_per_step = n_heads if n_draft is None else n_draft
    if not 1 <= drafts_per_step <= n_heads:
        raise ValueError(f"n_draft must be in 1..{n_heads} (the model's MTP heads)")
    device = next(model.parameters()).device
    stats = DecodeStats()
    tokens = list(prompt)

    output = model(torch.tensor([tokens], device=device))
    stats.forward_passes += 1
    new = [int(sample(probabilities(output.logits[0, -1].cpu(), temperature), generator))]
    # Draft logits for the tokens after the last committed one, read one position before it.
    draft_position = len(tokens) - 1
    while not _done(new, max_new_tokens, eos_id):
        draft_logits = torch.stack(
            [head[0, draft_position] for head in output.mtp_logits[:drafts_per_step]]
        ).cpu()
        q = probabilities(draft_logits, temperature)  # [K, V]
        drafts = sample(q, generator)  # [K]
        committed = len(tokens) + len(new)
        sequence = tokens + new + drafts.tolist()
        output = model(torch.tensor([sequence], device=device))
        stats.forward_passes += 1
        # Row j is the main model's distribution for token index committed + j.
        p = probabilities(output.logits[0, committed - 1 :].cpu(), temperature)  # [K + 1, V]
        accepted, next_token = _verify(p, q, drafts, stats, generator)
        new.extend(drafts[:accepted].tolist())
        new.append(next_token)
        draft_position = committed + accepted - 1
    return Decoded(_finish(new, max_new_tokens, eos_id), stats)


def _verify(
    p: torch.Tensor,
    q: torch.Tensor,
    drafts: torch.Tensor,
    stats: DecodeStats,
    generator: torch.Generator | None,
) -> tuple[int, int]:
    """How many drafts to keep, and the token after them (residual or bonus sample)."""
    n_drafts = drafts.shape[0]
    accept_probability = acceptance_probability(p[:n_drafts], q, drafts)
    exact = 1.0 - total_variation(p[:n_drafts], q)
    uniforms = torch.rand(n_drafts, generator=generator)
    for j in range(n_drafts):
        stats.drafted += 1
        stats.expected_accepted += float(exact[j])
        if uniforms[j] < accept_probability[j]:
            stats.accepted += 1
            continue
        return j, int(sample(residual_distribution(p[j], q[j]), generator))
    return n_drafts, int(sample(p[n_drafts], generator))
