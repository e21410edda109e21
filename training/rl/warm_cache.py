"""The warm start, cached by content: a servable step-0 checkpoint (weights and tokenizer)
under `root/<hash>`, where the hash covers everything that decides the weights (the
warm-start settings and the source of the modules that make the tokenizer, the model, the
chat format, the micro-tasks and the harness's system prompt and tool schemas). Runs and
tests with the same settings share one warm start instead of each training it again.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
from pathlib import Path
from types import ModuleType

from harness.agent import loop as agent
from harness.agent import tools
from training import chat, model, tokenizer
from training.checkpoint import checkpoint_name, is_complete, save_checkpoint
from training.rl import microtasks, warmstart
from training.serve import TOKENIZER_FILE

SOURCES: tuple[ModuleType, ...] = (agent, tools, chat, model, tokenizer, microtasks, warmstart)


def warm_start_key(steps: int, seed: int, operations: list[str] | None, context_length: int) -> str:
    """A digest of the settings and of the source that shapes the warm start."""
    digest = hashlib.sha256()
    settings = {"steps": steps, "seed": seed, "ops": operations, "context": context_length}
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for module in SOURCES:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:16]


def cached_warm_start(
    root: Path,
    steps: int,
    seed: int = 0,
    operations: list[str] | None = None,
    context_length: int = 1536,
) -> Path:
    """The step-0 checkpoint of this warm start, trained now if it is not in `root`."""
    folder = root / warm_start_key(steps, seed, operations, context_length)
    path = folder / checkpoint_name(0)
    if is_complete(path):
        return path
    tok = warmstart.micro_tokenizer()
    policy = warmstart.micro_model(tok, seed, context_length)
    warmstart.warm_start(policy, tok, steps, seed, operations=operations)
    staging = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    tok.save(staging / TOKENIZER_FILE)
    text = (staging / TOKENIZER_FILE).read_text()
    save_checkpoint(staging, policy, 0, {"version": 0}, extra_files={TOKENIZER_FILE: text})
    if is_complete(path):  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
        return path
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return path
