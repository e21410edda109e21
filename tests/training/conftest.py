"""Toy checkpoints for the serving and gating tests: a tokenizer trained here and a tiny model,
one of them trained to memorise a reply with a tool call (so the served model really emits one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.session_cache import session_folder
from training.chat import encode_with_mask
from training.checkpoint import checkpoint_name, save_checkpoint
from training.model import ModelConfig, Transformer, next_token_loss
from training.serve import TOKENIZER_FILE
from training.tokenizer import CodeTokenizer, train_tokenizer

READ_FILE_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
ASKED = [{"role": "user", "content": "Show me a.py"}]
# Tiny models run fastest on one thread; on a loaded machine more threads spin (20x slower).
torch.set_num_threads(1)

ANSWER = {
    "role": "assistant",
    "content": "Reading it.",
    "tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}],
}


def toy_tokenizer() -> CodeTokenizer:
    source = Path(__file__).resolve().parents[2] / "training"
    texts = [path.read_text() for path in sorted(source.glob("*.py"))]
    return train_tokenizer([*texts, str(READ_FILE_TOOL), "Show me a.py Reading it."], 400)


def save_servable(root: Path, model: Transformer, tokenizer: CodeTokenizer, step: int) -> Path:
    """A complete checkpoint with its tokenizer inside (the marker last, as trainers do)."""
    checkpoint = save_checkpoint(root, model, step, {"tokens_seen": step * 1000})
    tokenizer.save(checkpoint.path / TOKENIZER_FILE)
    return checkpoint.path


def toy_model(tokenizer: CodeTokenizer, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(
        vocab_size=tokenizer.vocab_size,
        d_model=64,
        n_layers=2,
        n_heads=4,
        d_ff=128,
        max_seq_len=256,
    )
    return Transformer(config)


def memorise(model: Transformer, tokenizer: CodeTokenizer, steps: int = 200) -> float:
    """Train the model on the one conversation until it repeats the answer; the final loss."""
    ids, mask = encode_with_mask(tokenizer, [*ASKED, ANSWER], [READ_FILE_TOOL])
    tokens = torch.tensor([ids])
    trained = torch.tensor([mask[1:]])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        loss = next_token_loss(model(tokens[:, :-1]).logits, tokens[:, 1:], trained)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return float(loss.detach())


def make_checkpoints(root: Path) -> None:
    tokenizer = toy_tokenizer()
    save_servable(root, toy_model(tokenizer), tokenizer, 0)
    model = toy_model(tokenizer)
    loss = memorise(model, tokenizer)
    assert loss < 0.01, f"the toy model did not memorise its answer (loss {loss:.3f})"
    save_servable(root, model, tokenizer, 200)


@pytest.fixture(scope="session")
def checkpoints(session_build_cache: Path) -> dict[str, Any]:
    """`fresh`: an untrained model at step 0; `trained`: the memorising one at step 200.
    Made once per test session, not once per worker (`tests/session_cache.py`)."""
    root = session_folder(session_build_cache, "toy-checkpoints", make_checkpoints)
    fresh, trained = root / checkpoint_name(0), root / checkpoint_name(200)
    tokenizer = CodeTokenizer.load(fresh / TOKENIZER_FILE)
    return {"root": root, "fresh": fresh, "trained": trained, "tokenizer": tokenizer}
