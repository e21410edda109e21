"""Checkpoints: safetensors weights + JSON config, written atomically, marked when complete.

A checkpoint is a folder `step-00000123/` holding `model.safetensors`, `config.json` (the model
config), `state.json` (step, stage, tokens seen, anything the trainer wants back) and optionally
`optimizer.pt`. It is written into a hidden temporary folder, fsynced, renamed into place, and
only then is `COMPLETE` written inside it: a reader (the gate's watcher, a resumed trainer)
trusts a folder only when the marker exists, so a kill mid-write never yields a torn checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from training.hf_llama import (
    HFCheckpointError,
    is_hf_checkpoint,
    load_llama,
    transformer_from_llama,
)
from training.model import ModelConfig, Transformer

COMPLETE_MARKER = "COMPLETE"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
STATE_FILE = "state.json"
OPTIMIZER_FILE = "optimizer.pt"


class CheckpointError(RuntimeError):
    """A checkpoint folder that cannot be read (one line, names the folder)."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int
    state: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name


def checkpoint_name(step: int) -> str:
    return f"step-{step:08d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(
    root: Path,
    model: Transformer,
    step: int,
    state: dict[str, Any] | None = None,
    optimizer_state: dict[str, Any] | None = None,
    extra_files: dict[str, str] | None = None,
) -> Checkpoint:
    """Write a complete checkpoint of `model` under `root`; an existing one for `step` is kept.

    `extra_files` (name -> text, e.g. the tokenizer) are written inside before the marker."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / checkpoint_name(step)
    if (final / COMPLETE_MARKER).exists():
        return read_checkpoint(final)
    if final.exists():  # a torn folder from a killed writer: never trusted, replaced
        shutil.rmtree(final)
    staging = root / f".{final.name}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    # safetensors refuses shared storage; clone so tied or viewed tensors save as their own
    tensors = {name: t.detach().to("cpu").contiguous().clone() for name, t in _state(model)}
    save_file(tensors, str(staging / WEIGHTS_FILE))
    (staging / CONFIG_FILE).write_text(json.dumps(model.config.to_dict(), indent=2))
    full_state = {"step": step, **(state or {})}
    (staging / STATE_FILE).write_text(json.dumps(full_state, indent=2))
    if optimizer_state is not None:
        torch.save(optimizer_state, staging / OPTIMIZER_FILE)
    for name, text in (extra_files or {}).items():
        (staging / name).write_text(text)
    for child in staging.iterdir():
        with child.open("rb") as handle:
            os.fsync(handle.fileno())
    _fsync_dir(staging)
    staging.rename(final)
    _fsync_dir(root)
    (final / COMPLETE_MARKER).write_text("")
    _fsync_dir(final)
    return Checkpoint(path=final, step=step, state=full_state)


def _state(model: Transformer) -> list[tuple[str, torch.Tensor]]:
    return list(model.state_dict().items())


def is_complete(path: Path) -> bool:
    return (path / COMPLETE_MARKER).is_file()


def read_checkpoint(path: Path) -> Checkpoint:
    if not is_complete(path):
        raise CheckpointError(f"{path}: not a complete checkpoint (no {COMPLETE_MARKER} marker)")
    try:
        state = json.loads((path / STATE_FILE).read_text())
        return Checkpoint(path=path, step=int(state["step"]), state=state)
    except (OSError, ValueError, KeyError) as error:
        raise CheckpointError(f"{path}: unreadable checkpoint state: {error}") from error


def complete_checkpoints(root: Path) -> list[Checkpoint]:
    """Every complete checkpoint under `root`, by step."""
    if not root.is_dir():
        return []
    found = [read_checkpoint(p) for p in root.iterdir() if p.is_dir() and is_complete(p)]
    return sorted(found, key=lambda c: c.step)


_STEP_FOLDER = re.compile(r"(?:step|checkpoint)-(\d+)")


def servable_checkpoints(root: Path) -> list[Checkpoint]:
    """The complete checkpoints under `root` and its Hugging Face-layout folders named
    `step-N` or `checkpoint-N` (they carry no marker: write them whole, then rename them
    into place, as `hf_llama.save_llama` does), by step."""
    found = {c.path: c for c in complete_checkpoints(root)}
    if root.is_dir():
        for path in root.iterdir():
            match = _STEP_FOLDER.fullmatch(path.name)
            if path not in found and match and path.is_dir() and is_hf_checkpoint(path):
                found[path] = Checkpoint(path=path, step=int(match.group(1)), state={})
    return sorted(found.values(), key=lambda c: c.step)


def latest_checkpoint(root: Path) -> Checkpoint | None:
    found = complete_checkpoints(root)
    return found[-1] if found else None


def load_model(path: Path, device: str | torch.device = "cpu") -> Transformer:
    """The model stored in a complete checkpoint folder, or in a Hugging Face-layout Llama
    folder (`training/hf_llama.py`; converted, refused with a reason when it cannot be)."""
    if is_hf_checkpoint(path):
        try:
            return transformer_from_llama(load_llama(path, dtype=torch.float32)).to(device)
        except HFCheckpointError as error:
            raise CheckpointError(str(error)) from None
    checkpoint = read_checkpoint(path)
    try:
        config = ModelConfig.from_dict(json.loads((path / CONFIG_FILE).read_text()))
        weights = load_file(str(path / WEIGHTS_FILE), device=str(device))
    except (OSError, ValueError, TypeError) as error:
        message = f"{checkpoint.path}: unreadable weights or config: {error}"
        raise CheckpointError(message) from error
    model = Transformer(config).to(device)
    model.load_state_dict(weights)
    return model


def load_optimizer_state(path: Path) -> dict[str, Any] | None:
    file = path / OPTIMIZER_FILE
    return torch.load(file, weights_only=False) if file.exists() else None
