"""Checkpoints: round trip, and a torn or killed write never yields a loadable checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from training.checkpoint import (
    COMPLETE_MARKER,
    WEIGHTS_FILE,
    CheckpointError,
    checkpoint_name,
    complete_checkpoints,
    latest_checkpoint,
    load_model,
    load_optimizer_state,
    read_checkpoint,
    save_checkpoint,
)
from training.model import ModelConfig, MoEConfig, Transformer

CONFIG = ModelConfig(
    vocab_size=40,
    d_model=16,
    n_layers=2,
    n_heads=2,
    d_ff=32,
    max_seq_len=16,
    moe=MoEConfig(n_experts=2, top_k=1, d_expert=16, every=2),
    n_mtp_heads=1,
)


def _model(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(CONFIG)


def test_round_trip_restores_weights_config_state_and_optimizer(tmp_path: Path) -> None:
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.zeros(1, 4, dtype=torch.long)).logits.sum().backward()
    optimizer.step()
    saved = save_checkpoint(tmp_path, model, 7, {"stage": "pretrain"}, optimizer.state_dict())
    assert saved.path.name == checkpoint_name(7) and (saved.path / COMPLETE_MARKER).is_file()
    assert read_checkpoint(saved.path).state == {"step": 7, "stage": "pretrain"}

    loaded = load_model(saved.path)
    assert loaded.config == CONFIG
    for (name, ours), theirs in zip(
        model.state_dict().items(), loaded.state_dict().values(), strict=True
    ):
        assert torch.equal(ours, theirs), name
    optimizer_state = load_optimizer_state(saved.path)
    assert optimizer_state is not None and optimizer_state["state"][0]["step"] == 1


def test_latest_checkpoint_orders_by_step_and_existing_steps_are_kept(tmp_path: Path) -> None:
    for step in (10, 2, 30):
        save_checkpoint(tmp_path, _model(step), step)
    assert [c.step for c in complete_checkpoints(tmp_path)] == [2, 10, 30]
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and latest.step == 30
    before = (latest.path / WEIGHTS_FILE).read_bytes()
    save_checkpoint(tmp_path, _model(99), 30)  # already complete: not overwritten
    assert (latest.path / WEIGHTS_FILE).read_bytes() == before
    assert latest_checkpoint(tmp_path / "missing") is None


def test_a_torn_folder_without_the_marker_is_never_loaded_and_is_replaced(tmp_path: Path) -> None:
    good = save_checkpoint(tmp_path, _model(), 1)
    torn = save_checkpoint(tmp_path, _model(), 5).path
    (torn / COMPLETE_MARKER).unlink()  # as if the writer died just before the marker
    (torn / WEIGHTS_FILE).write_bytes(b"half a file")

    assert [c.step for c in complete_checkpoints(tmp_path)] == [1]
    assert latest_checkpoint(tmp_path) == good
    with pytest.raises(CheckpointError, match="no COMPLETE marker"):
        load_model(torn)

    rewritten = save_checkpoint(tmp_path, _model(), 5)
    assert load_model(rewritten.path).config == CONFIG
    assert [c.step for c in complete_checkpoints(tmp_path)] == [1, 5]


# A writer process that pauses at a chosen point of save_checkpoint so the test can SIGKILL it.
WRITER = textwrap.dedent(
    """
    import sys, time
    import torch
    from pathlib import Path
    import training.checkpoint as checkpoint
    from training.model import ModelConfig

    root, pause_at = Path(sys.argv[1]), sys.argv[2]
    config = ModelConfig.from_dict({config!r})

    def pause():
        print("paused", flush=True)
        time.sleep(60)

    if pause_at == "weights":  # mid-way through the weights file
        real_save_file = checkpoint.save_file

        def save_file(tensors, path):
            real_save_file(tensors, path)
            with open(path, "r+b") as handle:
                handle.truncate(100)
            pause()

        checkpoint.save_file = save_file
    else:  # renamed into place, marker not yet written
        real_fsync_dir = checkpoint._fsync_dir

        def fsync_dir(path):
            real_fsync_dir(path)
            if path == root:
                pause()

        checkpoint._fsync_dir = fsync_dir
    torch.manual_seed(0)
    checkpoint.save_checkpoint(root, checkpoint.Transformer(config), 3)
    """
)


@pytest.mark.parametrize("pause_at", ["weights", "before_marker"])
def test_a_killed_writer_leaves_no_complete_checkpoint(tmp_path: Path, pause_at: str) -> None:
    script = WRITER.format(config=CONFIG.to_dict())
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "OMP_NUM_THREADS": "1",
    }
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path), pause_at],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "paused"
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    leftovers = list(tmp_path.iterdir())
    assert leftovers, "the writer was killed before it wrote anything"
    assert complete_checkpoints(tmp_path) == []
    assert latest_checkpoint(tmp_path) is None
    # A restarted writer completes the same step.
    assert load_model(save_checkpoint(tmp_path, _model(), 3).path).config == CONFIG
