"""The toy transformer: causality, RoPE, MoE route replay, MTP distillation, FLOPs."""

from __future__ import annotations

import pytest
import torch

from training.model import (
    Block,
    ModelConfig,
    MoE,
    MoEConfig,
    MTPHead,
    Transformer,
    apply_rope,
    mtp_distillation_loss,
    next_token_loss,
    rope_base_for_length,
    rope_tables,
)


def _model(moe: bool = False, mtp: int = 0, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(
        vocab_size=50,
        d_model=32,
        n_layers=2,
        n_heads=4,
        d_ff=64,
        max_seq_len=32,
        moe=MoEConfig(n_experts=4, top_k=2, d_expert=32, every=2) if moe else None,
        n_mtp_heads=mtp,
    )
    return Transformer(config).eval()


def _tokens(batch: int = 2, time: int = 12, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 50, (batch, time), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("moe", [False, True])
def test_changing_a_future_token_leaves_earlier_outputs_unchanged(moe: bool) -> None:
    model = _model(moe=moe, mtp=2)
    tokens = _tokens()
    changed = tokens.clone()
    changed[:, 7] = (changed[:, 7] + 1) % 50
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    torch.testing.assert_close(before.logits[:, :7], after.logits[:, :7])
    for head_before, head_after in zip(before.mtp_logits, after.mtp_logits, strict=True):
        torch.testing.assert_close(head_before[:, :7], head_after[:, :7])
    assert not torch.allclose(before.logits[:, 7:], after.logits[:, 7:])


def test_rope_attention_scores_depend_only_on_relative_position() -> None:
    head_dim, length = 16, 40
    generator = torch.Generator().manual_seed(2)
    query, key = torch.randn(2, 1, 1, 1, head_dim, generator=generator)
    cos, sin = rope_tables(length, head_dim, base=10_000.0, device=torch.device("cpu"))

    def score(query_position: int, key_position: int) -> float:
        q = apply_rope(query, cos[query_position], sin[query_position])
        k = apply_rope(key, cos[key_position], sin[key_position])
        return float((q * k).sum())

    for shift in (1, 7, 25):
        assert score(9, 4) == pytest.approx(score(9 + shift, 4 + shift), abs=1e-4)
        assert score(4, 4) == pytest.approx(score(4 + shift, 4 + shift), abs=1e-4)
    assert score(9, 4) != pytest.approx(score(9, 5), abs=1e-3)  # but it does see the distance
    # Rotation keeps norms: RoPE changes angles, never lengths.
    rotated = apply_rope(query, cos[13], sin[13])
    assert float(rotated.norm()) == pytest.approx(float(query.norm()), rel=1e-5)


def test_rope_base_for_a_longer_context_stretches_the_slowest_frequency() -> None:
    base, head_dim = 10_000.0, 16
    assert rope_base_for_length(base, head_dim, 128, 64) == base
    new_base = rope_base_for_length(base, head_dim, 128, 512)
    # The slowest inverse frequency base^(-(d-2)/d) slows by exactly the length ratio.
    slowest = lambda b: b ** (-(head_dim - 2) / head_dim)  # noqa: E731
    assert slowest(base) / slowest(new_base) == pytest.approx(4.0)


def test_recorded_moe_routes_replay_to_identical_logits_and_forced_routes_matter() -> None:
    model = _model(moe=True)
    tokens = _tokens()
    with torch.no_grad():
        recorded = model(tokens)
        assert set(recorded.routes) == {1}  # every=2 -> layer 1 only
        assert recorded.routes[1].shape == (2, 12, 2)
        replayed = model(tokens, forced_routes=recorded.routes)
        torch.testing.assert_close(replayed.logits, recorded.logits, rtol=0, atol=0)
        assert torch.equal(replayed.routes[1], recorded.routes[1])

        other = {1: (recorded.routes[1] + 1) % 4}  # every token to different experts
        forced = model(tokens, forced_routes=other)
        assert torch.equal(forced.routes[1], other[1])
        assert not torch.allclose(forced.logits, recorded.logits)

    # Replay also under training: the router still gets a gradient through the gate weights.
    model.train()
    output = model(tokens, forced_routes=recorded.routes)
    next_token_loss(output.logits[:, :-1], tokens[:, 1:], None).backward()
    block = model.blocks[1]
    assert isinstance(block, Block) and isinstance(block.ffn, MoE)
    router = block.ffn.router.weight
    assert router.grad is not None and router.grad.abs().sum() > 0


def test_mtp_distillation_gradient_never_reaches_the_main_head_distribution() -> None:
    model = _model(mtp=2).train()
    tokens = _tokens()
    output = model(tokens)
    loss = mtp_distillation_loss(output)
    assert loss > 0
    # The teacher is detached: nothing flows back into the main head's logits ...
    (to_main,) = torch.autograd.grad(loss, output.logits, retain_graph=True, allow_unused=True)
    assert to_main is None
    # ... while the MTP heads themselves do learn.
    loss.backward()
    for head in model.mtp_heads:
        assert isinstance(head, MTPHead)
        grad = head.ffn.w1.weight.grad
        assert grad is not None and grad.abs().sum() > 0

    # Head k at position t is compared with the main head at t + k + 1.
    teacher = output.logits.detach()
    time = tokens.shape[1]
    expected = torch.zeros(())
    for k, head_logits in enumerate(output.mtp_logits):
        p = teacher[:, k + 1 :].log_softmax(-1)
        log_q = head_logits.detach()[:, : time - k - 1].log_softmax(-1)
        expected += (p.exp() * (p - log_q)).sum(-1).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_next_token_loss_counts_only_masked_positions() -> None:
    logits = torch.randn(1, 4, 10, generator=torch.Generator().manual_seed(3))
    targets = torch.tensor([[1, 2, 3, 4]])
    mask = torch.tensor([[False, True, True, False]])
    masked = next_token_loss(logits, targets, mask)
    expected = torch.nn.functional.cross_entropy(logits[0, 1:3], targets[0, 1:3])
    assert float(masked) == pytest.approx(float(expected), rel=1e-6)


def test_hidden_is_the_final_normalized_state_the_heads_read() -> None:
    model = _model(mtp=1)
    with torch.no_grad():
        output = model(_tokens())
    assert output.hidden is not None
    torch.testing.assert_close(model.head(output.hidden), output.logits)


def test_flops_per_token_counts_only_active_experts() -> None:
    dense, sparse = _model(), _model(moe=True)
    moe = sparse.config.moe
    assert moe is not None
    inactive = (moe.n_experts - moe.top_k) * 3 * moe.d_expert * sparse.config.d_model
    active = sparse.num_parameters() - sparse.embed.weight.numel() - inactive
    attention = 12 * 2 * 32 * 64
    assert sparse.flops_per_token(64) == 6 * active + attention
    assert dense.flops_per_token(64) == 6 * (dense.num_parameters() - 50 * 32) + attention
    assert ModelConfig.from_dict(sparse.config.to_dict()) == sparse.config
