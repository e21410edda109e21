"""Muon: the Newton-Schulz core, agreement with torch.optim.Muon, per-head and per-expert blocks."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from training.model import ModelConfig, MoEConfig, Transformer, next_token_loss
from training.muon import (
    Muon,
    build_optimizers,
    orthogonalize,
    orthogonalized_update,
    parameter_roles,
    rms_matching_scale,
)


def _relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return float((actual - expected).norm() / expected.norm())


def test_orthogonalized_singular_values_land_near_one() -> None:
    generator = torch.Generator().manual_seed(0)
    # Non-degenerate: rectangular Gaussian matrices (smallest singular value well above 0), one
    # tall, one wide, and a batch of head-shaped blocks.
    for shape in [(96, 32), (32, 128), (4, 16, 64)]:
        update = torch.randn(shape, generator=generator)
        singular = torch.linalg.svdvals(orthogonalize(update))
        assert singular.min() > 0.6 and singular.max() < 1.2, (shape, singular.aminmax())
        # The raw input is far from orthogonal, so the check above is not vacuous.
        raw = torch.linalg.svdvals(update / update.norm(dim=(-2, -1), keepdim=True))
        assert raw.max() / raw.min() > 2


def _random_grads(shape: tuple[int, ...], steps: int, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    # A shared low-rank drift plus noise, so momentum matters and grads are not isotropic.
    drift = torch.randn(shape[0], 3, generator=generator) @ torch.randn(
        3, shape[1], generator=generator
    )
    return [drift + 0.5 * torch.randn(shape, generator=generator) for _ in range(steps)]


def _run(optimizer_factory, start: torch.Tensor, grads: list[torch.Tensor]) -> torch.Tensor:
    param = nn.Parameter(start.clone())
    optimizer = optimizer_factory([param])
    for grad in grads:
        param.grad = grad.clone()
        optimizer.step()
    return param.detach()


def test_matches_torch_muon_on_a_2d_parameter() -> None:
    shape = (48, 32)  # tall: exercises the transpose inside Newton-Schulz
    start = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    grads = _random_grads(shape, steps=6, seed=2)
    settings: dict[str, Any] = {"lr": 0.02, "weight_decay": 0.1, "momentum": 0.95}

    ours = _run(lambda p: Muon(p, nesterov=True, **settings), start, grads)
    oracle = _run(
        lambda p: torch.optim.Muon(p, nesterov=True, adjust_lr_fn="match_rms_adamw", **settings),
        start,
        grads,
    )
    # torch runs Newton-Schulz in bfloat16, we in float32: compare the displacements.
    error = _relative_error(ours - start, oracle - start)
    assert error < 0.02, error  # 0.0085 measured

    # The tolerance separates real convention differences: no Nesterov, or the lr scaling
    # torch uses by default, each move the result far more than bf16 rounding does.
    no_nesterov = _run(
        lambda p: torch.optim.Muon(p, nesterov=False, adjust_lr_fn="match_rms_adamw", **settings),
        start,
        grads,
    )
    original_scale = _run(
        lambda p: torch.optim.Muon(p, nesterov=True, adjust_lr_fn="original", **settings),
        start,
        grads,
    )
    assert _relative_error(ours - start, no_nesterov - start) > 0.05  # 0.17 measured
    assert _relative_error(ours - start, original_scale - start) > 0.05  # 0.10 measured


def test_per_head_update_equals_newton_schulz_on_each_head() -> None:
    n_heads, head_dim, d_model = 4, 8, 32
    update = torch.randn(n_heads * head_dim, d_model, generator=torch.Generator().manual_seed(3))
    batched = orthogonalized_update(update, blocks=n_heads)
    scale = rms_matching_scale(head_dim, d_model)
    for head in range(n_heads):
        rows = slice(head * head_dim, (head + 1) * head_dim)
        alone = orthogonalize(update[rows]) * scale
        torch.testing.assert_close(batched[rows], alone, atol=1e-5, rtol=1e-4)
    # Per head is not the same as the whole matrix at once.
    whole = orthogonalized_update(update, blocks=1)
    assert _relative_error(batched, whole) > 0.1


def _split_rows(tensor: torch.Tensor, blocks: int) -> list[torch.Tensor]:
    return list(tensor.reshape(blocks, -1, tensor.shape[-1]).unbind(0))


def test_muon_per_head_steps_equal_separate_muon_per_head() -> None:
    """Two head-blocked parameters in one group (batched together) vs 8 separate heads."""
    n_heads, head_dim, d_model, steps = 4, 8, 32, 4
    generator = torch.Generator().manual_seed(4)
    starts = [torch.randn(n_heads * head_dim, d_model, generator=generator) for _ in range(2)]
    grads = [_random_grads((n_heads * head_dim, d_model), steps, seed=10 + i) for i in range(2)]

    blocked = [nn.Parameter(s.clone()) for s in starts]
    optimizer = Muon([{"params": blocked, "blocks": n_heads}], lr=0.05, weight_decay=0.1)
    separate = [nn.Parameter(h.clone()) for s in starts for h in _split_rows(s, n_heads)]
    reference = Muon(separate, lr=0.05, weight_decay=0.1, blocks=1)
    for step in range(steps):
        for param, grad in zip(blocked, grads, strict=True):
            param.grad = grad[step].clone()
        head_grads = [h for g in grads for h in _split_rows(g[step], n_heads)]
        for param, head_grad in zip(separate, head_grads, strict=True):
            param.grad = head_grad.clone()
        optimizer.step()
        reference.step()
    expected = torch.cat([p.detach() for p in separate])
    actual = torch.cat([p.detach() for p in blocked])
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-4)


def test_muon_per_expert_steps_equal_separate_muon_per_expert() -> None:
    n_experts, rows, cols, steps = 3, 24, 16, 4
    start = torch.randn(n_experts, rows, cols, generator=torch.Generator().manual_seed(5))
    grads = [
        torch.randn(n_experts, rows, cols, generator=torch.Generator().manual_seed(20 + s))
        for s in range(steps)
    ]
    stacked = nn.Parameter(start.clone())
    optimizer = Muon([{"params": [stacked], "blocks": n_experts}], lr=0.05, weight_decay=0.1)
    experts = [nn.Parameter(e.clone()) for e in start.unbind(0)]
    reference = Muon(experts, lr=0.05, weight_decay=0.1)
    for grad in grads:
        stacked.grad = grad.clone()
        for param, expert_grad in zip(experts, grad.unbind(0), strict=True):
            param.grad = expert_grad.clone()
        optimizer.step()
        reference.step()
    expected = torch.stack([p.detach() for p in experts])
    torch.testing.assert_close(stacked.detach(), expected, atol=1e-5, rtol=1e-4)
    # Treating the stack as one tall matrix would be a different update.
    flat_grads = [g.reshape(-1, cols) for g in grads]
    flat = _run(lambda p: Muon(p, lr=0.05, weight_decay=0.1), start.reshape(-1, cols), flat_grads)
    assert _relative_error(flat.reshape_as(start) - start, expected - start) > 0.1


def _toy_model() -> Transformer:
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=64,
        d_model=32,
        n_layers=2,
        n_heads=4,
        d_ff=64,
        max_seq_len=32,
        moe=MoEConfig(n_experts=4, top_k=2, d_expert=32, every=2),
        n_mtp_heads=1,
    )
    return Transformer(config)


def test_parameter_roles_split_the_model_between_muon_and_adamw() -> None:
    model = _toy_model()
    roles = {role.name: role for role in parameter_roles(model)}
    assert set(roles) == {name for name, _ in model.named_parameters()}
    assert roles["blocks.0.attn.wq.weight"].blocks == 4
    assert roles["blocks.0.attn.wo.weight"].blocks == 1
    assert roles["blocks.0.ffn.w1.weight"].optimizer == "muon"
    assert roles["blocks.1.ffn.w2"].blocks == 4  # stacked experts
    assert roles["blocks.1.ffn.router.weight"].optimizer == "adamw"
    assert roles["mtp_heads.0.ffn.w3.weight"].optimizer == "muon"
    for name in ("embed.weight", "head.weight"):
        assert roles[name].optimizer == "adamw" and roles[name].weight_decay
    norm = roles["blocks.0.attn_norm.weight"]
    assert norm.optimizer == "adamw" and not norm.weight_decay


def test_build_optimizers_trains_the_toy_model_and_resumes_from_state() -> None:
    model = _toy_model()
    tokens = torch.randint(0, 64, (4, 17), generator=torch.Generator().manual_seed(6))
    optimizers = build_optimizers(model, lr=0.01, weight_decay=0.1)
    assert [type(o) for o in optimizers] == [Muon, torch.optim.AdamW]
    owned = [p for o in optimizers for g in o.param_groups for p in g["params"]]
    assert len(owned) == len(set(map(id, owned))) == len(list(model.parameters()))

    def train(steps: int, opts: list[torch.optim.Optimizer], net: Transformer) -> list[float]:
        losses = []
        for _ in range(steps):
            output = net(tokens[:, :-1])
            loss = next_token_loss(output.logits, tokens[:, 1:], None) + output.aux_loss
            for o in opts:
                o.zero_grad()
            loss.backward()
            for o in opts:
                o.step()
            losses.append(loss.item())
        return losses

    losses = train(8, optimizers, model)
    assert losses[-1] < losses[0] - 0.5, losses

    # Resume: a copy restored from state dicts continues exactly like the original. (Deep
    # copies: load_state_dict keeps same-device tensors, which would share momentum buffers.)
    twin = _toy_model()
    twin.load_state_dict(model.state_dict())
    twin_optimizers = build_optimizers(twin, lr=0.01, weight_decay=0.1)
    for mine, theirs in zip(optimizers, twin_optimizers, strict=True):
        theirs.load_state_dict(copy.deepcopy(mine.state_dict()))
    assert train(2, optimizers, model) == train(2, twin_optimizers, twin)
