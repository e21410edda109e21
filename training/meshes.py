"""Device meshes and FSDP2 sharding for data-parallel training, and the torchrun set-up.

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
parallelism); what the expert mesh buys here is where expert state lives and that
per-expert Muon needs no communication (`training.sharded_muon`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

from training.model import MoE, Transformer


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


# --- process group set-up (torchrun) and the data split ------------------------------------


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
