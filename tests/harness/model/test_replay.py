"""Record and replay: a finished run's replies served back turn by turn over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cursorbench import api
from harness.model.doubles import ScriptedDouble
from harness.model.openai_server import Reply
from harness.results import AttemptResult, Failure, Status
from harness.run.runner import RunOutcome

TASK = "textkit-slugify"


def outcomes(outcome: RunOutcome) -> list[tuple]:
    """What must not change between a run and its replay, per attempt."""
    return [_outcome(result) for result in outcome.results]


def _outcome(result: AttemptResult) -> tuple:
    usage = (result.usage.tokens_in, result.usage.tokens_out, result.usage.model_calls)
    return (result.key, result.status, result.failure, result.tests, result.turns,
            result.tool_calls, usage, result.diff_lines_added)  # fmt: skip


def record(tmp_path: Path, serve, **model: object) -> RunOutcome:
    config = {
        "tasks": [TASK],
        "epochs": 2,
        "out": str(tmp_path / "recorded"),
        "store": {"kind": "none"},
        "executor": {"concurrency": 2},
    }
    if model:
        config["model"] = model
    return api.run(config)


def replay(tmp_path: Path, name: str = "replayed") -> RunOutcome:
    config = {
        "out": str(tmp_path / name),
        "store": {"kind": "none"},
        "model": {"kind": "replay", "run_dir": str(tmp_path / "recorded"), "max_retries": 0},
    }
    return api.run(config)


@pytest.mark.slow
def test_a_replay_gives_the_recorded_outcomes(tmp_path: Path, serve) -> None:
    recorded = record(tmp_path, serve)
    assert all(result.resolved for result in recorded.results)
    replayed = replay(tmp_path)
    assert outcomes(replayed) == outcomes(recorded)
    assert replayed.run.endpoint_label == "replay" and replayed.run.model == recorded.run.model
    assert replayed.run.config["epochs"] == 2  # the recording's tasks and epochs by default


@pytest.mark.slow
def test_a_replay_of_a_failing_agent_fails_the_same_way(tmp_path: Path, serve) -> None:
    script = ScriptedDouble([
        Reply(tool_calls=[("write_file", {"path": "textkit/slug.py", "content": "x = 1\n"})]),
        Reply(tool_calls=[("run", {"command": "python -m pytest -q tests/test_case.py"})]),
    ])  # fmt: skip
    recorded = record(tmp_path, serve, base_url=serve(script), name="scripted-double")
    assert {r.failure.value for r in recorded.results if r.failure} == {"tests_failed"}
    assert outcomes(replay(tmp_path)) == outcomes(recorded)


@pytest.mark.slow
def test_a_replay_that_diverges_says_where(tmp_path: Path, serve) -> None:
    record(tmp_path, serve)
    path = tmp_path / "recorded" / "trajectories" / f"{TASK}__1.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    first_tool = next(record for record in records if record["type"] == "tool")
    first_tool["output"] = "a listing the agent will not see again"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    replayed = replay(tmp_path)
    kept, diverged = replayed.results
    assert kept.resolved
    assert (diverged.status, diverged.failure) == (Status.ERROR, Failure.MODEL_API_ERROR)
    assert diverged.error is not None
    assert f"replay diverged at {TASK} epoch 1 turn 2: a tool result differs" in diverged.error
    assert "a listing the agent will not see again" in diverged.error
