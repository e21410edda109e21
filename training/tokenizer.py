"""A byte-level BPE tokenizer trained here, with the chat template's special tokens.

Byte-level means every string round-trips (no unknown token); the special tokens are atomic, so
a chat rendered as text encodes to the same ids as its parts encoded one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

BOS = "<|bos|>"
EOS = "<|eos|>"
PAD = "<|pad|>"
SYSTEM = "<|system|>"
USER = "<|user|>"
ASSISTANT = "<|assistant|>"
TOOL = "<|tool|>"
TOOLS = "<|tools|>"
END = "<|end|>"
TOOL_CALL = "<|tool_call|>"
END_TOOL_CALL = "<|end_tool_call|>"
SPECIAL_TOKENS = [
    PAD,
    BOS,
    EOS,
    SYSTEM,
    USER,
    ASSISTANT,
    TOOL,
    TOOLS,
    END,
    TOOL_CALL,
    END_TOOL_CALL,
]


class CodeTokenizer:
    """The project's tokenizer: encode/decode plus the special token ids."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.inner = tokenizer
        missing = [t for t in SPECIAL_TOKENS if tokenizer.token_to_id(t) is None]
        if missing:
            raise ValueError(f"tokenizer lacks special tokens {missing}")

    @property
    def vocab_size(self) -> int:
        return self.inner.get_vocab_size()

    def id(self, token: str) -> int:
        found = self.inner.token_to_id(token)
        if found is None:
            raise KeyError(token)
        return found

    @property
    def pad_id(self) -> int:
        return self.id(PAD)

    @property
    def eos_id(self) -> int:
        return self.id(EOS)

    def encode(self, text: str) -> list[int]:
        return self.inner.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.inner.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        return self.inner.decode(list(ids), skip_special_tokens=skip_special)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.inner.save(str(path))

    @classmethod
    def load(cls, path: Path) -> CodeTokenizer:
        return cls(Tokenizer.from_file(str(path)))


def train_tokenizer(texts: Iterator[str] | list[str], vocab_size: int) -> CodeTokenizer:
    """Train a byte-level BPE of `vocab_size` (special tokens included) on `texts`."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return CodeTokenizer(tokenizer)
