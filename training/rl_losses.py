"""Policy-gradient losses as pure functions: advantages, token aggregation, ratio clipping,
KL estimators and their placements, and the concave length penalty.

Shapes: a batch of `G * P` responses to `P` prompts, `G` per prompt, laid out group after
group (rows `[p * G, (p + 1) * G)` answer prompt `p`). Token tensors are `[N, T]` with a
`mask` `[N, T]` that is 1 on response tokens and 0 on padding.

The recipe's choices are the defaults (Dr. GRPO): advantages are `r - mean(r)` per group with
no std scaling; token losses are summed and divided by a constant (the generation budget), so
every token weighs the same whatever its response's length; KL enters as k1 subtracted from
the reward, detached. The other choices exist to be compared against.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

Aggregation = Literal["dr_grpo", "grpo", "bnpo", "dapo"]
KLEstimator = Literal["k1", "k2", "k3"]


def _groups(values: torch.Tensor, group_size: int) -> torch.Tensor:
    if values.dim() != 1 or values.numel() % group_size:
        raise ValueError(f"{values.numel()} values do not split into groups of {group_size}")
    return values.view(-1, group_size)


def group_advantages(
    rewards: torch.Tensor, group_size: int, scale_std: bool = False, eps: float = 1e-6
) -> torch.Tensor:
    """`r - mean(r)` within each group of `group_size` (flat `[N]` in, `[N]` out).

    `scale_std=True` divides by the group's std (GRPO), which the recipe leaves out: it
    up-weights prompts whose rewards barely differ (too easy or too hard)."""
    grouped = _groups(rewards.float(), group_size)
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if scale_std:
        centred = centred / (grouped.std(dim=1, keepdim=True) + eps)
    return centred.reshape(-1)


def aggregate_token_loss(
    token_loss: torch.Tensor,
    mask: torch.Tensor,
    mode: Aggregation = "dr_grpo",
    group_size: int | None = None,
    constant: float | None = None,
) -> torch.Tensor:
    """Reduce per-token losses `[N, T]` to a scalar.

    - `dr_grpo`: `sum(loss * mask) / (N * constant)`; `constant` is the generation budget
      in tokens (fixed for the run, so padding or response length never rescales a token).
    - `grpo`: each response's token mean, then the mean over responses.
    - `bnpo`: the token mean over the whole batch.
    - `dapo`: the token mean within each group of `group_size` (one prompt's responses,
      the paper's `1 / sum_i |o_i|`), then the mean over groups.
    """
    mask = mask.to(token_loss.dtype)
    masked = token_loss * mask
    if mode == "dr_grpo":
        if constant is None or constant <= 0:
            raise ValueError("dr_grpo needs a positive constant (the generation budget)")
        return masked.sum() / (token_loss.shape[0] * constant)
    if mode == "grpo":
        return (masked.sum(dim=1) / mask.sum(dim=1).clamp(min=1)).mean()
    if mode == "bnpo":
        return masked.sum() / mask.sum().clamp(min=1)
    if mode == "dapo":
        if group_size is None:
            raise ValueError("dapo needs group_size")
        sums = _groups(masked.sum(dim=1), group_size).sum(dim=1)
        counts = _groups(mask.sum(dim=1), group_size).sum(dim=1).clamp(min=1)
        return (sums / counts).mean()
    raise ValueError(f"unknown aggregation {mode!r}")


def clipped_surrogate(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
) -> torch.Tensor:
    """Per-token PPO loss `-min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A)`.

    `logp`, `logp_old`: `[N, T]` log-probs of the sampled tokens under the policy being
    trained and the one that sampled them; `advantages`: `[N]` (one per response) or `[N, T]`.
    In a single epoch on fresh samples `rho = 1` and this is the plain policy gradient."""
    if advantages.dim() == 1:
        advantages = advantages[:, None]
    ratio = torch.exp(logp - logp_old.detach())
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    return -torch.minimum(ratio * advantages, clipped * advantages)


def kl_estimate(
    logp: torch.Tensor, logp_ref: torch.Tensor, estimator: KLEstimator = "k1"
) -> torch.Tensor:
    """Per-sample estimates of KL(pi || pi_ref) from tokens sampled from pi.

    With `log_r = logp_ref - logp`: k1 = `-log_r` (unbiased), k2 = `log_r^2 / 2` (biased, low
    variance near 0), k3 = `(r - 1) - log_r` (unbiased and non-negative)."""
    log_r = logp_ref - logp
    if estimator == "k1":
        return -log_r
    if estimator == "k2":
        return 0.5 * log_r.pow(2)
    if estimator == "k3":
        return torch.expm1(log_r) - log_r
    raise ValueError(f"unknown KL estimator {estimator!r}")


def kl_shaped_rewards(
    rewards: torch.Tensor,
    logp: torch.Tensor,
    logp_ref: torch.Tensor,
    mask: torch.Tensor,
    beta: float,
    estimator: KLEstimator = "k1",
) -> torch.Tensor:
    """KL in the reward: `r - beta * sum_t k(t)` per response, detached (no gradient flows
    through the penalty; it acts only through the advantages). With k1 this gives the exact
    gradient of `E[r] - beta * KL(pi || pi_ref)` in expectation."""
    penalty = (kl_estimate(logp, logp_ref, estimator) * mask).sum(dim=1)
    return rewards - beta * penalty.detach()


def kl_loss_term(
    logp: torch.Tensor,
    logp_ref: torch.Tensor,
    mask: torch.Tensor,
    beta: float,
    estimator: KLEstimator = "k3",
    mode: Aggregation = "dr_grpo",
    group_size: int | None = None,
    constant: float | None = None,
) -> torch.Tensor:
    """KL in the loss (for comparison): `beta * aggregate(k(t))`, differentiated through
    `logp`. On-policy, k1 here has zero expected gradient (`E[grad log pi] = 0`), k2's
    expected gradient is KL(pi || pi_ref)'s, and k3's is the reverse KL(pi_ref || pi)'s."""
    token_kl = kl_estimate(logp, logp_ref.detach(), estimator)
    return beta * aggregate_token_loss(token_kl, mask, mode, group_size, constant)


def length_penalty(x: torch.Tensor, k: float, q: float) -> torch.Tensor:
    """Concave length cost `f(x) = ((1 + k x)^(1 - q) - 1) / (k (1 - q))`, `q -> 1`:
    `log(1 + k x) / k`. `f(0) = 0`, `f'(0) = 1`, concave for `q > 0`; `k > 0`, `x >= 0`."""
    if k <= 0:
        raise ValueError("k must be positive")
    base = 1.0 + k * x
    if math.isclose(q, 1.0, rel_tol=0.0, abs_tol=1e-9):
        return torch.log1p(k * x) / k
    # expm1/log form keeps precision for q near 1, where the power form cancels.
    return torch.expm1((1.0 - q) * torch.log(base)) / (k * (1.0 - q))
