"""The whole training pipeline, every checkpoint gated through the harness.

    python -m training.pipeline --config training/configs/toy.yaml --out DIR --db URL

1. The model before training is step 0: the first stage's initial model (same seed, same
   construction as the stage's own) written as `DIR/initial/step-00000000`, or the checkpoint
   the first stage starts from. It is served, scored and promoted as the gate's baseline.
2. Each stage (`training.train.run_stage`: pretrain, extend, SFT, ...) trains into `DIR/NAME`,
   starting from the previous stage's last checkpoint unless it says otherwise. Every checkpoint
   it writes is gated as it appears (`training.gate.CheckpointGate`), numbered as one training
   run: a stage's step s is step `s + the steps of the stages before it`. The last checkpoint of
   the last stage is the final step.
3. At the end the best checkpoint (the latest promoted) is printed; the leaderboard holds every
   run, tied to the training run and its step, with its gate decision.

Run the same command again to resume: finished stages return at once, a stage cut off resumes
from its latest complete checkpoint, and checkpoints already gated are read back from the
leaderboard, not scored again.

The config (YAML): `training_run` (its name in the leaderboard; default: DIR's name),
`threads` (torch CPU threads for training and serving), `stages` (each a `training.train`
stage config plus `kind: pretrain | extend | sft`; `out_dir` is set here), `gate`
(`training.gate.GateConfig`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import CursorBenchError
from harness.run.runner import RunInterrupted
from leaderboard.queries import CheckpointState
from training.checkpoint import (
    Checkpoint,
    CheckpointError,
    complete_checkpoints,
    is_complete,
    read_checkpoint,
    save_checkpoint,
)
from training.data import TOKENIZER_FILE
from training.gate import CheckpointGate, GateConfig, GateConfigError, Log, Verdict
from training.model import Transformer
from training.train import (
    StageConfig,
    StageError,
    check_stage_kind,
    resolve_checkpoint,
    run_stage,
    stage_start,
)

StageKind = Literal["pretrain", "extend", "sft"]
INITIAL_FOLDER = "initial"
GATE_FOLDER = "gate"


class PipelineError(Exception):
    """A pipeline config that cannot be used (one line)."""


class PipelineStage(BaseModel):
    """One stage: its kind and its `training.train.StageConfig` (checked when it starts)."""

    model_config = ConfigDict(extra="allow")

    kind: StageKind

    def stage_fields(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    training_run: str | None = Field(default=None, description="[default: the --out folder's]")
    threads: int | None = Field(default=None, ge=1, description="torch CPU threads")
    stages: list[PipelineStage] = Field(min_length=1)
    gate: GateConfig = Field(default_factory=GateConfig)


def load_pipeline_config(path: Path) -> PipelineConfig:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise PipelineError(f"{path}: cannot read: {' '.join(str(error).split())}") from None
    if not isinstance(data, dict):
        raise PipelineError(f"{path}: a pipeline config is a mapping")
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "config"
        raise PipelineError(f"{path}: {where}: {first['msg']}") from None


def stage_configs(config: PipelineConfig, out: Path) -> list[tuple[StageKind, StageConfig]]:
    """Each stage's config with its folder under `out`; a stage with neither `model` nor
    `init_from` starts from the previous stage's folder (its latest complete checkpoint)."""
    stages: list[tuple[StageKind, StageConfig]] = []
    previous: Path | None = None
    for index, stage in enumerate(config.stages):
        fields = stage.stage_fields()
        name = str(fields.setdefault("name", f"{stage.kind}{index}"))
        if "out_dir" in fields:
            raise PipelineError(f"stages.{index}: out_dir is set by the pipeline (--out/{name})")
        fields["out_dir"] = out / name
        if previous is not None and fields.get("model") is None and "init_from" not in fields:
            fields["init_from"] = previous
        try:
            stages.append((stage.kind, StageConfig.model_validate(fields)))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "stage"
            raise PipelineError(f"stages.{index} ({name}): {where}: {first['msg']}") from None
        previous = out / name
    names = [stage.name for _, stage in stages]
    if len(set(names)) != len(names):
        raise PipelineError(f"stage names must differ: {', '.join(names)}")
    return stages


def initial_checkpoint(first: StageConfig, out: Path) -> Checkpoint:
    """The model before training: the first stage's starting checkpoint, or its new model
    (built as `run_stage` builds it) saved once with its tokenizer as step 0."""
    if first.init_from is not None:
        return resolve_checkpoint(first.init_from)
    folder = out / INITIAL_FOLDER
    existing = folder / "step-00000000"
    if is_complete(existing):
        return read_checkpoint(existing)
    start = stage_start(first)
    torch.manual_seed(first.seed)
    model = Transformer(start.model_config)
    state = {
        "stage": INITIAL_FOLDER,
        "seq_len": first.seq_len,
        "rope_base": start.model_config.rope_base,
        "tokens_seen": 0,
    }
    tokenizer = {TOKENIZER_FILE: start.tokenizer.inner.to_str()}
    return save_checkpoint(folder, model, 0, state, extra_files=tokenizer)


@dataclass(frozen=True)
class PipelineResult:
    verdicts: list[Verdict]  # by step
    best: CheckpointState | None  # the latest promoted checkpoint


def run_pipeline(config: PipelineConfig, out: Path, db_url: str, log: Log) -> PipelineResult:
    """Train every stage and gate every checkpoint."""
    stages = stage_configs(config, out)
    training_run = config.training_run or out.resolve().name
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    verdicts: dict[int, Verdict] = {}
    with CheckpointGate(config.gate, training_run, db_url, out / GATE_FOLDER, log) as gate:
        log(f"training run {training_run!r}: {len(stages)} stages, gating into {gate.store.url}")
        initial = initial_checkpoint(stages[0][1], out)
        verdicts[0] = gate.gate(initial, 0)
        offset = 0
        for kind, stage in stages:
            check_stage_kind(stage, kind)
            folder = out / stage.name

            def on_checkpoint(checkpoint: Checkpoint, offset: int = offset) -> None:
                step = offset + checkpoint.step
                verdicts[step] = gate.gate(checkpoint, step)

            run_stage(stage, folder, on_checkpoint, log)
            for checkpoint in complete_checkpoints(folder):  # a finished stage, on a resume
                if offset + checkpoint.step not in verdicts:
                    on_checkpoint(checkpoint)
            offset += stage.steps
        best = gate.best()
    return PipelineResult([verdicts[step] for step in sorted(verdicts)], best)


# --- command line -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _log(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m training.pipeline", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="the pipeline's YAML config")
    parser.add_argument("--out", type=Path, required=True, help="checkpoints and gate runs")
    parser.add_argument("--db", required=True, help="the leaderboard's SQLAlchemy URL")
    args = parser.parse_args(argv)
    try:
        config = load_pipeline_config(args.config)
        result = run_pipeline(config, args.out, args.db, _log)
    except (
        PipelineError,
        StageError,
        GateConfigError,
        CheckpointError,
        CursorBenchError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, RunInterrupted):
        print("interrupted: run the same command to resume", file=sys.stderr)
        return 130
    _log("")
    _log("step  resolved  gate          promoted")
    for verdict in result.verdicts:
        promoted = "yes" if verdict.promoted else "no"
        rate = f"{verdict.resolved_rate:.1%}"
        _log(f"{verdict.step:>4}  {rate:>8}  {verdict.decision:<12}  {promoted}")
    best = result.best
    if best is None:
        _log("no checkpoint promoted")
    else:
        _log(f"best checkpoint: step {best.step} ({best.path}, run {best.run_id})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
