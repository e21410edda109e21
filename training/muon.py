"""Muon: momentum SGD whose matrix updates are orthogonalized by Newton-Schulz iterations.

`orthogonalize` works on a batch of matrices `[..., rows, cols]`, so one call orthogonalizes
every attention head (`[n_heads, head_dim, d_model]`) or every expert (`[E, out, in]`) of a
parameter separately. `Muon` applies it per parameter group's block view, and
`build_optimizers` splits a model between Muon (hidden matrices) and AdamW (the rest).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

# Quintic Newton-Schulz coefficients (Keller Jordan's Muon): fast convergence of the singular
# values toward ~[0.7, 1.2] rather than exactly 1, which is all the update needs.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5


def orthogonalize(update: torch.Tensor, steps: int = NS_STEPS, eps: float = 1e-7) -> torch.Tensor:
    """Approximately U V^T of each matrix in `update` (`[..., rows, cols]`), in bfloat16-safe math.

    Each matrix is scaled by its Frobenius norm so all singular values start below 1, then the
    quintic iteration X <- aX + (bA + cA^2)X with A = X X^T pushes them toward 1. Wide matrices
    keep X X^T small; tall ones are transposed first.
    """
    if update.ndim < 2:
        raise ValueError(f"orthogonalize needs matrices, got shape {tuple(update.shape)}")
    a, b, c = NS_COEFFICIENTS
    x = update.float()
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = x.transpose(-2, -1)
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = a * x + (b * gram + c * gram @ gram) @ x
    if tall:
        x = x.transpose(-2, -1)
    return x.type_as(update)


# ---------------------------------------------------------------------------------------------
# The optimizer
# ---------------------------------------------------------------------------------------------


def nesterov_momentum(
    grad: torch.Tensor, buffer: torch.Tensor, momentum: float, nesterov: bool
) -> torch.Tensor:
    """Advance the momentum buffer in place and return the update direction before NS.

    The buffer is an exponential moving average (`buffer <- m * buffer + (1 - m) * grad`) and the
    Nesterov look-ahead is `(1 - m) * grad + m * buffer`: torch.optim.Muon's conventions. A plain
    sum buffer differs only by a constant factor, which the orthogonalization normalizes away.
    """
    buffer.lerp_(grad, 1 - momentum)
    return grad.lerp(buffer, momentum) if nesterov else buffer.clone()


def as_blocks(tensor: torch.Tensor, blocks: int) -> torch.Tensor:
    """View a parameter-shaped tensor as `[blocks, rows, cols]` (no copy when contiguous).

    A `[n_heads * head_dim, d_model]` projection with blocks=n_heads becomes one matrix per
    head; a stacked `[E, R, C]` expert tensor with blocks=E becomes one matrix per expert; any
    matrix with blocks=1 is itself.
    """
    if tensor.ndim < 2:
        raise ValueError(f"Muon needs matrices, got shape {tuple(tensor.shape)}")
    cols = tensor.shape[-1]
    rows_total = tensor.numel() // cols
    if blocks < 1 or rows_total % blocks:
        raise ValueError(f"shape {tuple(tensor.shape)} does not split into {blocks} row blocks")
    return tensor.reshape(blocks, rows_total // blocks, cols)


def rms_matching_scale(rows: int, cols: int) -> float:
    """Factor that gives an orthogonalized `[rows, cols]` update the RMS of a typical AdamW step.

    An orthogonal matrix has RMS about 1/sqrt(max(rows, cols)); AdamW updates have RMS about
    0.2, so Muon can share AdamW's learning rate and weight decay (Moonshot's rule).
    """
    return 0.2 * math.sqrt(max(rows, cols))


def orthogonalized_update(update: torch.Tensor, blocks: int, steps: int = NS_STEPS) -> torch.Tensor:
    """NS-orthogonalize each block of `update` and scale it to AdamW's RMS; same shape back."""
    view = as_blocks(update, blocks)
    scale = rms_matching_scale(view.shape[-2], view.shape[-1])
    return (orthogonalize(view, steps) * scale).reshape(update.shape)


class Muon(torch.optim.Optimizer):
    """Muon with per-block Newton-Schulz, decoupled weight decay and AdamW-matched update RMS.

    Each parameter group carries `blocks`: how many row blocks each of its parameters splits
    into (`as_blocks`). Per step, for each parameter with a gradient:

        update = nesterov_momentum(grad)              # EMA buffer, Nesterov look-ahead
        param <- param * (1 - lr * weight_decay)      # decoupled decay, unscaled lr
        param <- param - lr * 0.2 * sqrt(max(R, C)) * NS5(update block)   for every block

    Blocks of the same shape across a group's parameters are orthogonalized in one batched call.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float = 0.02,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_steps: int = NS_STEPS,
        blocks: int = 1,
    ) -> None:
        if lr < 0 or weight_decay < 0 or not 0 <= momentum < 1:
            raise ValueError(f"bad Muon settings: lr={lr} wd={weight_decay} momentum={momentum}")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_steps": ns_steps,
            "blocks": blocks,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for param in group["params"]:
                # raises on a shape that cannot split; a meta tensor, so a sharded (DTensor)
                # parameter is checked by its global shape
                as_blocks(torch.empty(param.shape, device="meta"), group["blocks"])

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        lr, decay, blocks = group["lr"], group["weight_decay"], group["blocks"]
        # Block shape -> (parameters, their pre-NS updates viewed as blocks)
        by_shape: dict[tuple[int, int], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        for param in group["params"]:
            if param.grad is None:
                continue
            state = self.state[param]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(param.grad)
            update = nesterov_momentum(
                param.grad, state["momentum_buffer"], group["momentum"], group["nesterov"]
            )
            view = as_blocks(update, blocks)
            by_shape.setdefault((view.shape[-2], view.shape[-1]), []).append((param, view))
        for (rows, cols), entries in by_shape.items():
            stacked = torch.cat([view for _, view in entries])
            ortho = orthogonalize(stacked, group["ns_steps"]) * rms_matching_scale(rows, cols)
            for (param, _), block_update in zip(entries, ortho.split(blocks), strict=True):
                param.mul_(1 - lr * decay)
                param.add_(block_update.reshape(param.shape).to(param.dtype), alpha=-lr)


# ---------------------------------------------------------------------------------------------
# Which optimizer owns which parameter
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterRole:
    """How one parameter is optimized: by Muon in `blocks` row blocks, or by AdamW."""

    name: str
    param: nn.Parameter
    optimizer: Literal["muon", "adamw"]
    blocks: int = 1
    weight_decay: bool = True


def parameter_roles(model: nn.Module) -> list[ParameterRole]:
    """Assign every trainable parameter of a `Transformer` to Muon or AdamW.

    Muon: hidden matrices. Attention wq/wk/wv per head (`[n_heads, head_dim, d_model]`), the
    output projection wo whole, dense and MTP SwiGLU matrices whole, MoE experts per expert.
    AdamW: the token embedding and the output head (a lookup table and a classifier, not linear
    maps between hidden states), norms and biases (vectors; no weight decay), and the MoE
    router: it is the classifier over experts, a few rows wide, whose logit scale the balance
    loss steers; orthogonalizing it would force every expert's logit to move by the same amount
    each step regardless of the gradient's size, like orthogonalizing the LM head.
    """
    # Imported here so this module stays importable without the model (tests of the NS core).
    from training.model import Attention, MoE

    special: dict[int, tuple[Literal["muon", "adamw"], int]] = {}
    for module in model.modules():
        if isinstance(module, Attention):
            for linear in (module.wq, module.wk, module.wv):
                special[id(linear.weight)] = ("muon", module.n_heads)
        elif isinstance(module, MoE):
            for stacked in (module.w1, module.w2, module.w3):
                special[id(stacked)] = ("muon", module.config.n_experts)
            special[id(module.router.weight)] = ("adamw", 1)
    for name in ("embed", "head"):
        table = getattr(model, name, None)
        if isinstance(table, nn.Module):
            special[id(table.weight)] = ("adamw", 1)

    roles: list[ParameterRole] = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim < 2:
            roles.append(ParameterRole(name, param, "adamw", weight_decay=False))
            continue
        optimizer, blocks = special.get(id(param), ("muon", 1))
        roles.append(ParameterRole(name, param, optimizer, blocks))
    return roles


def build_optimizers(
    model: nn.Module,
    lr: float,
    weight_decay: float = 0.1,
    momentum: float = 0.95,
    ns_steps: int = NS_STEPS,
    adamw_betas: tuple[float, float] = (0.9, 0.95),
    adamw_eps: float = 1e-8,
    use_muon: bool = True,
    muon_class: type[Muon] | None = None,
) -> list[torch.optim.Optimizer]:
    """[Muon, AdamW] for `model` sharing one lr and weight decay (Muon's update RMS matches).

    `use_muon=False` gives a single AdamW over everything with the same decay rules (the
    baseline of the Muon-vs-AdamW benchmark); `muon_class` a Muon of another kind over the
    same groups (`ShardedMuon` for a sharded model). Step and zero every returned optimizer.
    """
    roles = parameter_roles(model)
    adamw_groups: list[dict[str, Any]] = [
        {
            "params": [
                r.param
                for r in roles
                if r.weight_decay and (r.optimizer == "adamw" or not use_muon)
            ]
        },
        {"params": [r.param for r in roles if not r.weight_decay], "weight_decay": 0.0},
    ]
    adamw = torch.optim.AdamW(
        [g for g in adamw_groups if g["params"]],
        lr=lr,
        betas=adamw_betas,
        eps=adamw_eps,
        weight_decay=weight_decay,
    )
    if not use_muon:
        return [adamw]
    muon_groups: dict[int, list[nn.Parameter]] = {}
    for role in roles:
        if role.optimizer == "muon":
            muon_groups.setdefault(role.blocks, []).append(role.param)
    muon = (muon_class or Muon)(
        [{"params": params, "blocks": blocks} for blocks, params in muon_groups.items()],
        lr=lr,
        weight_decay=weight_decay,
        momentum=momentum,
        ns_steps=ns_steps,
    )
    return [muon, adamw]
