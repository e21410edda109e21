"""Sampling for RL: every generated token stamped with the policy version that produced it,
its log-prob under that policy, and the MoE experts the router chose (router replay).

A `Sampler` owns a model and its version. Between any two tokens it calls `sync()`, which
applies whatever weight deltas have arrived (an in-flight update): a long rollout continues
on the new weights, keeping the keys and values it already computed, and each token says
which version sampled it. Routes are recorded by forward hooks on the MoE layers, so the
cached decode path (`training.generate.cached_logits`) is the one that samples.

The training pass scores `context + tokens[:-1]` with the recorded routes forced
(`segment_logprobs`), so a token's training log-prob is the sampler's whenever the weights
are the same version (a test checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from training.generate import KVCache, cached_logits
from training.model import MoE, Transformer

Sync = Callable[[], None]


@dataclass
class Segment:
    """One model call of a rollout: what the policy saw and what it wrote."""

    context: list[int]
    tokens: list[int]
    logprobs: list[float]  # of each token, under the version that sampled it
    versions: list[int]  # policy version per token
    routes: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> [L, top_k] int
    kind: str = "turn"  # "turn", or "summary" (self-summarization)
    hint: list[int] | None = None  # text feedback: ids inserted into this turn's context
    hint_at: int = 0  # where in `context` the hint goes

    @property
    def input_ids(self) -> list[int]:
        return self.context + self.tokens[:-1]

    def lag(self, learner_version: int) -> int:
        """How many versions behind the learner the oldest token is."""
        return learner_version - min(self.versions) if self.versions else 0


class _RouteRecorder:
    """Collects the experts each MoE layer chose, in the order positions were fed."""

    def __init__(self, model: Transformer) -> None:
        self.chunks: dict[int, list[torch.Tensor]] = {}
        self.handles = []
        for index, block in enumerate(model.blocks):
            if isinstance(block.ffn, MoE):
                self.handles.append(block.ffn.register_forward_hook(self._hook(index)))

    def _hook(self, layer: int) -> Callable[..., None]:
        def record(_module: Any, _inputs: Any, output: Any) -> None:
            self.chunks.setdefault(layer, []).append(output[1][0].detach().cpu())

        return record

    def routes(self) -> dict[int, torch.Tensor]:
        return {layer: torch.cat(parts) for layer, parts in self.chunks.items()}

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


class Sampler:
    """A model at a known version, sampling at temperature 1 (the behaviour policy is the
    model itself, so the recorded log-probs are the importance ratio's denominator)."""

    def __init__(self, model: Transformer, version: int = 0, sync: Sync | None = None) -> None:
        self.model = model.eval()
        self.version = version
        self.sync = sync or (lambda: None)

    @torch.no_grad()
    def sample(
        self, context: list[int], max_tokens: int, stop_ids: set[int], seed: int | None = None
    ) -> Segment:
        if not context:
            raise ValueError("an empty context")
        generator = torch.Generator()
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
        recorder = _RouteRecorder(self.model)
        segment = Segment(context=list(context), tokens=[], logprobs=[], versions=[])
        try:
            self.sync()
            cache = KVCache.empty(len(self.model.blocks))
            logits = cached_logits(self.model, torch.tensor([context]), cache)
            for index in range(max_tokens):
                logp = logits[0].float().log_softmax(-1)
                token = int(torch.multinomial(logp.exp(), 1, generator=generator))
                segment.tokens.append(token)
                segment.logprobs.append(float(logp[token]))
                segment.versions.append(self.version)
                if token in stop_ids or index == max_tokens - 1:
                    break
                self.sync()  # an update that arrived mid-rollout applies from the next token
                logits = cached_logits(self.model, torch.tensor([[token]]), cache)
        finally:
            recorder.close()
        segment.routes = recorder.routes()
        return segment


def segment_distributions(
    model: Transformer, segments: list[Segment], replay_routes: bool = True, pad_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The training pass's log-distributions `[N, T, V]` at each segment's generated
    positions, and the mask `[N, T]`.

    One padded forward pass; with `replay_routes` each MoE layer is forced to the experts
    the sampler chose (padding routed to experts 0..k-1, its outputs masked out)."""
    width = max(len(s.input_ids) for s in segments)
    span = max(len(s.tokens) for s in segments)
    ids = torch.full((len(segments), width), pad_id, dtype=torch.long)
    for row, segment in enumerate(segments):
        ids[row, : len(segment.input_ids)] = torch.tensor(segment.input_ids)
    forced = _forced_routes(segments, width) if replay_routes else None
    hidden = model(ids, forced_routes=forced, logits=False).hidden
    assert hidden is not None
    # the head at the generated positions only: a context is ~20x longer than its reply
    at = torch.zeros(len(segments), span, hidden.shape[-1], dtype=hidden.dtype)
    mask = torch.zeros(len(segments), span)
    for row, segment in enumerate(segments):
        start, count = len(segment.context) - 1, len(segment.tokens)
        at[row, :count] = hidden[row, start : start + count]
        mask[row, :count] = 1.0
    return model.head(at).float().log_softmax(-1), mask


def segment_logprobs(
    model: Transformer, segments: list[Segment], replay_routes: bool = True, pad_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Training-pass log-probs `[N, T]` of each segment's tokens, and the mask `[N, T]`
    (`segment_distributions`, at the tokens the sampler wrote)."""
    distributions, mask = segment_distributions(model, segments, replay_routes, pad_id)
    return token_logprobs(distributions, segments, mask), mask


def token_logprobs(
    distributions: torch.Tensor, segments: list[Segment], mask: torch.Tensor
) -> torch.Tensor:
    """`[N, T]`: each segment's tokens' log-probs under `segment_distributions`' output."""
    targets = torch.zeros(len(segments), distributions.shape[1], dtype=torch.long)
    for row, segment in enumerate(segments):
        targets[row, : len(segment.tokens)] = torch.tensor(segment.tokens)
    return distributions.gather(-1, targets[..., None])[..., 0] * mask


def _forced_routes(segments: list[Segment], width: int) -> dict[int, torch.Tensor] | None:
    layers = segments[0].routes.keys()
    if not layers:
        return None
    forced: dict[int, torch.Tensor] = {}
    for layer in layers:
        top_k = segments[0].routes[layer].shape[-1]
        table = torch.arange(top_k).repeat(len(segments), width, 1)
        for row, segment in enumerate(segments):
            route = segment.routes[layer][: len(segment.input_ids)]
            table[row, : route.shape[0]] = route
        forced[layer] = table
    return forced


def padded(values: list[list[float]], span: int) -> torch.Tensor:
    out = torch.zeros(len(values), span)
    for row, items in enumerate(values):
        out[row, : len(items)] = torch.tensor(items, dtype=torch.float32)
    return out
