"""Llama checkpoints in the Hugging Face layout: names, config fields, exact round trips,
agreement with the project's own Transformer, and what is refused.

`transformers` is not installed here, so the layout is checked against the names and fields
its `LlamaForCausalLM.save_pretrained` documents and writes, not against the library itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from training.checkpoint import load_model
from training.hf_llama import (
    HFCheckpointError,
    LlamaConfig,
    LlamaForCausalLM,
    is_hf_checkpoint,
    llama_from_transformer,
    load_llama,
    save_llama,
    transformer_from_llama,
)
from training.model import ModelConfig, Transformer


def _tiny(tied: bool = False, kv_heads: int = 2, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=96,
        hidden_size=32,
        intermediate_size=80,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=64,
        rope_theta=500_000.0,
        tie_word_embeddings=tied,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # norms away from 1 so that a lost norm weight shows
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.uniform_(0.5, 1.5)
    return model


TOKENS = torch.tensor([[5, 17, 3, 90, 42, 42, 8, 0, 61]])


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    left, right = a.state_dict(), b.state_dict()
    assert left.keys() == right.keys()
    for name in left:
        assert torch.equal(left[name], right[name]), name


@pytest.mark.parametrize("tied", [False, True])
def test_layout_matches_the_hugging_face_names_and_fields(tmp_path: Path, tied: bool) -> None:
    save_llama(_tiny(tied=tied), tmp_path / "ckpt")
    files = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert files == ["config.json", "model.safetensors"]
    # the names modeling_llama.py gives its parameters, written out by hand
    layer = [
        "input_layernorm.weight",
        "mlp.down_proj.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "post_attention_layernorm.weight",
        "self_attn.k_proj.weight",
        "self_attn.o_proj.weight",
        "self_attn.q_proj.weight",
        "self_attn.v_proj.weight",
    ]
    expected = {"model.embed_tokens.weight", "model.norm.weight"}
    expected |= {f"model.layers.{i}.{name}" for i in (0, 1) for name in layer}
    if not tied:
        expected.add("lm_head.weight")  # save_pretrained drops the tied copy
    with safe_open(str(tmp_path / "ckpt" / "model.safetensors"), "pt") as handle:
        assert set(handle.keys()) == expected
        assert handle.metadata() == {"format": "pt"}
        # GQA: 4 query heads of 8, 2 key/value heads of 8, weights [out, in]
        assert handle.get_slice("model.layers.0.self_attn.q_proj.weight").get_shape() == [32, 32]
        assert handle.get_slice("model.layers.0.self_attn.k_proj.weight").get_shape() == [16, 32]
        assert handle.get_slice("model.layers.1.mlp.gate_proj.weight").get_shape() == [80, 32]
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["model_type"] == "llama"
    assert config["torch_dtype"] == "float32"
    assert config["tie_word_embeddings"] is tied
    for field, value in {
        "hidden_size": 32,
        "intermediate_size": 80,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 96,
        "rope_theta": 500_000.0,
        "hidden_act": "silu",
        "max_position_embeddings": 64,
    }.items():
        assert config[field] == value, field


@pytest.mark.parametrize("tied", [False, True])
def test_round_trip_load_train_save_load_is_exact(tmp_path: Path, tied: bool) -> None:
    model = _tiny(tied=tied)
    save_llama(model, tmp_path / "a")
    loaded = load_llama(tmp_path / "a")
    _assert_same_weights(model, loaded)
    assert torch.equal(model(TOKENS), loaded(TOKENS))
    if tied:
        assert loaded.lm_head.weight is loaded.model.embed_tokens.weight
    optimizer = torch.optim.Adam(loaded.parameters(), lr=1e-2)
    logits = loaded(TOKENS[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), TOKENS[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    assert not torch.equal(loaded.model.norm.weight, model.model.norm.weight)
    save_llama(loaded, tmp_path / "b")
    again = load_llama(tmp_path / "b")
    _assert_same_weights(loaded, again)
    assert torch.equal(loaded(TOKENS), again(TOKENS))


def test_bfloat16_checkpoints_keep_their_dtype(tmp_path: Path) -> None:
    model = _tiny().to(torch.bfloat16)
    save_llama(model, tmp_path / "bf16")
    assert json.loads((tmp_path / "bf16" / "config.json").read_text())["torch_dtype"] == "bfloat16"
    loaded = load_llama(tmp_path / "bf16")
    assert loaded.lm_head.weight.dtype == torch.bfloat16
    _assert_same_weights(model, loaded)
    upcast = load_llama(tmp_path / "bf16", dtype=torch.float32)
    assert torch.equal(upcast.lm_head.weight, model.lm_head.weight.float())


def test_sharded_checkpoints_load(tmp_path: Path) -> None:
    model = _tiny()
    save_llama(model, tmp_path / "one")
    folder = tmp_path / "sharded"
    folder.mkdir()
    (folder / "config.json").write_text((tmp_path / "one" / "config.json").read_text())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    names = sorted(state)
    shards = {
        "model-00001-of-00002.safetensors": names[::2],
        "model-00002-of-00002.safetensors": names[1::2],
    }
    weight_map: dict[str, str] = {}
    for shard, keys in shards.items():
        save_file({k: state[k] for k in keys}, str(folder / shard), metadata={"format": "pt"})
        weight_map |= dict.fromkeys(keys, shard)
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    _assert_same_weights(model, load_llama(folder))


def test_grouped_query_attention_equals_repeated_key_value_heads() -> None:
    """Independent check of GQA: the same model with each k/v head copied per query head."""
    gqa = _tiny(kv_heads=2)
    full = _tiny(kv_heads=4, seed=1)
    state = gqa.state_dict()
    head_dim = 8
    for i in range(2):
        for p in "kv":
            name = f"model.layers.{i}.self_attn.{p}_proj.weight"
            heads = state[name].view(2, head_dim, 32)
            # query heads 0, 1 read k/v head 0; 2, 3 read head 1
            state[name] = heads.repeat_interleave(2, dim=0).reshape(32, 32)
    full.load_state_dict(state)
    torch.testing.assert_close(gqa(TOKENS), full(TOKENS))


def _project_model() -> Transformer:
    torch.manual_seed(3)
    config = ModelConfig(vocab_size=96, d_model=32, n_layers=2, n_heads=4, d_ff=80, max_seq_len=64)
    model = Transformer(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.uniform_(0.5, 1.5)
    return model


def test_project_transformer_and_llama_compute_the_same_function(tmp_path: Path) -> None:
    """Two implementations (pairs-RoPE here, halves-RoPE in the Llama layout) agree, which
    checks the row permutation and the Llama module's numerics against each other."""
    model = _project_model()
    llama = llama_from_transformer(model)
    torch.testing.assert_close(llama(TOKENS), model(TOKENS).logits, atol=1e-5, rtol=1e-5)
    save_llama(llama, tmp_path / "hf")
    back = transformer_from_llama(load_llama(tmp_path / "hf"))
    _assert_same_weights(model, back)
    # the checkpoint loader takes either layout
    assert is_hf_checkpoint(tmp_path / "hf")
    _assert_same_weights(model, load_model(tmp_path / "hf"))


def test_what_cannot_be_expressed_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HFCheckpointError, match="grouped-query"):
        transformer_from_llama(_tiny(kv_heads=2))
    mtp = Transformer(ModelConfig(vocab_size=96, d_model=32, n_layers=1, n_heads=4, n_mtp_heads=1))
    with pytest.raises(HFCheckpointError, match="MTP"):
        llama_from_transformer(mtp)
    save_llama(_tiny(), tmp_path / "c")
    config = json.loads((tmp_path / "c" / "config.json").read_text())
    for change, needle in [
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_scaling"),
        ({"architectures": ["MistralForCausalLM"]}, "architectures"),
        ({"model_type": "qwen2"}, "model_type"),
    ]:
        (tmp_path / "c" / "config.json").write_text(json.dumps(config | change))
        with pytest.raises(HFCheckpointError, match=needle):
            load_llama(tmp_path / "c")
    (tmp_path / "c" / "config.json").write_text(json.dumps(config))
    state = {k: v.clone() for k, v in _tiny().state_dict().items() if k != "model.norm.weight"}
    save_file(state, str(tmp_path / "c" / "model.safetensors"))
    with pytest.raises(HFCheckpointError, match=r"missing tensors \['model.norm.weight'\]"):
        load_llama(tmp_path / "c")
