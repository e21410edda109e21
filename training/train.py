"""The one training loop every stage runs (pretrain, context extension, SFT), set by a config.

`run_stage(config, out_dir)` builds or loads the model, builds the stage's data, and trains for
`config.steps` optimizer steps, writing a complete checkpoint every `checkpoint_every` steps and
at the last one. Each checkpoint carries what a resumed stage needs to continue exactly: weights,
optimizer state, the torch RNG state, the data position and the loss history so far, plus the
tokenizer (`tokenizer.json`) so a server or a later stage needs nothing else. Run again with the
same `out_dir`, a stage resumes from its latest complete checkpoint; a finished stage returns its
final checkpoint at once.

The loss is next-token cross-entropy (masked to the assistant's tokens for SFT), plus the MTP
heads' self-distillation toward the main head when the model has MTP heads, plus the MoE
load-balancing loss when it has MoE layers.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from training.checkpoint import (
    Checkpoint,
    CheckpointError,
    is_complete,
    latest_checkpoint,
    load_model,
    load_optimizer_state,
    read_checkpoint,
    save_checkpoint,
)
from training.data import (
    TOKENIZER_FILE,
    Batch,
    CorpusConfig,
    DataError,
    DataPosition,
    PackedBatches,
    build_tokenizer,
    cache_dir,
    corpus_streams,
    evaluation_batches,
    is_held_out,
    load_conversations,
    reference_trajectories,
    sft_stream,
)
from training.model import (
    ModelConfig,
    Transformer,
    mtp_distillation_loss,
    next_token_loss,
    rope_base_for_length,
)
from training.muon import build_optimizers
from training.tokenizer import CodeTokenizer


class StageError(ValueError):
    """A stage config or its inputs that cannot be used (one line)."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PretrainData(Settings):
    """Packed windows of the on-disk code corpus."""

    source: Literal["pretrain"] = "pretrain"
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    vocab_size: int = Field(
        default=1024, ge=300, description="Tokenizer size when the stage trains a new model."
    )


class SFTData(Settings):
    """Agent trajectories (a harness run folder) rendered with the chat template."""

    source: Literal["sft"] = "sft"
    run_dir: Path | None = Field(
        default=None,
        description="A run folder whose trajectories to train on [default: the reference "
        "solver's run on `tasks`, made once and cached].",
    )
    tasks: list[str] = Field(default_factory=lambda: ["*"], description="Bundled task ids/globs.")
    only_resolved: bool = True
    held_out_fraction: float = Field(default=0.2, gt=0, lt=1)
    cache_dir: Path | None = None


class StageConfig(Settings):
    """One training stage. Exactly one of `model` (a new model) or `init_from` (a checkpoint
    folder, or a stage folder whose latest complete checkpoint is used)."""

    name: str = "stage"
    model: dict[str, Any] | None = Field(
        default=None, description="training.model.ModelConfig fields; vocab_size from the data."
    )
    init_from: Path | None = None
    data: Annotated[PretrainData | SFTData, Field(discriminator="source")] = Field(
        default_factory=PretrainData
    )
    out_dir: Path | None = Field(default=None, description="Checkpoint folder (CLI --out wins).")
    seq_len: int = Field(ge=2)
    rope_base: float | Literal["auto"] | None = Field(
        default=None,
        description="RoPE base for this stage; 'auto' raises the initial model's base for the "
        "longer seq_len (NTK rule); None keeps it.",
    )
    steps: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(default=3e-3, gt=0)
    min_lr_ratio: float = Field(default=0.1, ge=0, le=1)
    warmup_steps: int = Field(default=10, ge=0)
    optimizer: Literal["muon", "adamw"] = "adamw"
    weight_decay: float = Field(default=0.0, ge=0)
    grad_clip: float | None = Field(default=1.0, gt=0)
    mtp_weight: float = Field(default=0.3, ge=0)
    checkpoint_every: int = Field(ge=1)
    eval_every: int | None = Field(default=None, ge=1, description="[checkpoint_every]")
    eval_batches: int = Field(default=4, ge=1)
    log_every: int = Field(default=10, ge=1)
    seed: int = 0
    device: str = "cpu"
    threads: int | None = Field(default=None, ge=1, description="torch CPU threads")

    @model_validator(mode="after")
    def _one_model_source(self) -> StageConfig:
        if (self.model is None) == (self.init_from is None):
            raise ValueError("give exactly one of 'model' (a new model) or 'init_from'")
        if self.data.source == "sft" and self.init_from is None:
            raise ValueError("an sft stage starts from a trained model: set 'init_from'")
        if self.rope_base == "auto" and self.init_from is None:
            raise ValueError("rope_base 'auto' raises an initial model's base: set 'init_from'")
        return self


def load_stage_config(path: Path) -> StageConfig:
    """A stage config from YAML; any problem is one `StageError` line naming the file."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise StageError(f"{path}: cannot read config: {error}") from error
    if not isinstance(data, dict):
        raise StageError(f"{path}: a stage config is a mapping")
    try:
        return StageConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise StageError(f"{path}: {where}: {first['msg']}") from error


# --- what a stage starts from ----------------------------------------------------------------


def resolve_checkpoint(path: Path) -> Checkpoint:
    """A checkpoint folder itself, or the latest complete checkpoint of a stage folder."""
    if is_complete(path):
        return read_checkpoint(path)
    found = latest_checkpoint(path)
    if found is None:
        raise StageError(f"{path}: no complete checkpoint there")
    return found


@dataclasses.dataclass(frozen=True)
class Start:
    """The stage's model config, tokenizer and (for init_from) the weights to begin with."""

    model_config: ModelConfig
    tokenizer: CodeTokenizer
    init: Checkpoint | None


def stage_start(config: StageConfig) -> Start:
    if config.init_from is None:
        assert config.model is not None and isinstance(config.data, PretrainData)
        tokenizer, _ = build_tokenizer(config.data.corpus, config.data.vocab_size)
        fields = {"max_seq_len": config.seq_len, **config.model}
        given_vocab = fields.pop("vocab_size", tokenizer.vocab_size)
        if given_vocab != tokenizer.vocab_size:
            size = tokenizer.vocab_size
            raise StageError(f"model.vocab_size {given_vocab} != the tokenizer's {size}")
        if isinstance(config.rope_base, float | int):
            fields["rope_base"] = float(config.rope_base)
        try:
            model_config = ModelConfig.from_dict({"vocab_size": tokenizer.vocab_size, **fields})
        except (TypeError, ValueError) as error:
            raise StageError(f"model: {error}") from error
        return Start(model_config, tokenizer, None)
    init = resolve_checkpoint(config.init_from)
    tokenizer_file = init.path / TOKENIZER_FILE
    if not tokenizer_file.is_file():
        raise StageError(f"{init.path}: no {TOKENIZER_FILE} in the checkpoint")
    tokenizer = CodeTokenizer.load(tokenizer_file)
    previous = ModelConfig.from_dict(json.loads((init.path / "config.json").read_text()))
    trained_len = int(init.state.get("seq_len", previous.max_seq_len))
    rope_base = previous.rope_base
    if config.rope_base == "auto":
        rope_base = rope_base_for_length(
            previous.rope_base, previous.head_dim, trained_len, config.seq_len
        )
    elif config.rope_base is not None:
        rope_base = float(config.rope_base)
    model_config = dataclasses.replace(
        previous, rope_base=rope_base, max_seq_len=max(previous.max_seq_len, config.seq_len)
    )
    return Start(model_config, tokenizer, init)


# --- data ---------------------------------------------------------------------------------


@dataclasses.dataclass
class StageData:
    train: PackedBatches
    heldout: list[Batch]


def stage_data(
    config: StageConfig,
    tokenizer: CodeTokenizer,
    position: DataPosition,
    log: Callable[[str], None] = lambda _: None,
) -> StageData:
    data = config.data
    if isinstance(data, PretrainData):
        streams = corpus_streams(data.corpus, tokenizer)
        train = PackedBatches(
            streams.train, config.batch_size, config.seq_len, config.seed, position=position
        )
        heldout = evaluation_batches(
            streams.heldout, config.batch_size, config.seq_len, config.eval_batches
        )
        return StageData(train, heldout)
    run_dir = data.run_dir
    if run_dir is None:
        folder = data.cache_dir or cache_dir(CorpusConfig())
        label = "-".join(data.tasks).replace("*", "all").replace("/", "_")
        log(f"[{config.name}] the reference solver's trajectories on {data.tasks} (made once)")
        run_dir = reference_trajectories(folder / "sft" / label, data.tasks)
    conversations = load_conversations(run_dir, data.only_resolved)
    log(f"[{config.name}] {len(conversations)} conversations from {run_dir}")
    heldout_part = [c for c in conversations if is_held_out(c.source, data.held_out_fraction)]
    if not heldout_part:  # few attempts: hold out the last (a single one is both)
        heldout_part = conversations[-1:]
    train_part = [c for c in conversations if c not in heldout_part] or conversations
    ids, mask = sft_stream(tokenizer, train_part)
    held_ids, held_mask = sft_stream(tokenizer, heldout_part)
    train = PackedBatches(
        ids, config.batch_size, config.seq_len, config.seed, mask=mask, position=position
    )
    heldout = evaluation_batches(
        held_ids, config.batch_size, config.seq_len, config.eval_batches, mask=held_mask
    )
    return StageData(train, heldout)


# --- optimization -------------------------------------------------------------------------


def build_stage_optimizers(model: Transformer, config: StageConfig) -> list[torch.optim.Optimizer]:
    """Muon for hidden matrices (per head, per expert) and AdamW for the rest, or AdamW alone."""
    return build_optimizers(
        model,
        lr=config.lr,
        weight_decay=config.weight_decay,
        use_muon=config.optimizer == "muon",
    )


def lr_multiplier(step: int, config: StageConfig) -> float:
    """Linear warmup to 1 over `warmup_steps`, then cosine down to `min_lr_ratio` at `steps`."""
    if config.warmup_steps and step <= config.warmup_steps:
        return step / config.warmup_steps
    span = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    return config.min_lr_ratio + (1 - config.min_lr_ratio) * cosine


def batch_loss(
    model: Transformer, batch: Batch, mtp_weight: float, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """(total loss to minimize, the next-token loss alone) on one batch."""
    tokens = batch.tokens.to(device)
    mask = None if batch.loss_mask is None else batch.loss_mask.to(device)
    output = model(tokens[:, :-1])
    loss = next_token_loss(output.logits, tokens[:, 1:], mask)
    total = loss
    if output.mtp_logits and mtp_weight > 0:
        total = total + mtp_weight * mtp_distillation_loss(output, mask)
    if output.aux_loss is not None:
        total = total + output.aux_loss
    return total, loss


@torch.no_grad()
def evaluate_loss(
    model: Transformer, batches: list[Batch], device: str | torch.device = "cpu"
) -> float:
    """Mean next-token loss per counted target (masked where the batches say) over `batches`."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        tokens = batch.tokens.to(device)
        mask = None if batch.loss_mask is None else batch.loss_mask.to(device)
        mean = float(next_token_loss(model(tokens[:, :-1]).logits, tokens[:, 1:], mask))
        counted = tokens[:, 1:].numel() if mask is None else int(mask.sum())
        total, count = total + mean * counted, count + counted
    model.train(was_training)
    return total / max(count, 1)


# --- the loop -----------------------------------------------------------------------------


def _format_eta(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def run_stage(
    config: StageConfig,
    out_dir: Path,
    on_checkpoint: Callable[[Checkpoint], None] | None = None,
    log: Callable[[str], None] = lambda line: print(line, flush=True),
) -> Checkpoint:
    """Trains one stage into `out_dir` (resuming there) and returns its final checkpoint."""
    previous_threads = torch.get_num_threads()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    try:
        return _run(config, out_dir, on_checkpoint, log)
    except DataError as error:
        raise StageError(str(error)) from error
    finally:
        torch.set_num_threads(previous_threads)


def _run(
    config: StageConfig,
    out_dir: Path,
    on_checkpoint: Callable[[Checkpoint], None] | None,
    log: Callable[[str], None],
) -> Checkpoint:
    device = torch.device(config.device)
    for torn in out_dir.glob(".step-*.tmp-*"):  # staging folders of a killed writer
        shutil.rmtree(torn, ignore_errors=True)
    resume = latest_checkpoint(out_dir)
    if resume is not None and resume.step >= config.steps:
        log(f"[{config.name}] already finished at step {resume.step}: {resume.path}")
        return resume
    start = stage_start(config)
    torch.manual_seed(config.seed)
    model = Transformer(start.model_config)
    if start.init is not None:
        model.load_state_dict(load_model(start.init.path).state_dict())
    model.to(device).train()
    optimizers = build_stage_optimizers(model, config)
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            group["base_lr"] = group["lr"]
    step, position = 0, DataPosition()
    # tokens_seen counts every token the weights were trained on, earlier stages included
    carried = int(start.init.state.get("tokens_seen", 0) or 0) if start.init is not None else 0
    history: dict[str, Any] = {"losses": [], "eval": [], "tokens_seen": carried}
    if resume is not None:
        step, position = resume.step, DataPosition(**resume.state["data_position"])
        history = {key: resume.state[key] for key in ("losses", "eval", "tokens_seen")}
        model.load_state_dict(load_model(resume.path, device).state_dict())
        saved = load_optimizer_state(resume.path)
        if saved is None:
            raise StageError(f"{resume.path}: no optimizer state to resume from")
        for optimizer, state in zip(optimizers, saved["optimizers"], strict=True):
            optimizer.load_state_dict(state)
        torch.set_rng_state(saved["rng"])
        log(f"[{config.name}] resuming from {resume.path.name} (step {step})")
    data = stage_data(config, start.tokenizer, position, log)
    tokenizer_text = start.tokenizer.inner.to_str()
    eval_every = config.eval_every or config.checkpoint_every
    tokens_per_step = config.batch_size * config.seq_len
    log(
        f"[{config.name}] {model.num_parameters():,} parameters, seq_len {config.seq_len}, "
        f"rope_base {start.model_config.rope_base:g}, {data.train.n_windows:,} windows, "
        f"{config.steps} steps of {tokens_per_step:,} tokens"
    )
    first_step, started = step, time.monotonic()
    last: Checkpoint | None = None
    while step < config.steps:
        step += 1
        multiplier = lr_multiplier(step, config)
        for optimizer in optimizers:
            for group in optimizer.param_groups:
                group["lr"] = group["base_lr"] * multiplier
        batch = data.train.next_batch()
        total, loss = batch_loss(model, batch, config.mtp_weight, device)
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        total.backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        for optimizer in optimizers:
            optimizer.step()
        loss_value = loss.item()
        history["losses"].append([step, round(loss_value, 6)])
        history["tokens_seen"] += tokens_per_step
        if step % config.log_every == 0 or step == config.steps:
            elapsed = time.monotonic() - started
            rate = (step - first_step) * tokens_per_step / max(elapsed, 1e-9)
            eta = elapsed / (step - first_step) * (config.steps - step)
            log(
                f"[{config.name}] step {step}/{config.steps} loss {loss_value:.4f} "
                f"lr {config.lr * multiplier:.2e} tok/s {rate:,.0f} eta {_format_eta(eta)}"
            )
        if step % eval_every == 0 or step == config.steps:
            heldout = evaluate_loss(model, data.heldout, device)
            history["eval"].append([step, round(heldout, 6)])
            log(f"[{config.name}] step {step} held-out loss {heldout:.4f}")
        if step % config.checkpoint_every == 0 or step == config.steps:
            state = {
                "stage": config.name,
                "seq_len": config.seq_len,
                "rope_base": start.model_config.rope_base,
                "data_position": data.train.position.model_dump(),
                "config": config.model_dump(mode="json"),
                **history,
            }
            optimizer_state = {
                "optimizers": [optimizer.state_dict() for optimizer in optimizers],
                "rng": torch.get_rng_state(),
            }
            last = save_checkpoint(
                out_dir, model, step, state, optimizer_state, {TOKENIZER_FILE: tokenizer_text}
            )
            log(f"[{config.name}] checkpoint {last.path}")
            if on_checkpoint is not None:
                on_checkpoint(last)
    assert last is not None
    return last


# --- the stage CLIs (training.pretrain, training.extend, training.sft) --------------------

StageKind = Literal["pretrain", "extend", "sft"]


def check_stage_kind(config: StageConfig, kind: StageKind) -> None:
    """What makes a config fit the CLI it was given to."""
    if kind == "sft" and config.data.source != "sft":
        raise StageError("an sft stage needs data.source: sft")
    if kind != "sft" and config.data.source != "pretrain":
        raise StageError(f"a {kind} stage needs data.source: pretrain")
    if kind == "extend":
        if config.init_from is None:
            raise StageError("an extend stage starts from a checkpoint: set 'init_from'")
        init = resolve_checkpoint(config.init_from)
        trained_len = int(init.state.get("seq_len", 0))
        if config.seq_len <= trained_len:
            raise StageError(
                f"an extend stage lengthens the context: seq_len {config.seq_len} is not above "
                f"the {trained_len} {init.path} was trained at"
            )


def stage_main(kind: StageKind, argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog=f"python -m training.{kind}", description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="the stage's YAML config")
    parser.add_argument("--out", type=Path, help="checkpoint folder (overrides out_dir)")
    parser.add_argument("--init-from", type=Path, help="starting checkpoint (overrides init_from)")
    args = parser.parse_args(argv)
    try:
        config = load_stage_config(args.config)
        if args.init_from is not None:
            config = StageConfig.model_validate(
                {**config.model_dump(), "init_from": args.init_from, "model": None}
            )
        out_dir = args.out or config.out_dir
        if out_dir is None:
            raise StageError(f"{args.config}: no out_dir; give --out DIR")
        check_stage_kind(config, kind)
        final = run_stage(config, out_dir)
    except (StageError, ValidationError, CheckpointError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: resume by running the same command again", file=sys.stderr)
        return 130
    print(f"final checkpoint: {final.path}")
    return 0
