"""Weight sync by deltas: what a learner sends rollout workers after a step.

Two encodings of `new` against the `old` weights a worker already holds:

- `lossless`: per tensor, the XOR of the two bit patterns, zlib-compressed. A small update
  leaves sign, exponent and the top mantissa bits unchanged, so most XOR bytes are zero and
  compress well; applying it gives `new` bit for bit.
- `bf16`: the arithmetic difference `new - old` rounded to bfloat16, zlib-compressed; applying
  it gives `old + delta`, off by at most bfloat16's rounding of the delta (2^-8 relative)
  plus the addition's own rounding in the weights' dtype.

Every delta names the policy versions it goes from and to; applying it to other weights than
its base version is refused, so a worker cannot silently drift from the learner.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Literal

import torch

Mode = Literal["lossless", "bf16"]
_INT_VIEW = {
    torch.float32: torch.int32,
    torch.bfloat16: torch.int16,
    torch.float16: torch.int16,
    torch.float64: torch.int64,
}


class WeightSyncError(ValueError):
    """A delta that does not apply to the weights given (version, names, shapes, dtypes)."""


@dataclass(frozen=True)
class TensorDelta:
    shape: tuple[int, ...]
    dtype: torch.dtype
    payload: bytes  # zlib-compressed


@dataclass(frozen=True)
class Delta:
    mode: Mode
    from_version: int
    to_version: int
    tensors: dict[str, TensorDelta] = field(default_factory=dict)
    full_bytes: int = 0  # what sending the weights themselves would cost

    @property
    def nbytes(self) -> int:
        return sum(len(t.payload) for t in self.tensors.values())

    @property
    def byte_ratio(self) -> float:
        """Bytes sent over the bytes of the full weights."""
        return self.nbytes / max(self.full_bytes, 1)


def _raw(tensor: torch.Tensor) -> bytes:
    return tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()


def _from_raw(data: bytes, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return flat.view(dtype).reshape(shape).clone()


def encode_delta(
    old: dict[str, torch.Tensor],
    new: dict[str, torch.Tensor],
    from_version: int,
    to_version: int,
    mode: Mode = "lossless",
    level: int = 1,
) -> Delta:
    """The delta taking `old` (version `from_version`) to `new` (`to_version`)."""
    if old.keys() != new.keys():
        raise WeightSyncError(f"tensor names differ: {sorted(old.keys() ^ new.keys())[:5]}")
    tensors: dict[str, TensorDelta] = {}
    full = 0
    for name, after in new.items():
        before = old[name]
        if before.shape != after.shape or before.dtype != after.dtype:
            raise WeightSyncError(
                f"{name}: {before.shape}/{before.dtype} -> {after.shape}/{after.dtype}"
            )
        full += after.numel() * after.element_size()
        if mode == "lossless":
            view = _INT_VIEW.get(after.dtype)
            if view is None:
                raise WeightSyncError(f"{name}: no lossless encoding for {after.dtype}")
            bits = after.detach().cpu().contiguous().view(
                view
            ) ^ before.detach().cpu().contiguous().view(view)
            payload = zlib.compress(_raw(bits), level)
        else:
            difference = after.detach().cpu().double() - before.detach().cpu().double()
            payload = zlib.compress(_raw(difference.to(torch.bfloat16)), level)
        tensors[name] = TensorDelta(tuple(after.shape), after.dtype, payload)
    return Delta(mode, from_version, to_version, tensors, full)


def apply_delta(
    old: dict[str, torch.Tensor], delta: Delta, version: int
) -> dict[str, torch.Tensor]:
    """`old` (which must be version `delta.from_version`) moved to `delta.to_version`."""
    if version != delta.from_version:
        raise WeightSyncError(
            f"the delta goes from version {delta.from_version}, these weights are {version}"
        )
    if old.keys() != delta.tensors.keys():
        raise WeightSyncError("the delta's tensor names differ from the weights'")
    result: dict[str, torch.Tensor] = {}
    for name, entry in delta.tensors.items():
        before = old[name].detach().cpu().contiguous()
        if tuple(before.shape) != entry.shape or before.dtype != entry.dtype:
            raise WeightSyncError(f"{name}: the delta is for {entry.shape}/{entry.dtype}")
        data = zlib.decompress(entry.payload)
        if delta.mode == "lossless":
            view = _INT_VIEW[entry.dtype]
            bits = _from_raw(data, entry.shape, view)
            result[name] = (before.view(view) ^ bits).view(entry.dtype)
        else:
            difference = _from_raw(data, entry.shape, torch.bfloat16)
            result[name] = (before.double() + difference.double()).to(entry.dtype)
    return result
