"""Data-parallel training with FSDP2 over two device meshes, and Muon on sharded parameters.

Launch one process per device with torchrun; every process runs the same program:

    torchrun --nproc-per-node 2 -m training.distributed --config run.yaml --out DIR

**Two meshes (the dual-mesh HSDP idea).** Every rank trains on its own slice of the batch. The
parameters are sharded with FSDP2 (`fully_shard`) over one of two meshes spanning all ranks:

- the *dense* mesh `(dp_replicate, dp_shard)` holds every non-expert parameter (embedding,
  attention, norms, dense feed-forward, router, head), each split by rows over `dp_shard` and
  replicated over `dp_replicate` (HSDP: reduce-scatter inside a shard group, all-reduce across);
- the *expert* mesh `(ep_replicate, ep_shard)` holds the stacked MoE expert tensors
  `[E, rows, cols]`, split along the expert dimension over `ep_shard`, so a rank stores, reduces
  and updates whole experts. Its shard degree is chosen separately (for instance 8 ranks: dense
  parameters over all 8, experts over 4 and replicated twice), because experts are many and
  small while a dense matrix is one big block.

The forward pass still all-gathers experts like any FSDP parameter (no token all-to-all expert
parallelism); what the expert mesh buys here is where expert state lives and, below, that
per-expert Muon needs no communication.

**Muon on shards.** Muon orthogonalizes row blocks of a parameter (`training.muon.as_blocks`:
per head, per expert, or the whole matrix), but FSDP2 gives each rank a run of rows
(`torch.chunk` along dim 0). `ShardedMuon` takes each parameter one of two ways:

- *aligned*: every rank's rows start and end on block boundaries (always so for experts over
  the expert mesh; per head when heads divide evenly), so each rank orthogonalizes its own
  blocks with no communication at all;
- *exchanged*: otherwise (a whole matrix such as `wo` or a dense SwiGLU weight, heads cut in
  two) each such parameter gets one owner rank; an all-to-all sends every rank's shard to the
  owner, the owner orthogonalizes the full blocks, and a second all-to-all sends each rank its
  rows of the result back.

Why all-to-all rather than all-gather then slice: all-gather makes every rank receive every
full matrix and run Newton-Schulz on all of them (S-fold redundant compute, about one full
model's worth of traffic per rank); with owners, each rank receives and sends back only about
1/S of the matrices and runs 1/S of the Newton-Schulz work. At S = 2 the traffic is the same;
beyond, the owner scheme wins on both. Owners are assigned largest parameter first to the
least-loaded rank, the same on every rank because every rank knows every shape.

The arithmetic is the single-process `training.muon.Muon`'s (same momentum, block view, scale
and decoupled decay), so a sharded run equals a single-process run that accumulates the same
per-rank micro-batches; `tests/training/test_distributed.py` checks exactly that on gloo.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Shard

from training.checkpoint import save_checkpoint
from training.model import (
    ModelConfig,
    MoE,
    Transformer,
    mtp_distillation_loss,
    next_token_loss,
)
from training.muon import (
    NS_STEPS,
    Muon,
    nesterov_momentum,
    orthogonalized_update,
    parameter_roles,
)

# ---------------------------------------------------------------------------------------------
# Meshes and sharding
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Meshes:
    dense: DeviceMesh  # ("dp_replicate", "dp_shard"): every non-expert parameter
    expert: DeviceMesh  # ("ep_replicate", "ep_shard"): stacked MoE expert tensors


def mesh_shape(world_size: int, shard: int | None, what: str) -> tuple[int, int]:
    """(replicate, shard) for `world_size` ranks; `shard=None` shards over all of them."""
    shard = world_size if shard is None else shard
    if shard < 1 or world_size % shard:
        raise ValueError(f"{what} shard degree {shard} does not divide {world_size} ranks")
    return world_size // shard, shard


def build_meshes(
    world_size: int,
    dense_shard: int | None = None,
    expert_shard: int | None = None,
    device_type: str = "cpu",
) -> Meshes:
    """The dense and expert meshes over all `world_size` ranks (collective: every rank calls)."""
    dense = init_device_mesh(
        device_type,
        mesh_shape(world_size, dense_shard, "dense"),
        mesh_dim_names=("dp_replicate", "dp_shard"),
    )
    expert = init_device_mesh(
        device_type,
        mesh_shape(world_size, expert_shard, "expert"),
        mesh_dim_names=("ep_replicate", "ep_shard"),
    )
    return Meshes(dense=dense, expert=expert)


def shard_model(model: Transformer, meshes: Meshes) -> Transformer:
    """Apply FSDP2 in place: experts on the expert mesh, everything else on the dense mesh.

    Inner modules are wrapped first; `fully_shard` on an outer module takes only parameters no
    inner call took. So per MoE layer the router (a dense parameter inside the MoE module) is
    wrapped on the dense mesh before the MoE module takes its experts onto the expert mesh.
    """
    # The MoE module returns a view (`out.view(...)`); FSDP2 warns in case a caller adds to it in
    # place, which would skip its backward hook. `Block` adds it out of place, so it is safe.
    warnings.filterwarnings("ignore", message=r"FSDP2-wrapped module \(FSDPMoE\) returned a view")
    for block in model.blocks:
        if isinstance(block.ffn, MoE):
            fully_shard(block.ffn.router, mesh=meshes.dense)
            fully_shard(block.ffn, mesh=meshes.expert)  # w1, w2, w3: Shard(0) = by expert
        fully_shard(block, mesh=meshes.dense)
    fully_shard(model, mesh=meshes.dense)  # embedding, final norm, head, MTP heads
    return model


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's part of a (possibly) sharded tensor; a plain tensor is its own part."""
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def full_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer, unsharded (collective: every rank calls, every rank gets it)."""
    return {
        name: (value.full_tensor() if isinstance(value, DTensor) else value).detach().cpu()
        for name, value in model.state_dict().items()
    }


def clip_grad_norm(parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale gradients so their global L2 norm is at most `max_norm`; returns the norm before.

    `torch.nn.utils.clip_grad_norm_` stacks per-parameter norms into one tensor, which fails
    when gradients live on different meshes; here each gradient's norm is made whole on its own
    mesh (`full_tensor` sums the shards' squares, counting replicas once) and added up locally.
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    squares = torch.zeros((), dtype=torch.float32)
    for grad in grads:
        norm = torch.linalg.vector_norm(grad.float())
        squares = squares + (norm.full_tensor() if isinstance(norm, DTensor) else norm).pow(2)
    total = squares.sqrt()
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for grad in grads:
        local(grad).mul_(scale)
    return total


# ---------------------------------------------------------------------------------------------
# Muon on sharded parameters
# ---------------------------------------------------------------------------------------------


def chunk_rows(rows: int, parts: int) -> list[int]:
    """Rows each of `parts` ranks holds when `rows` are split like `torch.chunk` (FSDP2)."""
    size = math.ceil(rows / parts)
    return [max(0, min(size, rows - i * size)) for i in range(parts)]


@dataclass(frozen=True)
class RowShards:
    """How a parameter's dim 0 is split over a process group (`group=None`: not split)."""

    group: dist.ProcessGroup | None
    rank: int  # this rank's index in the group
    rows: tuple[int, ...]  # dim-0 length each rank of the group holds
    shape: torch.Size  # the full parameter's shape

    @property
    def rows_per_index(self) -> int:
        """Matrix rows per dim-0 index: `[E, R, C]` has R, `[R, C]` has 1."""
        return math.prod(self.shape[1:-1])

    def block_rows(self, blocks: int) -> int:
        return self.shape[0] * self.rows_per_index // blocks

    def aligned(self, blocks: int) -> bool:
        """Every rank holds whole blocks, so it can orthogonalize its own rows alone."""
        unit = self.block_rows(blocks)
        return all(r * self.rows_per_index % unit == 0 for r in self.rows)

    def numel(self, rank: int) -> int:
        return self.rows[rank] * math.prod(self.shape[1:])


def row_shards(param: torch.Tensor) -> RowShards:
    shape = param.shape
    if not isinstance(param, DTensor):
        return RowShards(group=None, rank=0, rows=(shape[0],), shape=shape)
    sharded = [(dim, p) for dim, p in enumerate(param.placements) if isinstance(p, Shard)]
    if not sharded:
        return RowShards(group=None, rank=0, rows=(shape[0],), shape=shape)
    if len(sharded) > 1 or sharded[0][1].dim != 0:
        raise ValueError(f"sharded Muon needs one Shard(0) placement, got {param.placements}")
    mesh_dim = sharded[0][0]
    mesh = param.device_mesh
    shards = RowShards(
        group=mesh.get_group(mesh_dim),
        rank=mesh.get_local_rank(mesh_dim),
        rows=tuple(chunk_rows(shape[0], mesh.size(mesh_dim))),
        shape=shape,
    )
    if param.to_local().shape[0] != shards.rows[shards.rank]:
        raise ValueError(f"unexpected shard of {tuple(shape)}: {tuple(param.to_local().shape)}")
    return shards


def assign_owners(sizes: list[int], ranks: int) -> list[int]:
    """Owner rank per item: largest first onto the least-loaded rank (ties: lowest rank)."""
    load = [0] * ranks
    owners = [0] * len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        owner = min(range(ranks), key=lambda r: (load[r], r))
        owners[index] = owner
        load[owner] += sizes[index]
    return owners


@dataclass
class _Pending:
    """A parameter whose blocks straddle shards: its local update goes through an owner."""

    shards: RowShards
    blocks: int
    steps: int
    update: torch.Tensor  # this rank's rows of the pre-orthogonalization update
    result: torch.Tensor | None = None


def _exchange(pending: list[_Pending], group: dist.ProcessGroup) -> None:
    """Orthogonalize parameters sharded over `group`, each on its owner; fills `result`."""
    size, me = dist.get_world_size(group), dist.get_rank(group)
    owners = assign_owners([math.prod(p.shards.shape) for p in pending], size)
    mine = [i for i, owner in enumerate(owners) if owner == me]

    # Round 1: each rank sends its shard of every parameter to that parameter's owner (in
    # float32, exact for any narrower dtype, so parameters of mixed dtypes share one buffer).
    device = pending[0].update.device
    send = [pending[i].update.reshape(-1).float() for d in range(size) for i in _owned(owners, d)]
    send_splits = [sum(pending[i].shards.numel(me) for i in _owned(owners, d)) for d in range(size)]
    recv_splits = [sum(pending[i].shards.numel(s) for i in mine) for s in range(size)]
    received = _all_to_all(send, send_splits, recv_splits, group, device)

    # The owner stitches shards (ordered by source rank = row order) into full parameters.
    pieces: dict[int, list[torch.Tensor]] = {i: [] for i in mine}
    for source, chunk in enumerate(received.split(recv_splits)):
        parts = chunk.split([pending[i].shards.numel(source) for i in mine])
        for i, part in zip(mine, parts, strict=True):
            pieces[i].append(part)
    results: dict[int, list[torch.Tensor]] = {}
    for i in mine:
        entry = pending[i]
        full = torch.cat(pieces[i]).reshape(entry.shards.shape).to(entry.update.dtype)
        ortho = orthogonalized_update(full, entry.blocks, entry.steps).float().reshape(-1)
        results[i] = list(ortho.split([entry.shards.numel(s) for s in range(size)]))

    # Round 2: the owner sends each rank its rows of the result.
    back = [results[i][d] for d in range(size) for i in mine]
    returned = _all_to_all(back, recv_splits, send_splits, group, device)
    for source, chunk in enumerate(returned.split(send_splits)):
        parts = chunk.split([pending[i].shards.numel(me) for i in _owned(owners, source)])
        for i, part in zip(_owned(owners, source), parts, strict=True):
            pending[i].result = part.reshape(pending[i].update.shape).to(pending[i].update.dtype)


def _owned(owners: list[int], rank: int) -> list[int]:
    return [i for i, owner in enumerate(owners) if owner == rank]


def _all_to_all(
    chunks: list[torch.Tensor],
    send_splits: list[int],
    recv_splits: list[int],
    group: dist.ProcessGroup,
    device: torch.device,
) -> torch.Tensor:
    send = torch.cat(chunks) if chunks else torch.empty(0, device=device)
    received = send.new_empty(sum(recv_splits))
    dist.all_to_all_single(received, send, recv_splits, send_splits, group=group)
    return received


class ShardedMuon(Muon):
    """`training.muon.Muon` for FSDP2-sharded (DTensor) parameters; same hyperparameters.

    Momentum, weight decay and the update are elementwise, so they run on each rank's shard;
    only the Newton-Schulz orthogonalization needs whole blocks (see the module docstring).
    Plain tensors (a single process) are orthogonalized in place like `Muon` does.
    """

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # Pass 1: momentum on every shard; parameters whose shards hold whole blocks are
        # orthogonalized right away, the others wait for their process group's exchange.
        plans: list[tuple[torch.Tensor, dict[str, Any], torch.Tensor | _Pending]] = []
        exchanges: dict[dist.ProcessGroup, list[_Pending]] = {}
        for group in self.param_groups:
            blocks, steps = group["blocks"], group["ns_steps"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                update = self._momentum_update(param, group)
                shards = row_shards(param)
                if shards.group is None or shards.aligned(blocks):
                    plans.append((param, group, self._local_update(update, shards, blocks, steps)))
                else:
                    entry = _Pending(shards, blocks, steps, update)
                    exchanges.setdefault(shards.group, []).append(entry)
                    plans.append((param, group, entry))
        # Pass 2: one pair of all-to-alls per process group covers all its waiting parameters.
        for process_group, entries in exchanges.items():
            _exchange(entries, process_group)
        # Pass 3: decoupled weight decay and the orthogonalized step, on the local shard.
        for param, group, planned in plans:
            ortho = planned.result if isinstance(planned, _Pending) else planned
            assert ortho is not None
            shard = local(param)
            shard.mul_(1 - group["lr"] * group["weight_decay"])
            shard.add_(ortho.to(shard.dtype), alpha=-group["lr"])
        return loss

    def _momentum_update(self, param: torch.Tensor, group: dict[str, Any]) -> torch.Tensor:
        assert param.grad is not None
        grad = local(param.grad)
        state = self.state[param]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(grad)
        return nesterov_momentum(
            grad, state["momentum_buffer"], group["momentum"], group["nesterov"]
        )

    @staticmethod
    def _local_update(
        update: torch.Tensor, shards: RowShards, blocks: int, steps: int
    ) -> torch.Tensor:
        if update.numel() == 0:
            return update
        local_blocks = update.shape[0] * shards.rows_per_index // shards.block_rows(blocks)
        return orthogonalized_update(update, local_blocks, steps)


def build_sharded_optimizers(
    model: nn.Module,
    lr: float,
    weight_decay: float = 0.1,
    momentum: float = 0.95,
    ns_steps: int = NS_STEPS,
    adamw_betas: tuple[float, float] = (0.9, 0.95),
    adamw_eps: float = 1e-8,
) -> list[torch.optim.Optimizer]:
    """[ShardedMuon, AdamW] over a sharded model, split exactly like `build_optimizers`."""
    roles = parameter_roles(model)
    decayed = [r.param for r in roles if r.optimizer == "adamw" and r.weight_decay]
    undecayed = [r.param for r in roles if not r.weight_decay]
    adamw_groups: list[dict[str, Any]] = [
        {"params": decayed},
        {"params": undecayed, "weight_decay": 0.0},
    ]
    adamw = torch.optim.AdamW(
        [g for g in adamw_groups if g["params"]],
        lr=lr,
        betas=adamw_betas,
        eps=adamw_eps,
        weight_decay=weight_decay,
    )
    muon_groups: dict[int, list[nn.Parameter]] = {}
    for role in roles:
        if role.optimizer == "muon":
            muon_groups.setdefault(role.blocks, []).append(role.param)
    muon = ShardedMuon(
        [{"params": params, "blocks": blocks} for blocks, params in muon_groups.items()],
        lr=lr,
        weight_decay=weight_decay,
        momentum=momentum,
        ns_steps=ns_steps,
    )
    return [muon, adamw]


# ---------------------------------------------------------------------------------------------
# Process group set-up (torchrun) and the data split
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistributedContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    meshes: Meshes


def launched_by_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def init_distributed(
    device: str = "cpu", dense_shard: int | None = None, expert_shard: int | None = None
) -> DistributedContext:
    """Join the process group torchrun described in the environment and build both meshes.

    CPU uses gloo, CUDA uses NCCL with one device per local rank.
    """
    if not launched_by_torchrun():
        raise RuntimeError("not launched by torchrun (RANK and WORLD_SIZE are unset)")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        torch.cuda.set_device(local_rank)
        target = torch.device("cuda", local_rank)
    else:
        target = torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device == "cuda" else "gloo")
    world = dist.get_world_size()
    meshes = build_meshes(world, dense_shard, expert_shard, device_type=target.type)
    return DistributedContext(dist.get_rank(), world, local_rank, target, meshes)


def rank_slice(batch: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Rank `rank`'s rows of a global batch (its micro-batch)."""
    if batch.shape[0] % world_size:
        raise ValueError(f"global batch {batch.shape[0]} does not split over {world_size} ranks")
    per_rank = batch.shape[0] // world_size
    return batch[rank * per_rank : (rank + 1) * per_rank]


def mean_over_ranks(value: float) -> float:
    """Mean of a per-rank scalar over the world (the logged loss)."""
    tensor = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(tensor)
    return float(tensor.item()) / dist.get_world_size()


# ---------------------------------------------------------------------------------------------
# A distributed run on synthetic tokens, and its single-process reference
# ---------------------------------------------------------------------------------------------


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
