"""A small decoder-only transformer: RoPE, RMSNorm, SwiGLU, optional MoE and MTP heads.

Shapes follow one convention: activations are `[batch, time, d_model]`; every projection is a
bias-free `nn.Linear` whose weight is `[out, in]`, so the attention projections view as
`[n_heads, head_dim, d_model]` (what Muon orthogonalizes per head). MoE experts are stacked in
one tensor per projection, `[n_experts, out, in]` (what Muon orthogonalizes per expert).

The MoE router's choices can be recorded (`ModelOutput.routes`) and forced on a later forward
pass (`forced_routes`), so an RL trainer scores exactly the experts the sampler used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class MoEConfig:
    n_experts: int = 4
    top_k: int = 2
    d_expert: int = 256
    # Which layers use the MoE feed-forward instead of the dense one: every `every`-th layer,
    # counting from layer `every - 1` (every=2 -> layers 1, 3, 5, ...).
    every: int = 2
    aux_loss_weight: float = 0.01


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 384
    max_seq_len: int = 256
    rope_base: float = 10_000.0
    norm_eps: float = 1e-5
    moe: MoEConfig | None = None
    n_mtp_heads: int = 0
    init_std: float = 0.02

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim {self.head_dim} must be even for RoPE")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        values = dict(data)
        if values.get("moe") is not None:
            values["moe"] = MoEConfig(**values["moe"])
        return cls(**values)

    def is_moe_layer(self, index: int) -> bool:
        return self.moe is not None and (index + 1) % self.moe.every == 0


@dataclass
class ModelOutput:
    logits: torch.Tensor  # [B, T, V]: the next-token distribution at each position
    # mtp_logits[k][:, t] predicts the token at t + k + 2 (k = 0 is one token past the main head)
    mtp_logits: list[torch.Tensor] = field(default_factory=list)
    aux_loss: torch.Tensor | None = None  # MoE load balancing, already weighted
    routes: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> [B, T, top_k]
    hidden: torch.Tensor | None = None  # final normalized hidden state [B, T, D]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rope_tables(
    length: int, head_dim: int, base: float, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables `[length, head_dim / 2]` for rotary position embeddings."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(length, device=device).float(), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (even, odd) of the last dimension; x is `[B, H, T, head_dim]`."""
    even, odd = x[..., 0::2].float(), x[..., 1::2].float()
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        inner = config.n_heads * config.head_dim
        self.wq = nn.Linear(config.d_model, inner, bias=False)
        self.wk = nn.Linear(config.d_model, inner, bias=False)
        self.wv = nn.Linear(config.d_model, inner, bias=False)
        self.wo = nn.Linear(inner, config.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, time, _ = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, time, self.n_heads, self.head_dim).transpose(1, 2)

        q = apply_rope(heads(self.wq(x)), cos, sin)
        k = apply_rope(heads(self.wk(x)), cos, sin)
        v = heads(self.wv(x))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(batch, time, -1))


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    """Top-k routed SwiGLU experts, their weights stacked as `[n_experts, out, in]`."""

    def __init__(self, d_model: int, moe: MoEConfig, init_std: float) -> None:
        super().__init__()
        self.config = moe
        self.router = nn.Linear(d_model, moe.n_experts, bias=False)
        shape_up = (moe.n_experts, moe.d_expert, d_model)
        self.w1 = nn.Parameter(torch.randn(shape_up) * init_std)
        self.w3 = nn.Parameter(torch.randn(shape_up) * init_std)
        self.w2 = nn.Parameter(torch.randn(moe.n_experts, d_model, moe.d_expert) * init_std)

    def forward(
        self, x: torch.Tensor, forced: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns (output, chosen experts `[B, T, top_k]`, weighted load-balancing loss)."""
        batch, time, dim = x.shape
        tokens = x.reshape(-1, dim)
        probs = self.router(tokens).float().softmax(dim=-1)  # [N, E]
        if forced is None:
            weights, chosen = probs.topk(self.config.top_k, dim=-1)
        else:
            chosen = forced.reshape(-1, self.config.top_k).to(x.device)
            weights = probs.gather(-1, chosen)
        weights = (weights / weights.sum(-1, keepdim=True)).type_as(x)
        out = torch.zeros_like(tokens)
        for expert in range(self.config.n_experts):
            token_index, slot = (chosen == expert).nonzero(as_tuple=True)
            if token_index.numel() == 0:
                continue
            picked = tokens[token_index]
            hidden = F.silu(picked @ self.w1[expert].T) * (picked @ self.w3[expert].T)
            contribution = (hidden @ self.w2[expert].T) * weights[token_index, slot, None]
            out.index_add_(0, token_index, contribution)
        # Switch-style balance loss: fraction of routed slots per expert x mean router prob.
        counts = torch.bincount(chosen.reshape(-1), minlength=self.config.n_experts)
        fraction = counts.float() / chosen.numel()
        aux = self.config.n_experts * (fraction * probs.mean(0)).sum()
        aux = aux * self.config.aux_loss_weight
        return out.view(batch, time, dim), chosen.view(batch, time, -1), aux


class Block(nn.Module):
    def __init__(self, config: ModelConfig, index: int) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = Attention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.ffn: SwiGLU | MoE
        if config.is_moe_layer(index):
            assert config.moe is not None
            self.ffn = MoE(config.d_model, config.moe, config.init_std)
        else:
            self.ffn = SwiGLU(config.d_model, config.d_ff)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        forced: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        if isinstance(self.ffn, MoE):
            out, chosen, aux = self.ffn(self.ffn_norm(x), forced)
            return x + out, chosen, aux
        return x + self.ffn(self.ffn_norm(x)), None, None


class MTPHead(nn.Module):
    """One extra prediction depth: a residual SwiGLU on the trunk's last hidden state.

    Head k reads the hidden state at position t and predicts the token at t + k + 2; it shares
    the output projection with the main head. Cheap on purpose: it drafts, the model verifies.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.ffn = SwiGLU(config.d_model, config.d_ff)
        self.out_norm = RMSNorm(config.d_model, config.norm_eps)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.out_norm(hidden + self.ffn(self.norm(hidden)))


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config, i) for i in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.mtp_heads = nn.ModuleList(MTPHead(config) for _ in range(config.n_mtp_heads))
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=self.config.init_std)

    def forward(
        self,
        tokens: torch.Tensor,
        forced_routes: dict[int, torch.Tensor] | None = None,
        rope_base: float | None = None,
        logits: bool = True,
    ) -> ModelOutput:
        """tokens `[B, T]`; `rope_base` overrides the config's (context extension experiments).
        `logits=False` leaves the heads out (`logits` and `mtp_logits` empty, `hidden` set),
        for a caller that needs the next-token distribution at a few positions only."""
        time = tokens.shape[1]
        base = self.config.rope_base if rope_base is None else rope_base
        cos, sin = rope_tables(time, self.config.head_dim, base, tokens.device)
        x = self.embed(tokens)
        routes: dict[int, torch.Tensor] = {}
        aux_total: torch.Tensor | None = None
        for index, block in enumerate(self.blocks):
            forced = forced_routes.get(index) if forced_routes else None
            x, chosen, aux = block(x, cos, sin, forced)
            if chosen is not None and aux is not None:
                routes[index] = chosen
                aux_total = aux if aux_total is None else aux_total + aux
        hidden = self.norm(x)
        if not logits:
            return ModelOutput(
                logits=hidden.new_empty(0), aux_loss=aux_total, routes=routes, hidden=hidden
            )
        mtp = [self.head(head(hidden)) for head in self.mtp_heads]
        return ModelOutput(
            logits=self.head(hidden),
            mtp_logits=mtp,
            aux_loss=aux_total,
            routes=routes,
            hidden=hidden,
        )

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward + backward), the usual 6N + attention estimate.

        For MoE, N counts only the active experts (top_k of n_experts).
        """
        active = self.num_parameters() - self.embed.weight.numel()
        moe = self.config.moe
        if moe is not None:
            per_expert = 3 * moe.d_expert * self.config.d_model
            n_moe_layers = sum(self.config.is_moe_layer(i) for i in range(self.config.n_layers))
            active -= n_moe_layers * (moe.n_experts - moe.top_k) * per_expert
        attention = 12 * self.config.n_layers * self.config.d_model * seq_len
        return 6 * active + attention


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None) -> Any:
    """Mean cross-entropy over positions where `mask` is true (all positions if None)."""
    losses = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none")
    if mask is None:
        return losses.mean()
    weights = mask.flatten().float()
    return (losses * weights).sum() / weights.sum().clamp(min=1.0)


def mtp_distillation_loss(output: ModelOutput, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Self-distillation of each MTP head toward the main head's detached distribution.

    Head k at position t predicts token t + k + 2, which is what the main head predicts at
    position t + k + 1; its target is that (detached) distribution. KL(teacher || head).
    """
    total = output.logits.new_zeros((), dtype=torch.float32)
    time = output.logits.shape[1]
    for k, head_logits in enumerate(output.mtp_logits):
        shift = k + 1
        if time <= shift:
            continue
        teacher = output.logits[:, shift:].detach().float().log_softmax(-1)
        student = head_logits[:, :-shift].float().log_softmax(-1)
        kl = (teacher.exp() * (teacher - student)).sum(-1)  # [B, T - shift]
        if mask is not None:
            weights = mask[:, shift:].float()
            total = total + (kl * weights).sum() / weights.sum().clamp(min=1.0)
        else:
            total = total + kl.mean()
    return total


def rope_base_for_length(base: float, head_dim: int, old_length: int, new_length: int) -> float:
    """The RoPE base for a longer context by the NTK-aware rule: base * s^(d / (d - 2)).

    With s = new / old, the slowest rotary frequency stretches by s, so positions past the old
    length map to angles the model has seen; the fastest frequencies barely move.
    """
    if new_length <= old_length:
        return base
    scale = new_length / old_length
    return base * scale ** (head_dim / (head_dim - 2))
