"""Weight deltas: lossless ones rebuild the new weights bit for bit and cost less than the
weights; bf16 ones stay within bfloat16's rounding of the update; versions are enforced."""

from __future__ import annotations

import pytest
import torch

from training.model import ModelConfig, Transformer, next_token_loss
from training.weight_sync import WeightSyncError, apply_delta, encode_delta


def _one_step(dtype: torch.dtype) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The weights of a tiny model before and after one Adam step."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=64))
    model = model.to(dtype)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tokens = torch.randint(0, 64, (4, 17))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    next_token_loss(model(tokens[:, :-1]).logits, tokens[:, 1:], None).backward()
    optimizer.step()
    return before, {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lossless_deltas_round_trip_bit_exactly_and_compress(dtype: torch.dtype) -> None:
    before, after = _one_step(dtype)
    delta = encode_delta(before, after, from_version=3, to_version=4)
    rebuilt = apply_delta(before, delta, version=3)
    for name in after:
        # compare bit patterns, not values: -0.0 == 0.0 and NaN != NaN would hide a difference
        width = torch.int32 if dtype == torch.float32 else torch.int16
        assert torch.equal(rebuilt[name].view(width), after[name].view(width)), name
    print(f"{dtype}: lossless delta {delta.nbytes:,} bytes, ratio {delta.byte_ratio:.3f}")
    assert delta.full_bytes == sum(t.numel() * t.element_size() for t in after.values())
    assert delta.byte_ratio < 0.9


def test_an_unchanged_tensor_costs_almost_nothing() -> None:
    weights = {"w": torch.randn(256, 256)}
    delta = encode_delta(weights, {"w": weights["w"].clone()}, 0, 1)
    assert delta.nbytes < delta.full_bytes / 100  # 256 KiB of zero bits


def test_bf16_deltas_are_within_the_rounding_of_the_update() -> None:
    before, after = _one_step(torch.float32)
    delta = encode_delta(before, after, 0, 1, mode="bf16")
    rebuilt = apply_delta(before, delta, version=0)
    for name in after:
        update = (after[name].double() - before[name].double()).abs()
        error = (rebuilt[name].double() - after[name].double()).abs()
        # bf16 keeps 8 significant bits (relative error <= 2^-9 rounding to nearest), and the
        # float32 sum adds at most half an ulp of the result
        ulp = torch.finfo(torch.float32).eps * after[name].double().abs()
        assert bool((error <= update * 2**-8 + ulp).all()), name
    lossless = encode_delta(before, after, 0, 1)
    print(f"bf16 delta ratio {delta.byte_ratio:.3f}, lossless {lossless.byte_ratio:.3f}")
    assert delta.nbytes < lossless.nbytes


def test_a_delta_applies_only_to_its_base_version_and_shapes() -> None:
    before, after = _one_step(torch.float32)
    delta = encode_delta(before, after, from_version=3, to_version=4)
    with pytest.raises(WeightSyncError, match="goes from version 3, these weights are 2"):
        apply_delta(before, delta, version=2)
    with pytest.raises(WeightSyncError, match="tensor names differ"):
        encode_delta(before, {"other": torch.zeros(1)}, 0, 1)
    wrong = dict(before) | {"embed.weight": torch.zeros(3, 3)}
    with pytest.raises(WeightSyncError, match=r"embed\.weight"):
        apply_delta(wrong, delta, version=3)
