"""Llama-family checkpoints in the Hugging Face layout: `config.json` + `model.safetensors`.

`LlamaForCausalLM` here is a plain-PyTorch model whose parameter names, config fields and
numerics follow Hugging Face `transformers`' `LlamaForCausalLM` (RMSNorm computed in float32,
rotary embeddings on the two halves of each head, SwiGLU, grouped-query attention, optionally
tied embeddings), so its `state_dict` is the checkpoint's tensor map as written by
`save_pretrained`: `model.embed_tokens.weight`, `model.layers.{i}.self_attn.{q,k,v,o}_proj.weight`,
`model.layers.{i}.mlp.{gate,up,down}_proj.weight`, `model.layers.{i}.input_layernorm.weight`,
`model.layers.{i}.post_attention_layernorm.weight`, `model.norm.weight` and `lm_head.weight`
(left out when tied). Sharded checkpoints (`model.safetensors.index.json`) load too.

The project's own `Transformer` converts both ways when it is a dense model without MTP heads
and with one key/value head per query head: its RoPE rotates (even, odd) pairs, Hugging Face's
(i, i + head_dim / 2), so the query and key rows are permuted on the way (Meta's conversion).
What is not supported is refused with a `HFCheckpointError` naming it (e.g. `rope_scaling`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from safetensors.torch import load_file, save_file
from torch import nn

from training.model import ModelConfig, Transformer

ARCHITECTURE = "LlamaForCausalLM"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class HFCheckpointError(ValueError):
    """A Hugging Face-layout folder this module cannot read or write (names the reason)."""


class LlamaConfig(BaseModel):
    """The `config.json` fields of a Llama checkpoint that decide its computation.

    Unknown fields (generation defaults, `transformers_version`, ...) are kept and written
    back unchanged; fields that would change the computation and are not implemented are
    refused."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    architectures: list[str] = [ARCHITECTURE]
    model_type: Literal["llama"] = "llama"
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10_000.0
    rope_scaling: dict[str, Any] | None = None
    tie_word_embeddings: bool = False
    hidden_act: Literal["silu"] = "silu"
    attention_bias: bool = False
    mlp_bias: bool = False
    pretraining_tp: int = 1
    initializer_range: float = 0.02
    torch_dtype: str = "float32"
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None

    @model_validator(mode="after")
    def _supported(self) -> LlamaConfig:
        if ARCHITECTURE not in self.architectures:
            raise ValueError(f"architectures {self.architectures} do not include {ARCHITECTURE}")
        if self.rope_scaling is not None:
            raise ValueError(f"rope_scaling {self.rope_scaling} is not supported")
        if self.attention_bias or self.mlp_bias:
            raise ValueError("attention_bias / mlp_bias are not supported")
        if self.pretraining_tp != 1:
            raise ValueError("pretraining_tp != 1 is not supported")
        if self.num_attention_heads % self.kv_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.dim_per_head % 2:
            raise ValueError("head_dim must be even for RoPE")
        return self

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def dim_per_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads


class LlamaRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        dtype = hidden.dtype
        hidden = hidden.to(torch.float32)
        variance = hidden.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon)).to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        dim = config.dim_per_head
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2).float() / dim))
        # not a parameter, and not in the checkpoint (transformers keeps it non-persistent)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, time: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq: torch.Tensor = self.inv_freq  # type: ignore[assignment]
        positions = torch.arange(time, device=device).float()
        freqs = torch.outer(positions, inv_freq.to(device).float())
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos(), angles.sin()


class LlamaAttention(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv = config.num_attention_heads, config.kv_heads
        self.head_dim = config.dim_per_head
        hidden = config.hidden_size
        self.q_proj = nn.Linear(hidden, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.n_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.n_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, time, _ = x.shape

        def heads(t: torch.Tensor, count: int) -> torch.Tensor:
            return t.view(batch, time, count, self.head_dim).transpose(1, 2)

        q, k = heads(self.q_proj(x), self.n_heads), heads(self.k_proj(x), self.n_kv)
        v = heads(self.v_proj(x), self.n_kv)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        repeat = self.n_heads // self.n_kv
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, time, -1))


class LlamaMLP(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)
        )
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(input_ids.shape[1], input_ids.device)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=config.initializer_range)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits `[B, T, vocab]` for token ids `[B, T]`."""
        return self.lm_head(self.model(input_ids))


def expected_keys(config: LlamaConfig) -> set[str]:
    """The tensor names a checkpoint of this config holds (the Hugging Face names)."""
    keys = {"model.embed_tokens.weight", "model.norm.weight"}
    if not config.tie_word_embeddings:
        keys.add("lm_head.weight")
    for i in range(config.num_hidden_layers):
        prefix = f"model.layers.{i}."
        keys |= {prefix + f"self_attn.{p}_proj.weight" for p in "qkvo"}
        keys |= {prefix + f"mlp.{p}_proj.weight" for p in ("gate", "up", "down")}
        keys |= {prefix + "input_layernorm.weight", prefix + "post_attention_layernorm.weight"}
    return keys


def is_hf_checkpoint(path: Path) -> bool:
    """A folder whose `config.json` names a `model_type` (the project's own configs do not)."""
    try:
        config = json.loads((path / CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "model_type" in config


def read_config(path: Path) -> LlamaConfig:
    try:
        return LlamaConfig.model_validate_json((path / CONFIG_FILE).read_text())
    except OSError as error:
        raise HFCheckpointError(f"{path}: no readable {CONFIG_FILE}: {error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "config"
        raise HFCheckpointError(f"{path}/{CONFIG_FILE}: {where}: {first['msg']}") from None


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    if (path / WEIGHTS_FILE).is_file():
        return load_file(str(path / WEIGHTS_FILE))
    if not (path / INDEX_FILE).is_file():
        raise HFCheckpointError(f"{path}: neither {WEIGHTS_FILE} nor {INDEX_FILE}")
    weight_map: dict[str, str] = json.loads((path / INDEX_FILE).read_text())["weight_map"]
    tensors: dict[str, torch.Tensor] = {}
    for shard in sorted(set(weight_map.values())):
        tensors.update(load_file(str(path / shard)))
    return tensors


def load_llama(path: Path, dtype: torch.dtype | None = None) -> LlamaForCausalLM:
    """The model in a Hugging Face-layout folder, in `dtype` (default: the stored one)."""
    config = read_config(path)
    tensors = _read_tensors(path)
    # older exports stored the rotary table; it is recomputed, so it is dropped
    tensors = {k: v for k, v in tensors.items() if not k.endswith("rotary_emb.inv_freq")}
    expected = expected_keys(config)
    if config.tie_word_embeddings:
        tensors.pop("lm_head.weight", None)
    missing, unexpected = sorted(expected - tensors.keys()), sorted(tensors.keys() - expected)
    if missing or unexpected:
        raise HFCheckpointError(
            f"{path}: missing tensors {missing[:5]}, unexpected {unexpected[:5]}"
        )
    stored = next(iter(tensors.values())).dtype
    model = LlamaForCausalLM(config).to(dtype or stored)
    # the key sets were checked above; a tied lm_head is the embedding it shares
    model.load_state_dict(tensors, strict=False)
    return model


def save_llama(model: LlamaForCausalLM, path: Path) -> None:
    """Write `config.json` + `model.safetensors` into `path` (replaced whole, atomically)."""
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight")
    tensors = {name: tensor.detach().contiguous().clone() for name, tensor in state.items()}
    dtype = next(iter(tensors.values())).dtype
    names = {v: k for k, v in _DTYPES.items()}
    if dtype not in names:
        raise HFCheckpointError(f"dtype {dtype} has no config name")
    config = model.config.model_dump(mode="json") | {"torch_dtype": names[dtype]}
    staging = path.with_name(path.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file(tensors, str(staging / WEIGHTS_FILE), metadata={"format": "pt"})
    (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    if path.exists():
        shutil.rmtree(path)
    os.replace(staging, path)


# --- the project's Transformer <-> Llama ---------------------------------------------------


def _interleaved_to_halves(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Rows of each head reordered from (even, odd) pairs to (first half, second half)."""
    rows, cols = weight.shape
    return weight.view(heads, rows // heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def _halves_to_interleaved(weight: torch.Tensor, heads: int) -> torch.Tensor:
    rows, cols = weight.shape
    return weight.view(heads, 2, rows // heads // 2, cols).transpose(1, 2).reshape(rows, cols)


def llama_from_transformer(model: Transformer) -> LlamaForCausalLM:
    """The same network in the Llama layout (dense, no MTP heads only)."""
    c = model.config
    if c.moe is not None or c.n_mtp_heads:
        raise HFCheckpointError("MoE layers and MTP heads have no place in a Llama checkpoint")
    config = LlamaConfig(
        vocab_size=c.vocab_size,
        hidden_size=c.d_model,
        intermediate_size=c.d_ff,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_heads,
        head_dim=c.head_dim,
        max_position_embeddings=c.max_seq_len,
        rms_norm_eps=c.norm_eps,
        rope_theta=c.rope_base,
        initializer_range=c.init_std,
    )
    llama = LlamaForCausalLM(config)
    source = model.state_dict()
    target: dict[str, torch.Tensor] = {
        "model.embed_tokens.weight": source["embed.weight"],
        "model.norm.weight": source["norm.weight"],
        "lm_head.weight": source["head.weight"],
    }
    for i in range(c.n_layers):
        old, new = f"blocks.{i}.", f"model.layers.{i}."
        target[new + "self_attn.q_proj.weight"] = _interleaved_to_halves(
            source[old + "attn.wq.weight"], c.n_heads
        )
        target[new + "self_attn.k_proj.weight"] = _interleaved_to_halves(
            source[old + "attn.wk.weight"], c.n_heads
        )
        target[new + "self_attn.v_proj.weight"] = source[old + "attn.wv.weight"]
        target[new + "self_attn.o_proj.weight"] = source[old + "attn.wo.weight"]
        target[new + "mlp.gate_proj.weight"] = source[old + "ffn.w1.weight"]
        target[new + "mlp.up_proj.weight"] = source[old + "ffn.w3.weight"]
        target[new + "mlp.down_proj.weight"] = source[old + "ffn.w2.weight"]
        target[new + "input_layernorm.weight"] = source[old + "attn_norm.weight"]
        target[new + "post_attention_layernorm.weight"] = source[old + "ffn_norm.weight"]
    llama.load_state_dict(target)
    return llama.to(next(model.parameters()).dtype)


def transformer_from_llama(llama: LlamaForCausalLM) -> Transformer:
    """The project's `Transformer` computing the same function (one key/value head per query
    head, `head_dim = hidden_size / heads`); what it cannot express is refused."""
    c = llama.config
    if c.kv_heads != c.num_attention_heads:
        raise HFCheckpointError(
            f"grouped-query attention ({c.num_attention_heads} query heads, {c.kv_heads} "
            "key/value heads) has no equivalent in the project's Transformer"
        )
    if c.dim_per_head * c.num_attention_heads != c.hidden_size:
        raise HFCheckpointError("head_dim * num_attention_heads must equal hidden_size")
    config = ModelConfig(
        vocab_size=c.vocab_size,
        d_model=c.hidden_size,
        n_layers=c.num_hidden_layers,
        n_heads=c.num_attention_heads,
        d_ff=c.intermediate_size,
        max_seq_len=c.max_position_embeddings,
        rope_base=c.rope_theta,
        norm_eps=c.rms_norm_eps,
        init_std=c.initializer_range,
    )
    model = Transformer(config)
    source = llama.state_dict()
    heads = c.num_attention_heads
    target: dict[str, torch.Tensor] = {
        "embed.weight": source["model.embed_tokens.weight"],
        "norm.weight": source["model.norm.weight"],
        "head.weight": source["lm_head.weight"].clone(),
    }
    for i in range(c.num_hidden_layers):
        old, new = f"model.layers.{i}.", f"blocks.{i}."
        q, k = source[old + "self_attn.q_proj.weight"], source[old + "self_attn.k_proj.weight"]
        target[new + "attn.wq.weight"] = _halves_to_interleaved(q, heads)
        target[new + "attn.wk.weight"] = _halves_to_interleaved(k, heads)
        target[new + "attn.wv.weight"] = source[old + "self_attn.v_proj.weight"]
        target[new + "attn.wo.weight"] = source[old + "self_attn.o_proj.weight"]
        target[new + "ffn.w1.weight"] = source[old + "mlp.gate_proj.weight"]
        target[new + "ffn.w3.weight"] = source[old + "mlp.up_proj.weight"]
        target[new + "ffn.w2.weight"] = source[old + "mlp.down_proj.weight"]
        target[new + "attn_norm.weight"] = source[old + "input_layernorm.weight"]
        target[new + "ffn_norm.weight"] = source[old + "post_attention_layernorm.weight"]
    model.load_state_dict(target)
    return model.to(next(llama.parameters()).dtype)
