"""Muon on FSDP2-sharded parameters: `ShardedMuon` and the optimizer pair of a sharded model.

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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import DTensor, Shard

from training.meshes import local
from training.muon import (
    NS_STEPS,
    Muon,
    build_optimizers,
    nesterov_momentum,
    orthogonalized_update,
)


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
    return build_optimizers(
        model,
        lr,
        weight_decay=weight_decay,
        momentum=momentum,
        ns_steps=ns_steps,
        adamw_betas=adamw_betas,
        adamw_eps=adamw_eps,
        muon_class=ShardedMuon,
    )
