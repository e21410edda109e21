"""Toy training data for the training benchmarks: Python standard-library source, packed.

A BPE tokenizer is trained on the chosen files, every file is encoded and followed by EOS, and
the stream is cut into `[n, seq_len + 1]` windows (inputs and shifted targets). The held-out
split is by file: every `held_out_every`-th file (sorted by path) goes to it.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from training.tokenizer import CodeTokenizer, train_tokenizer


@dataclass
class PackedCode:
    tokenizer: CodeTokenizer
    train: torch.Tensor  # [n_train, seq_len + 1]
    held_out: torch.Tensor  # [n_held_out, seq_len + 1]


def stdlib_files(limit: int) -> list[Path]:
    """The first `limit` top-level stdlib modules by name, skipping tests and tiny files."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in sorted(root.glob("*.py")) if p.stat().st_size > 2_000]
    return files[:limit]


def _pack(tokenizer: CodeTokenizer, texts: list[str], seq_len: int) -> torch.Tensor:
    stream: list[int] = []
    for ids in tokenizer.encode_batch(texts):
        stream.extend(ids)
        stream.append(tokenizer.eos_id)
    windows = len(stream) // (seq_len + 1)
    return torch.tensor(stream[: windows * (seq_len + 1)]).view(windows, seq_len + 1)


def packed_stdlib(
    n_files: int = 60, vocab_size: int = 1024, seq_len: int = 128, held_out_every: int = 10
) -> PackedCode:
    paths = stdlib_files(n_files)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
    train_texts = [t for i, t in enumerate(texts) if i % held_out_every]
    held_texts = [t for i, t in enumerate(texts) if i % held_out_every == 0]
    tokenizer = train_tokenizer(train_texts, vocab_size)
    return PackedCode(
        tokenizer=tokenizer,
        train=_pack(tokenizer, train_texts, seq_len),
        held_out=_pack(tokenizer, held_texts, seq_len),
    )


def batches(data: torch.Tensor, batch_size: int, seed: int) -> Iterator[torch.Tensor]:
    """An endless shuffled walk over the windows (reshuffled each epoch), `[B, seq_len + 1]`."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(data.shape[0], generator=generator)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            yield data[order[start : start + batch_size]]
