"""The RL run end to end at the smallest size, through the harness: warm start, a learner
step on micro-task attempts, a checkpoint scored on held-out tasks and logged; then a second
invocation resumes from that checkpoint instead of starting over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.rl.learner import LearnerConfig
from training.rl.run import RLConfig, run_rl


@pytest.mark.slow
def test_an_rl_run_logs_checkpoints_and_resumes(tmp_path: Path) -> None:
    config = RLConfig(
        out=tmp_path / "rl",
        steps=1,
        groups_per_step=1,
        workers=1,
        checkpoint_every=1,
        warm_start_steps=5,
        held_out_samples=1,
        learner=LearnerConfig(group_size=2, max_tokens=96),
    )
    lines: list[str] = []
    first = run_rl(config, lines.append)
    assert [r["version"] for r in first] == [1]
    second = run_rl(config.model_copy(update={"steps": 2}), lines.append)
    assert any(line.startswith("resumed from step-00000001") for line in lines)
    assert [r["version"] for r in second] == [2]
    records = [json.loads(x) for x in (config.out / "metrics.jsonl").read_text().splitlines()]
    checkpoints = [r for r in records if r["kind"] == "checkpoint"]
    assert [r["version"] for r in checkpoints] == [0, 1, 2]
    assert all(0 <= r["held_out_reward"] <= 1.1 for r in checkpoints)
    steps = [r for r in records if r["kind"] == "step"]
    assert all(s["max_lag"] <= config.max_lag for s in steps)
