"""Data-parallel training with FSDP2 over two device meshes, and Muon on sharded parameters.

Launch one process per device with torchrun; every process runs the same program:

    torchrun --nproc-per-node 2 -m training.distributed --config run.yaml --out DIR

The meshes and the sharding are `training.meshes`; Muon on shards is `training.sharded_muon`
(their docstrings explain both). This module is the run: a short training on synthetic tokens
on every rank, and its single-process reference. A sharded run equals a single-process run that
accumulates the same per-rank micro-batches; `tests/training/test_distributed.py` checks exactly
that on gloo.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from torch import nn

from training.checkpoint import save_checkpoint
from training.meshes import (
    DistributedContext,
    Meshes,
    build_meshes,
    clip_grad_norm,
    full_state_dict,
    init_distributed,
    launched_by_torchrun,
    local,
    mean_over_ranks,
    mesh_shape,
    rank_slice,
    shard_model,
)
from training.model import ModelConfig, Transformer, mtp_distillation_loss, next_token_loss
from training.sharded_muon import (
    RowShards,
    ShardedMuon,
    assign_owners,
    build_sharded_optimizers,
    chunk_rows,
    row_shards,
)

__all__ = [  # the names callers used when they all lived here
    "DistributedContext",
    "DistributedRunConfig",
    "Meshes",
    "RowShards",
    "ShardedMuon",
    "assign_owners",
    "build_meshes",
    "build_sharded_optimizers",
    "chunk_rows",
    "clip_grad_norm",
    "full_state_dict",
    "init_distributed",
    "launched_by_torchrun",
    "load_run_config",
    "local",
    "main",
    "mean_over_ranks",
    "mesh_shape",
    "micro_batch_loss",
    "rank_slice",
    "row_shards",
    "shard_model",
    "synthetic_batches",
    "train_distributed",
    "train_single_process",
]


class DistributedRunConfig(BaseModel):
    """A short run of a model on synthetic token sequences (a check of the distributed path)."""

    model_config = ConfigDict(extra="forbid")

    model: dict[str, Any] = Field(description="training.model.ModelConfig fields")
    steps: int = Field(ge=1)
    batch_size: int = Field(ge=1, description="global batch, split evenly over the ranks")
    seq_len: int = Field(ge=2)
    lr: float = Field(default=0.01, gt=0)
    weight_decay: float = Field(default=0.1, ge=0)
    grad_clip: float | None = Field(default=1.0, gt=0)
    mtp_weight: float = Field(default=0.3, ge=0)
    seed: int = 0
    dense_shard: int | None = Field(default=None, ge=1, description="[all ranks]")
    expert_shard: int | None = Field(default=None, ge=1, description="[all ranks]")
    device: str = "cpu"

    def model_settings(self) -> ModelConfig:
        return ModelConfig.from_dict(self.model)


def load_run_config(path: Path) -> DistributedRunConfig:
    try:
        return DistributedRunConfig.model_validate(yaml.safe_load(path.read_text()))
    except (OSError, yaml.YAMLError, ValidationError) as error:
        first = str(error).splitlines()
        raise ValueError(f"{path}: bad run config: {' '.join(first[:3])}") from error


def synthetic_batches(config: DistributedRunConfig) -> Iterator[torch.Tensor]:
    """Global batches `[batch, seq_len + 1]`: random starts, then each token's fixed successor.

    The successor table is one random permutation of the vocabulary per seed, so the next
    token is a function of the current one: the loss falls within a few dozen steps, which a
    check on uniform random tokens would not show.
    """
    vocab = config.model_settings().vocab_size
    generator = torch.Generator().manual_seed(config.seed)
    successor = torch.randperm(vocab, generator=generator)
    for _ in range(config.steps):
        tokens = [torch.randint(0, vocab, (config.batch_size,), generator=generator)]
        for _ in range(config.seq_len):
            tokens.append(successor[tokens[-1]])
        yield torch.stack(tokens, dim=1)


def micro_batch_loss(model: nn.Module, tokens: torch.Tensor, mtp_weight: float) -> torch.Tensor:
    output = model(tokens[:, :-1])
    loss = next_token_loss(output.logits, tokens[:, 1:], None)
    if output.mtp_logits and mtp_weight > 0:
        loss = loss + mtp_weight * mtp_distillation_loss(output)
    if output.aux_loss is not None:
        loss = loss + output.aux_loss
    return loss


def train_distributed(
    config: DistributedRunConfig, context: DistributedContext
) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Train on this rank's micro-batches; returns per-step mean losses and the full weights."""
    torch.manual_seed(config.seed)
    model = Transformer(config.model_settings()).to(context.device)
    shard_model(model, context.meshes)
    optimizers = build_sharded_optimizers(model, config.lr, config.weight_decay)
    losses: list[float] = []
    for batch in synthetic_batches(config):
        tokens = rank_slice(batch, context.rank, context.world_size).to(context.device)
        loss = micro_batch_loss(model, tokens, config.mtp_weight)
        loss.backward()  # FSDP2 reduce-scatters gradients as means over the ranks
        if config.grad_clip is not None:
            clip_grad_norm(model.parameters(), config.grad_clip)
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        losses.append(mean_over_ranks(float(loss.detach())))
    return losses, full_state_dict(model)


def train_single_process(
    config: DistributedRunConfig, world_size: int
) -> tuple[list[float], Transformer]:
    """The same run in one process: each step accumulates the `world_size` micro-batches."""
    from training.muon import build_optimizers

    torch.manual_seed(config.seed)
    model = Transformer(config.model_settings())
    optimizers = build_optimizers(model, config.lr, config.weight_decay)
    losses: list[float] = []
    for batch in synthetic_batches(config):
        step_loss = 0.0
        for rank in range(world_size):
            loss = micro_batch_loss(model, rank_slice(batch, rank, world_size), config.mtp_weight)
            (loss / world_size).backward()
            step_loss += float(loss.detach()) / world_size
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        losses.append(step_loss)
    return losses, model


LOSSES_FILE = "losses.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.distributed",
        description="Train a model a few steps with FSDP2 + sharded Muon on synthetic tokens "
        "(launch with torchrun); rank 0 writes losses.json and a checkpoint under --out.",
    )
    parser.add_argument("--config", type=Path, required=True, help="DistributedRunConfig YAML")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per rank")
    args = parser.parse_args(argv)
    try:
        config = load_run_config(args.config)
        config.model_settings()
    except (ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not launched_by_torchrun():
        print(
            "error: not launched by torchrun; run torchrun --nproc-per-node N "
            "-m training.distributed --config FILE --out DIR",
            file=sys.stderr,
        )
        return 2
    torch.set_num_threads(args.threads)
    try:
        context = init_distributed(config.device, config.dense_shard, config.expert_shard)
        if config.batch_size % context.world_size:
            raise ValueError(
                f"batch_size {config.batch_size} does not split over {context.world_size} ranks"
            )
        losses, weights = train_distributed(config, context)
        if context.rank == 0:
            model = Transformer(config.model_settings())
            model.load_state_dict(weights)
            args.out.mkdir(parents=True, exist_ok=True)
            save_checkpoint(args.out, model, config.steps, {"losses": losses})
            (args.out / LOSSES_FILE).write_text(json.dumps(losses))
            for step, loss in enumerate(losses, start=1):
                print(f"step {step} loss {loss:.6f}")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
