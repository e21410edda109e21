"""The stage loop: context extension helps at the long length, a SIGKILLed stage resumes to the
same weights, stage CLIs refuse bad configs in one line, SFT trains on agent trajectories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from safetensors.torch import load_file

from training.checkpoint import (
    WEIGHTS_FILE,
    complete_checkpoints,
    is_complete,
    latest_checkpoint,
    load_model,
)
from training.data import TOKENIZER_FILE, CorpusConfig, corpus_streams, evaluation_batches
from training.model import rope_base_for_length
from training.tokenizer import CodeTokenizer
from training.train import (
    StageConfig,
    evaluate_loss,
    lr_multiplier,
    run_stage,
    stage_main,
)

REPO = Path(__file__).resolve().parents[2]
STDLIB = Path(json.__file__).parents[1]
TINY_MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 128, "n_mtp_heads": 1}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A small slice of the standard library (its tokenizer and streams cached once)."""
    cache = tmp_path_factory.mktemp("training-cache")
    return {"roots": [str(STDLIB / "email"), str(STDLIB / "json")], "max_files": 40,
            "cache_dir": str(cache)}  # fmt: skip


def pretrain_config(corpus: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    config = {
        "name": "pretrain",
        "model": TINY_MODEL,
        "data": {"source": "pretrain", "vocab_size": 512, "corpus": corpus},
        "seq_len": 32,
        "batch_size": 16,
        "steps": 120,
        "lr": 0.003,
        "warmup_steps": 10,
        "optimizer": "muon",
        "checkpoint_every": 60,
        "log_every": 40,
        "threads": 1,
    }
    return config | overrides


@pytest.fixture(scope="module")
def pretrained(corpus: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pretrain")
    run_stage(StageConfig.model_validate(pretrain_config(corpus)), out, log=lambda _: None)
    return out


def test_lr_warms_up_then_decays_to_the_floor() -> None:
    schedule = {"steps": 100, "warmup_steps": 10, "min_lr_ratio": 0.1}
    shape = {"model": {}, "seq_len": 8, "batch_size": 1, "checkpoint_every": 10}
    config = StageConfig.model_validate(schedule | shape)
    assert lr_multiplier(5, config) == pytest.approx(0.5)
    assert lr_multiplier(10, config) == pytest.approx(1.0)
    assert lr_multiplier(55, config) == pytest.approx(0.55)
    assert lr_multiplier(100, config) == pytest.approx(0.1)


def test_extended_model_beats_the_pre_extension_model_at_the_long_length(
    corpus: dict[str, Any], pretrained: Path, tmp_path: Path
) -> None:
    """At this scale the pre-extension model barely degrades past its trained length, so most
    of the gain is the extra training; the test pins the stage (4x length, raised base, init
    from the checkpoint) and that it lowers the held-out loss at the long length."""
    extend = {
        "name": "extend",
        "init_from": str(pretrained),
        "data": {"source": "pretrain", "corpus": corpus},
        "seq_len": 128,
        "rope_base": "auto",
        "batch_size": 4,
        "steps": 40,
        "lr": 0.002,
        "warmup_steps": 4,
        "optimizer": "muon",
        "checkpoint_every": 40,
        "threads": 1,
    }
    final = run_stage(StageConfig.model_validate(extend), tmp_path / "extend", log=lambda _: None)
    pretrained_checkpoint = latest_checkpoint(pretrained)
    assert pretrained_checkpoint is not None
    before, after = load_model(pretrained_checkpoint.path), load_model(final.path)
    expected_base = rope_base_for_length(10_000.0, 16, 32, 128)
    assert after.config.rope_base == pytest.approx(expected_base) and final.state["seq_len"] == 128
    # tokens_seen goes on from the stage it started from: 120 x 16 x 32, then 40 x 4 x 128
    assert pretrained_checkpoint.state["tokens_seen"] == 120 * 16 * 32
    assert final.state["tokens_seen"] == 120 * 16 * 32 + 40 * 4 * 128
    tokenizer = CodeTokenizer.load(final.path / TOKENIZER_FILE)
    heldout = corpus_streams(CorpusConfig.model_validate(corpus), tokenizer).heldout
    long_batches = evaluation_batches(heldout, batch_size=4, seq_len=128, max_batches=4)
    loss_before = evaluate_loss(before, long_batches)
    loss_after = evaluate_loss(after, long_batches)
    print(f"held-out loss at length 128: before {loss_before:.3f}, after {loss_after:.3f}")
    assert loss_after < loss_before - 0.05, (loss_before, loss_after)


def _write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def _cli(stage: str, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", f"training.{stage}", *args]
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.slow
def test_a_stage_killed_mid_run_resumes_to_the_uninterrupted_result(
    corpus: dict[str, Any], tmp_path: Path
) -> None:
    settings = pretrain_config(
        corpus, steps=60, batch_size=8, checkpoint_every=10, log_every=10, seed=3
    )
    config = _write_config(tmp_path / "pretrain.yaml", settings)
    out = tmp_path / "killed"
    process = _cli("pretrain", "--config", str(config), "--out", str(out))
    deadline = time.monotonic() + 300
    while not is_complete(out / "step-00000020") and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed_at = latest_checkpoint(out)
    assert killed_at is not None and 20 <= killed_at.step < 60, "the kill came after the end"

    resumed = _cli("pretrain", "--config", str(config), "--out", str(out))
    log = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 0, log
    assert f"resuming from step-{killed_at.step:08d}" in log
    final = latest_checkpoint(out)
    assert final is not None and final.step == 60
    assert not list(out.glob(".step-*"))  # no staging folder of the killed writer is left
    assert all((c.path / TOKENIZER_FILE).is_file() for c in complete_checkpoints(out))
    steps = [step for step, _ in final.state["losses"]]
    assert steps == list(range(1, 61))  # one unbroken loss trajectory across the kill
    assert final.state["losses"][: killed_at.step] == killed_at.state["losses"]

    straight = run_stage(StageConfig.model_validate(settings), tmp_path / "straight", log=print)
    assert final.state["losses"] == straight.state["losses"]
    resumed_weights = load_file(str(final.path / WEIGHTS_FILE))
    straight_weights = load_file(str(straight.path / WEIGHTS_FILE))
    assert resumed_weights.keys() == straight_weights.keys()
    for name, tensor in straight_weights.items():
        assert torch.equal(resumed_weights[name], tensor), name


def test_stage_clis_refuse_bad_configs_in_one_line(
    corpus: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write_config(tmp_path / "bad.yaml", pretrain_config(corpus, steps=0))
    assert stage_main("pretrain", ["--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error:") and "steps" in error and error.count("\n") == 1

    # a stage trained at seq_len 32 (one step: the refusal reads its config, not its weights)
    short = pretrain_config(corpus, steps=1, warmup_steps=0, checkpoint_every=1, log_every=1)
    run_stage(StageConfig.model_validate(short), tmp_path / "short", log=lambda _: None)
    not_longer = pretrain_config(corpus, model=None, init_from=str(tmp_path / "short"), seq_len=32)
    path = _write_config(tmp_path / "extend.yaml", not_longer)
    assert stage_main("extend", ["--config", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "lengthens the context" in capsys.readouterr().err

    assert stage_main("sft", ["--config", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "needs data.source: sft" in capsys.readouterr().err
    assert stage_main("pretrain", ["--config", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read config" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_sft_trains_on_the_reference_solvers_trajectories(pretrained: Path, tmp_path: Path) -> None:
    from training.data import load_conversations, reference_trajectories

    run_dir = reference_trajectories(tmp_path / "reference", ["textkit-slugify"])
    assert load_conversations(run_dir)  # resolved attempts in the harness's trajectory format
    sft = {
        "name": "sft",
        "init_from": str(pretrained),
        "data": {"source": "sft", "run_dir": str(run_dir)},
        "seq_len": 64,
        "batch_size": 4,
        "steps": 30,
        "lr": 0.003,
        "warmup_steps": 2,
        "checkpoint_every": 30,
        "eval_every": 10,
        "threads": 1,
    }
    config = _write_config(tmp_path / "sft.yaml", sft)
    process = _cli("sft", "--config", str(config), "--out", str(tmp_path / "sft"))
    log = process.communicate(timeout=300)[0]
    assert process.returncode == 0, log
    final = latest_checkpoint(tmp_path / "sft")
    assert final is not None and final.state["stage"] == "sft"
    assert (final.path / TOKENIZER_FILE).is_file()
    evals = [loss for _, loss in final.state["eval"]]
    assert evals[-1] < evals[0], evals  # the assistant's tokens got likelier
