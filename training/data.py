"""Training data: a code corpus from this machine's disk, its tokenizer, packed and SFT batches.

Pretraining text is the Python source already on disk (the standard library and the installed
packages), deduplicated exactly and up to whitespace, split into train and held-out *by file*
(a stable hash of each file's content), so no file is in both. The tokenizer is trained on the
training split only. Everything derived (file list, tokenizer, token streams) is cached under
`$CURSORBENCH_HOME/training`, keyed by what it was built from.

Batches are windows of `seq_len + 1` tokens cut from one stream (documents joined with EOS, no
padding), visited in a seeded order per epoch; a `DataPosition` (epoch, cursor) says where the
next batch starts, so a resumed stage continues exactly where the checkpoint left off.

SFT batches come from agent trajectories in the harness's own JSONL format (one file per
attempt), rendered with `training/chat.py`; the loss mask marks the assistant's own tokens.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from harness.home import cache_home
from training.chat import encode_with_mask
from training.tokenizer import CodeTokenizer, train_tokenizer

TOKENIZER_FILE = "tokenizer.json"


class DataError(ValueError):
    """Data that cannot be built as asked (one line)."""


class CorpusConfig(BaseModel):
    """Which source files make the pretraining corpus."""

    model_config = ConfigDict(extra="forbid")

    roots: list[Path] = Field(
        default_factory=list,
        description="Folders searched for .py files [default: the standard library and the "
        "installed packages of this interpreter].",
    )
    max_files: int | None = Field(default=400, ge=2, description="Unique files kept at most.")
    min_file_bytes: int = Field(default=200, ge=0)
    max_file_bytes: int = Field(default=100_000, ge=1)
    held_out_fraction: float = Field(default=0.05, gt=0, lt=1)
    cache_dir: Path | None = Field(
        default=None, description="Where derived files go [$CURSORBENCH_HOME/training]."
    )


@dataclass(frozen=True)
class Document:
    name: str  # "<root label>/<path inside the root>"
    text: str


@dataclass(frozen=True)
class Corpus:
    train: list[Document]
    heldout: list[Document]
    digest: str  # identifies the config and the files chosen
    duplicates_dropped: int


def default_roots() -> list[Path]:
    paths = sysconfig.get_paths()
    roots = [Path(paths["stdlib"]), Path(paths["purelib"])]
    return [root for root in dict.fromkeys(roots) if root.is_dir()]


def cache_dir(config: CorpusConfig) -> Path:
    if config.cache_dir is not None:
        return config.cache_dir
    home = cache_home()
    return home / "training"


def _digest(*parts: str | bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()


def normalize_whitespace(text: str) -> str:
    """The text with every whitespace run collapsed to one space (for near-duplicate checks)."""
    return re.sub(r"\s+", " ", text).strip()


def is_held_out(text: str, fraction: float) -> bool:
    """Stable per-file split: the file's normalized content hashed to a number in [0, 1)."""
    value = int(_digest(normalize_whitespace(text))[:15], 16) / 16**15
    return value < fraction


def candidate_files(config: CorpusConfig) -> list[tuple[str, Path]]:
    """(name, path) of every .py file of acceptable size, in a stable pseudo-random order."""
    roots = config.roots or default_roots()
    found: list[tuple[str, Path]] = []
    for root in roots:
        if not root.is_dir():
            raise DataError(f"corpus root {root} is not a folder")
        for folder, subfolders, files in os.walk(root):
            subfolders.sort()
            for file in sorted(files):
                if not file.endswith(".py"):
                    continue
                path = Path(folder) / file
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                if config.min_file_bytes <= size <= config.max_file_bytes:
                    found.append((f"{root.name}/{path.relative_to(root).as_posix()}", path))
    # Ordered by a hash of the name: a spread over all packages, the same on every run.
    return sorted(found, key=lambda item: _digest(item[0]))


class Deduplicator:
    """Remembers what it has let through; refuses exact and whitespace-normalized repeats."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.dropped = 0

    def admit(self, text: str) -> bool:
        exact, normalized = _digest(text), _digest(normalize_whitespace(text))
        if exact in self.seen or normalized in self.seen:
            self.dropped += 1
            return False
        self.seen.update((exact, normalized))
        return True


def deduplicate(documents: list[Document]) -> tuple[list[Document], int]:
    """Documents without exact or whitespace-normalized duplicates (the first one is kept)."""
    dedup = Deduplicator()
    kept = [document for document in documents if dedup.admit(document.text)]
    return kept, dedup.dropped


_LOADED: dict[str, Corpus] = {}  # this process's corpora, by config


def load_corpus(config: CorpusConfig) -> Corpus:
    """Reads, deduplicates and splits the corpus (the file list is cached on disk, the corpus
    in this process)."""
    key = config.model_dump_json()
    if key not in _LOADED:
        _LOADED[key] = _load_corpus(config)
    return _LOADED[key]


def _load_corpus(config: CorpusConfig) -> Corpus:
    candidates = candidate_files(config)
    listing = _digest(config.model_dump_json(exclude={"cache_dir"}), *(n for n, _ in candidates))
    manifest = cache_dir(config) / "corpus" / f"{listing[:16]}.json"
    if manifest.is_file():
        cached = json.loads(manifest.read_text())
        paths = dict(candidates)
        cached_documents = [
            Document(n, paths[n].read_text(encoding="utf-8")) for n in cached["files"]
        ]
        return _split(cached_documents, config, listing, cached["duplicates_dropped"])
    documents: list[Document] = []
    dedup = Deduplicator()
    for name, path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if dedup.admit(text):
            documents.append(Document(name, text))
        if config.max_files is not None and len(documents) >= config.max_files:
            break
    if len(documents) < 2:
        raise DataError(f"corpus has {len(documents)} usable files; need at least 2")
    files = [d.name for d in documents]
    _write_json(manifest, {"files": files, "duplicates_dropped": dedup.dropped})
    return _split(documents, config, listing, dedup.dropped)


def _split(documents: list[Document], config: CorpusConfig, digest: str, dropped: int) -> Corpus:
    heldout = [d for d in documents if is_held_out(d.text, config.held_out_fraction)]
    train = [d for d in documents if not is_held_out(d.text, config.held_out_fraction)]
    if not heldout:  # a tiny corpus: hold out the file the hash ranks lowest
        first = min(documents, key=lambda d: _digest(normalize_whitespace(d.text)))
        heldout, train = [first], [d for d in documents if d is not first]
    return Corpus(train=train, heldout=heldout, digest=digest, duplicates_dropped=dropped)


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(f".tmp-{os.getpid()}")
    staging.write_text(json.dumps(data))
    staging.replace(path)


def build_tokenizer(config: CorpusConfig, vocab_size: int) -> tuple[CodeTokenizer, Path]:
    """The tokenizer trained on the corpus's training split, and the cached file it lives in."""
    corpus = load_corpus(config)
    path = tokenizer_path(config, corpus, vocab_size)
    if path.is_file():
        return CodeTokenizer.load(path), path
    tokenizer = train_tokenizer([d.text for d in corpus.train], vocab_size)
    staging = path.with_suffix(f".tmp-{os.getpid()}")
    tokenizer.save(staging)
    staging.replace(path)
    return tokenizer, path


def tokenizer_path(config: CorpusConfig, corpus: Corpus, vocab_size: int) -> Path:
    return cache_dir(config) / "tokenizers" / f"{corpus.digest[:16]}-v{vocab_size}.json"


def tokenizer_digest(tokenizer: CodeTokenizer) -> str:
    return _digest(tokenizer.inner.to_str())


def encode_documents(tokenizer: CodeTokenizer, documents: list[Document]) -> np.ndarray:
    """One stream: each document's tokens followed by EOS."""
    eos = tokenizer.eos_id
    pieces = [
        np.asarray([*ids, eos], dtype=np.int32)
        for ids in tokenizer.encode_batch([d.text for d in documents])
    ]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)


@dataclass(frozen=True)
class TokenStreams:
    train: np.ndarray
    heldout: np.ndarray


def corpus_streams(config: CorpusConfig, tokenizer: CodeTokenizer) -> TokenStreams:
    """The corpus's train and held-out token streams under `tokenizer` (cached)."""
    corpus = load_corpus(config)
    key = _digest(corpus.digest, tokenizer_digest(tokenizer))[:16]
    folder = cache_dir(config) / "streams" / key
    if (folder / "heldout.npy").is_file():
        return TokenStreams(np.load(folder / "train.npy"), np.load(folder / "heldout.npy"))
    streams = TokenStreams(
        encode_documents(tokenizer, corpus.train), encode_documents(tokenizer, corpus.heldout)
    )
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in (("train", streams.train), ("heldout", streams.heldout)):
        staging = folder / f".{name}.tmp-{os.getpid()}.npy"
        np.save(staging, array)
        staging.replace(folder / f"{name}.npy")
    return streams


# --- packed batches ------------------------------------------------------------------------


class DataPosition(BaseModel):
    """Where the next batch starts: the epoch and the index into that epoch's window order."""

    epoch: int = 0
    cursor: int = 0


@dataclass(frozen=True)
class Batch:
    tokens: torch.Tensor  # [B, T + 1] int64: inputs are [:, :-1], targets [:, 1:]
    loss_mask: torch.Tensor | None = None  # [B, T] bool over the targets; None: all count

    @property
    def inputs(self) -> torch.Tensor:
        return self.tokens[:, :-1]

    @property
    def targets(self) -> torch.Tensor:
        return self.tokens[:, 1:]


class PackedBatches:
    """Fixed-length windows of a token stream, in a seeded order that is redrawn each epoch.

    With `mask` (one flag per stream token: is it trained on), batches carry the mask of their
    targets. The same (stream, batch size, length, seed, position) always yields the same batch.
    """

    def __init__(
        self,
        stream: np.ndarray,
        batch_size: int,
        seq_len: int,
        seed: int,
        mask: np.ndarray | None = None,
        position: DataPosition | None = None,
    ) -> None:
        self.window = seq_len + 1
        self.n_windows = len(stream) // self.window
        if self.n_windows < batch_size:
            raise DataError(
                f"{len(stream):,} tokens make {self.n_windows} windows of {self.window}; "
                f"a batch needs {batch_size}"
            )
        used = self.n_windows * self.window
        self.windows = torch.from_numpy(stream[:used].astype(np.int64)).view(-1, self.window)
        self.masks = None
        if mask is not None:
            self.masks = torch.from_numpy(mask[:used].astype(np.bool_)).view(-1, self.window)
        self.batch_size = batch_size
        self.seed = seed
        self.position = position.model_copy() if position else DataPosition()
        self._order_epoch = -1
        self._order = torch.empty(0, dtype=torch.int64)

    @property
    def batches_per_epoch(self) -> int:
        return self.n_windows // self.batch_size

    def _epoch_order(self, epoch: int) -> torch.Tensor:
        if epoch != self._order_epoch:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._order = torch.randperm(self.n_windows, generator=generator)
            self._order_epoch = epoch
        return self._order

    def next_batch(self) -> Batch:
        if self.position.cursor + self.batch_size > self.n_windows:
            self.position = DataPosition(epoch=self.position.epoch + 1, cursor=0)
        order = self._epoch_order(self.position.epoch)
        chosen = order[self.position.cursor : self.position.cursor + self.batch_size]
        self.position = DataPosition(
            epoch=self.position.epoch, cursor=self.position.cursor + self.batch_size
        )
        mask = None if self.masks is None else self.masks[chosen][:, 1:]
        return Batch(tokens=self.windows[chosen], loss_mask=mask)


def evaluation_batches(
    stream: np.ndarray,
    batch_size: int,
    seq_len: int,
    max_batches: int,
    mask: np.ndarray | None = None,
) -> list[Batch]:
    """Up to `max_batches` fixed batches of windows spread evenly over `stream`; with `mask`,
    only windows with some trained target count."""
    window = seq_len + 1
    available = len(stream) // window
    all_windows = torch.from_numpy(stream[: available * window].astype(np.int64))
    all_windows = all_windows.view(available, window)
    all_masks = None
    candidates = torch.arange(available)
    if mask is not None:
        all_masks = torch.from_numpy(mask[: available * window].astype(np.bool_))
        all_masks = all_masks.view(available, window)
        candidates = candidates[all_masks[:, 1:].any(dim=1)]
    count = min(len(candidates), batch_size * max_batches)
    if count == 0:
        raise DataError(f"held-out stream of {len(stream):,} tokens has no window of {window}")
    picked = candidates[torch.linspace(0, len(candidates) - 1, count).round().long()]
    windows = all_windows[picked]
    masks = None if all_masks is None else all_masks[picked]
    return [
        Batch(
            tokens=windows[i : i + batch_size],
            loss_mask=None if masks is None else masks[i : i + batch_size, 1:],
        )
        for i in range(0, count, batch_size)
    ]


# --- SFT from agent trajectories ---------------------------------------------------------------


@dataclass(frozen=True)
class Conversation:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    source: str  # the trajectory file


def conversation_from_records(
    records: list[dict[str, Any]], tools: list[dict[str, Any]], source: str = ""
) -> Conversation:
    """The chat an agent had, from its trajectory records (harness/agent/trajectory.py format).

    `message` records are system/user turns, `model` records the assistant's replies (tool
    calls included) and `tool` records with an `output` the tool results; a `tool` record
    without output is the `finish` call, which gets no result message. The conversation ends
    at `agent_end`.
    """
    messages: list[dict[str, Any]] = []
    for record in records:
        kind = record.get("type")
        if kind == "message":
            messages.append({"role": record["role"], "content": record.get("content") or ""})
        elif kind == "model":
            messages.append(dict(record["message"]))
        elif kind == "tool" and "output" in record:
            messages.append(
                {"role": "tool", "tool_call_id": record.get("id"), "content": record["output"]}
            )
        elif kind == "agent_end":
            break
    return Conversation(messages=messages, tools=tools, source=source)


def _resolved(records: list[dict[str, Any]]) -> bool:
    for record in records:
        if record.get("type") == "result":
            return record.get("result", {}).get("status") == "resolved"
    return False


def load_conversations(run_dir: Path, only_resolved: bool = True) -> list[Conversation]:
    """Every attempt's conversation in a run folder (by default only the resolved ones)."""
    from harness.agent.tools import tool_schemas
    from harness.agent.trajectory import read_trajectory

    folder = run_dir / "trajectories"
    if not folder.is_dir():
        raise DataError(f"{run_dir} is not a run folder (no trajectories/)")
    tools = tool_schemas()
    conversations = []
    for path in sorted(folder.glob("*.jsonl")):
        records = read_trajectory(path)
        if only_resolved and not _resolved(records):
            continue
        conversation = conversation_from_records(records, tools, source=path.name)
        if any(m["role"] == "assistant" for m in conversation.messages):
            conversations.append(conversation)
    if not conversations:
        raise DataError(f"{run_dir}: no usable trajectories")
    return conversations


def reference_trajectories(out_dir: Path, tasks: list[str]) -> Path:
    """A run folder of the reference solver's attempts at `tasks` (bundled suite ids/globs),
    made through the harness's public API; an existing finished folder is reused (resume)."""
    from cursorbench import api
    from cursorbench.config import NoStoreSpec, RunSpec

    api.run(RunSpec(tasks=tasks, out=out_dir, store=NoStoreSpec()))
    return out_dir


def sft_stream(
    tokenizer: CodeTokenizer, conversations: list[Conversation]
) -> tuple[np.ndarray, np.ndarray]:
    """All conversations rendered with the chat template, joined; per token: is it trained on."""
    ids: list[int] = []
    mask: list[bool] = []
    for conversation in conversations:
        piece, trained = encode_with_mask(tokenizer, conversation.messages, conversation.tools)
        ids.extend(piece)
        mask.extend(trained)
    return np.asarray(ids, dtype=np.int32), np.asarray(mask, dtype=np.bool_)
