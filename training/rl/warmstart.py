"""A toy policy for micro-tasks: a tokenizer trained on the tasks' texts, and a short SFT
warm start that teaches the chat and tool-call format with the operator drawn at random.

After the warm start the policy writes a well-formed `edit_file` call for every task but
picks the operator about uniformly (mean reward near a third); which operator each request
asks for is left for RL to learn. This mirrors the recipe's order (SFT for format, RL for
outcomes) at a size that trains on a CPU in seconds.
"""

from __future__ import annotations

import json
import random
from typing import Any

import torch

from harness.agent.loop import SYSTEM_PROMPT
from harness.agent.tools import tool_schemas
from training.chat import encode_with_mask
from training.model import ModelConfig, Transformer, next_token_loss
from training.rl.microtasks import (
    DELETED,
    HELD_OUT_WORDINGS,
    MODULE,
    OPERATIONS,
    TRAIN_WORDINGS,
)
from training.rl.policy import Segment, segment_logprobs
from training.tokenizer import CodeTokenizer, train_tokenizer

DONE = "Done."
ROOT = "/workspace"  # the sandbox root the system prompt names (bubblewrap's)
WORDINGS_PER_STEP = 4  # of the eight, in each warm-start step


def edit_reply(symbol: str) -> dict[str, Any]:
    arguments = {"path": MODULE, "old_string": DELETED, "new_string": f"return a {symbol} b"}
    call = {"function": {"name": "edit_file", "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def conversation(prompt: str, symbol: str) -> list[dict[str, Any]]:
    """A whole attempt as the agent loop writes it: task, edit, tool result, the end."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT.replace("{root}", ROOT)},
        {"role": "user", "content": prompt},
        edit_reply(symbol),
        {"role": "tool", "content": f"replaced 1 occurrence(s) in {MODULE}"},
        {"role": "assistant", "content": DONE},
    ]


def micro_tokenizer(vocab_size: int = 1200) -> CodeTokenizer:
    schemas = json.dumps(tool_schemas(None), separators=(",", ":"))
    texts = [schemas]
    for wording in TRAIN_WORDINGS + HELD_OUT_WORDINGS:
        for operation, (symbol, _) in OPERATIONS.items():
            texts.append(json.dumps(conversation(wording.format(op=operation), symbol)))
    return train_tokenizer(texts * 4, vocab_size)


def micro_model(tokenizer: CodeTokenizer, seed: int = 0, max_seq_len: int = 1536) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(
        vocab_size=tokenizer.vocab_size,
        d_model=64,
        n_layers=2,
        n_heads=4,
        d_ff=128,
        max_seq_len=max_seq_len,
    )
    return Transformer(config)


def warm_start(
    model: Transformer,
    tokenizer: CodeTokenizer,
    steps: int = 100,
    seed: int = 0,
    lr: float = 3e-3,
    operations: list[str] | None = None,
) -> float:
    """SFT on conversations in every wording, train and held-out, with a random operator
    each (the format, not the answer: held-out prompts are seen, their operator never
    supervised); the loss. A step takes `WORDINGS_PER_STEP` wordings of each operation.

    `operations` limits the prompts to those operations' tasks (a step costs a third for
    one); the operator written is still drawn from all three."""
    rng = random.Random(seed)
    tools = tool_schemas(None)  # the harness's default tool set, as an evaluation offers
    symbols = [symbol for symbol, _ in OPERATIONS.values()]
    every = TRAIN_WORDINGS + HELD_OUT_WORDINGS
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    loss = torch.zeros(())
    for _ in range(steps):
        rows = []
        for operation in operations or OPERATIONS:
            for wording in rng.sample(every, WORDINGS_PER_STEP):
                chat = conversation(wording.format(op=operation), rng.choice(symbols))
                rows.append(encode_with_mask(tokenizer, chat, tools))
        width = max(len(ids) for ids, _ in rows)
        ids = torch.full((len(rows), width), tokenizer.pad_id)
        mask = torch.zeros(len(rows), width, dtype=torch.bool)
        for row, (row_ids, row_mask) in enumerate(rows):
            ids[row, : len(row_ids)] = torch.tensor(row_ids)
            mask[row, : len(row_mask)] = torch.tensor(row_mask)
        loss = next_token_loss(model(ids[:, :-1]).logits, ids[:, 1:], mask[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def reference_probability(
    model: Transformer, tokenizer: CodeTokenizer, prompt: str, symbol: str
) -> float:
    """The probability that `model` answers `prompt` with the reference edit call (its first
    assistant turn, token for token): exact, teacher-forced, so it moves only when the
    weights do, unlike a sampled score. A lower bound on the chance of resolving the task."""
    ids, mask = encode_with_mask(tokenizer, conversation(prompt, symbol), tool_schemas(None))
    start = mask.index(True)
    end = mask.index(False, start)  # the first assistant turn: the edit call
    edit = Segment(context=ids[:start], tokens=ids[start:end], logprobs=[], versions=[])
    logp, _ = segment_logprobs(model.eval(), [edit], replay_routes=False)
    return float(logp.sum().exp())
