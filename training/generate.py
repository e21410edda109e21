"""Sampling from a `Transformer`: temperature, nucleus (top-p), a token budget, stop tokens, a seed.

Decoding keeps a key/value cache per layer, so each new token costs one position's forward pass
instead of the whole sequence's; a cache handed from one call to the next also spares the
prefix two prompts share (an agent's system prompt and tools, its conversation so far). The
cached forward pass reuses the model's own modules (its projections, norms and feed-forward
layers) and only re-implements how attention reads the cache; `cached_logits` equals the last
position of `Transformer.forward` (a test checks it).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F

from training.model import Attention, Block, Transformer, apply_rope, rope_tables

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each token. `temperature` 0 is greedy; `top_p` 1 keeps the whole vocabulary."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, not {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], not {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {self.max_tokens}")


@dataclass
class Generation:
    tokens: list[int]  # what was generated, the stop token included when one ended it
    finish_reason: FinishReason


@dataclass
class KVCache:
    """Keys and values of every position seen so far, per layer: `[B, heads, T, head_dim]`.

    `fed` lists the ids fed so far (batch of one), so a later prompt that starts the same way
    reuses their keys and values (`reuse`) instead of computing them again."""

    keys: list[torch.Tensor | None] = field(default_factory=list)
    values: list[torch.Tensor | None] = field(default_factory=list)
    length: int = 0
    fed: list[int] = field(default_factory=list)

    @classmethod
    def empty(cls, n_layers: int) -> KVCache:
        return cls(keys=[None] * n_layers, values=[None] * n_layers)

    def truncate(self, length: int) -> None:
        """Keep the first `length` positions."""
        if length >= self.length:
            return
        for layer, (k, v) in enumerate(zip(self.keys, self.values, strict=True)):
            if k is not None and v is not None:
                self.keys[layer] = k[:, :, :length] if length else None
                self.values[layer] = v[:, :, :length] if length else None
        self.length = length
        del self.fed[length:]

    def reuse(self, prompt: list[int]) -> int:
        """Keep the longest prefix shared with `prompt` (never all of it: its last id must be
        fed to get the next token's logits); returns how many positions were kept."""
        shared = 0
        limit = min(len(self.fed), len(prompt) - 1)
        while shared < limit and self.fed[shared] == prompt[shared]:
            shared += 1
        self.truncate(shared)
        return shared


def _cached_attention(
    attn: Attention,
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    cache: KVCache,
    layer: int,
) -> torch.Tensor:
    batch, time, _ = x.shape

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(batch, time, attn.n_heads, attn.head_dim).transpose(1, 2)

    q = apply_rope(heads(attn.wq(x)), cos, sin)
    k = apply_rope(heads(attn.wk(x)), cos, sin)
    v = heads(attn.wv(x))
    past_k, past_v = cache.keys[layer], cache.values[layer]
    if past_k is not None and past_v is not None:
        k = torch.cat((past_k, k), dim=2)
        v = torch.cat((past_v, v), dim=2)
    cache.keys[layer], cache.values[layer] = k, v
    past = k.shape[2] - time
    if past == 0:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    elif time == 1:  # one new position sees everything before it
        out = F.scaled_dot_product_attention(q, k, v)
    else:  # several new positions after a cached prefix: causal over the whole sequence
        rows = torch.arange(time, device=x.device)[:, None] + past
        allowed = torch.arange(past + time, device=x.device)[None, :] <= rows
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    return attn.wo(out.transpose(1, 2).reshape(batch, time, -1))


def _cached_block(
    block: Block, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    x = x + _cached_attention(block.attn, block.attn_norm(x), cos, sin, cache, layer)
    ffn_out = block.ffn(block.ffn_norm(x))
    if isinstance(ffn_out, tuple):  # MoE: (output, chosen experts, aux loss)
        ffn_out = ffn_out[0]
    return x + ffn_out


@torch.no_grad()
def cached_logits(
    model: Transformer, tokens: torch.Tensor, cache: KVCache, rope_base: float | None = None
) -> torch.Tensor:
    """Feed `tokens` `[B, T]` after what `cache` holds; the logits `[B, V]` at the last one."""
    time = tokens.shape[1]
    start = cache.length
    base = model.config.rope_base if rope_base is None else rope_base
    cos, sin = rope_tables(start + time, model.config.head_dim, base, tokens.device)
    cos, sin = cos[start:], sin[start:]
    x = model.embed(tokens)
    for layer, block in enumerate(model.blocks):
        x = _cached_block(block, x, cos, sin, cache, layer)  # type: ignore[arg-type]
    cache.length += time
    return model.head(model.norm(x[:, -1]))


def sample_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> int:
    """One token id from the logits `[V]` of one position."""
    if params.temperature == 0:
        return int(logits.argmax())
    probs = (logits.float() / params.temperature).softmax(-1)
    if params.top_p < 1:
        sorted_probs, order = probs.sort(descending=True)
        before = sorted_probs.cumsum(-1) - sorted_probs  # mass of the tokens ranked above
        sorted_probs = torch.where(before < params.top_p, sorted_probs, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))


def stream_tokens(
    model: Transformer,
    prompt: list[int],
    params: SamplingParams,
    stop_ids: set[int],
    rope_base: float | None = None,
    cache: KVCache | None = None,
) -> Generator[int, None, None]:
    """Yield generated token ids one by one, ending after a stop id or `max_tokens` ids.

    With a `cache` from an earlier call (same model, same RoPE base), the prefix it shares with
    `prompt` is not computed again; the cache then holds this sequence."""
    if not prompt:
        raise ValueError("an empty prompt")
    generator = torch.Generator()
    if params.seed is None:
        generator.seed()
    else:
        generator.manual_seed(params.seed)
    device = next(model.parameters()).device
    if cache is None:
        cache = KVCache.empty(len(model.blocks))
    was_training = model.training
    model.eval()
    try:
        shared = cache.reuse(prompt)
        rest = torch.tensor([prompt[shared:]], device=device)
        logits = cached_logits(model, rest, cache, rope_base)
        cache.fed.extend(prompt[shared:])
        for index in range(params.max_tokens):
            token = sample_token(logits[0].cpu(), params, generator)
            yield token
            if token in stop_ids or index == params.max_tokens - 1:
                return
            logits = cached_logits(model, torch.tensor([[token]], device=device), cache, rope_base)
            cache.fed.append(token)
    except Exception:
        cache.truncate(0)  # a fault mid-update may have left layers out of step
        raise
    finally:
        model.train(was_training)


def generate(
    model: Transformer,
    prompt: list[int],
    params: SamplingParams,
    stop_ids: set[int],
    rope_base: float | None = None,
) -> Generation:
    """The whole continuation of `prompt` and why it ended."""
    tokens = list(stream_tokens(model, prompt, params, stop_ids, rope_base))
    finish: FinishReason = "stop" if tokens and tokens[-1] in stop_ids else "length"
    return Generation(tokens=tokens, finish_reason=finish)
