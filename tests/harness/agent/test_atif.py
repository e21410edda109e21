"""ATIF trajectories: the conversion is lossless (records and conversation read back), and
what a real run exports is accepted by Harbor's own validator (slow: it builds Harbor's
environment the first time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agent.atif import AtifError, atif_path, conversation, from_atif, to_atif
from harness.agent.trajectory import read_trajectory
from harness.model.doubles import ScriptedDouble
from harness.model.openai_server import Reply
from tests.cli_runner import cursorbench
from tests.harbor_env import validate_trajectories

USAGE = {"tokens_in": 120, "tokens_out": 7, "cost_usd": 0.25, "model_calls": 1, "retries": 0}


def handwritten() -> list[dict[str, Any]]:
    """Every kind of record the agent loop writes, with the odd cases: a null content,
    arguments that are not JSON, a skipped call without arguments, a call with no output."""
    return [
        {"type": "header", "t": 0.0, "format_version": 1, "task_id": "t", "epoch": 2, "model": "m"},
        {"type": "message", "t": 0.1, "role": "system", "content": "be good"},
        {"type": "message", "t": 0.1, "role": "user", "content": "fix it"},
        {
            "type": "model",
            "t": 0.2,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "run", "arguments": "{bad"},
                    },
                    {
                        "id": "b",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"x.py"}'},
                    },
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "finish", "arguments": "{}"},
                    },
                ],
            },
            "finish_reason": "tool_calls",
            "usage": USAGE,
        },
        {
            "type": "tool",
            "t": 0.3,
            "id": "a",
            "name": "run",
            "arguments": "{bad",
            "output": "error: x",
        },
        {
            "type": "tool",
            "t": 0.4,
            "id": "b",
            "name": "read_file",
            "arguments": '{"path":"x.py"}',
            "output": "print(1)",
            "duration_s": 0.01,
        },
        {
            "type": "tool",
            "t": 0.5,
            "id": "c",
            "name": "finish",
            "output": "not run",
            "skipped": True,
        },
        {
            "type": "message",
            "t": 0.6,
            "role": "user",
            "content": "also this",
            "injected": True,
            "turn": 1,
        },
        {
            "type": "model",
            "t": 0.7,
            "message": {"role": "assistant", "content": "done"},
            "finish_reason": "stop",
            "usage": USAGE | {"tokens_in": 200},
        },
        {"type": "tool", "t": 0.8, "id": "zz", "name": "finish", "arguments": "{}"},  # no call
        {"type": "agent_end", "t": 0.9, "failure": None, "message": "done"},
        {"type": "diff", "t": 1.0, "patch": "diff --git a/x b/x\n"},
        {
            "type": "result",
            "t": 1.1,
            "result": {"status": "failed", "turns": 2, "tests": {"a": "failed"}},
        },
    ]


def test_a_trajectory_read_back_is_the_same_records_and_conversation() -> None:
    records = handwritten()
    document = json.loads(json.dumps(to_atif(records, agent_version="9", session_id="run")))
    assert from_atif(document) == records
    assert conversation(from_atif(document)) == conversation(records)
    assert len(conversation(records)) == 8  # system, user, reply, 3 results, user, reply


def test_the_document_uses_atifs_own_fields() -> None:
    document = to_atif(handwritten(), agent_version="9", session_id="run")
    steps = document["steps"]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "user", "agent"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4, 5]
    calls = steps[2]["tool_calls"]
    assert [c["function_name"] for c in calls] == ["run", "read_file", "finish"]
    assert calls[1]["arguments"] == {"path": "x.py"}
    assert calls[0]["arguments"] == {}  # not JSON: kept raw in extra
    results = steps[2]["observation"]["results"]
    assert [(r["source_call_id"], r["content"]) for r in results][:2] == [
        ("a", "error: x"),
        ("b", "print(1)"),
    ]
    assert steps[2]["metrics"]["prompt_tokens"] == 120
    assert steps[2]["metrics"]["completion_tokens"] == 7
    assert document["final_metrics"]["total_prompt_tokens"] == 320
    assert document["final_metrics"]["total_cost_usd"] == 0.5
    assert document["final_metrics"]["extra"]["status"] == "failed"
    assert document["session_id"] == "run"
    assert document["agent"]["model_name"] == "m"


def test_an_attempt_without_messages_still_has_a_step() -> None:
    records = [{"type": "header", "format_version": 1, "task_id": "t", "epoch": 0}]
    document = to_atif(records, agent_version="9")
    assert len(document["steps"]) == 1
    assert from_atif(document) == records


def test_a_foreign_document_is_refused() -> None:
    with pytest.raises(AtifError, match="not an ATIF trajectory written by cursorbench"):
        from_atif({"schema_version": "ATIF-v1.6", "agent": {}, "steps": []})


def test_the_atif_file_lies_next_to_the_trajectory() -> None:
    assert atif_path("trajectories/t__0.jsonl") == "trajectories/t__0.atif.json"


def odd_script() -> list[Any]:
    """A scripted agent that reads, runs, sends junk arguments, talks, then gives up."""
    return [
        Reply(content="Looking.", tool_calls=[("list_dir", {"path": "."})]),
        Reply(tool_calls=[("run", {"command": "python -m pytest -q", "timeout_s": 60})]),
        Reply(tool_calls=[("read_file", "{not json")]),
        Reply(tool_calls=[("read_file", {"path": "README.md"}), ("list_dir", {"path": "tests"})]),
    ]


@pytest.mark.slow
def test_every_attempt_of_a_smoke_run_exports_to_atif_harbor_accepts(
    tmp_path: Path, run_benchmark: Any, serve: Any
) -> None:
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    reference = run_benchmark(db=db, atif=True, out=tmp_path / "reference")
    scripted = run_benchmark(
        db=db,
        tasks=["textkit-slugify"],
        base_url=serve(ScriptedDouble(odd_script())),
        model="scripted-double",
        atif=True,
        out=tmp_path / "scripted",
    )
    attempts = len(reference.results) + len(scripted.results)
    assert len(reference.results) >= 6 and len(scripted.results) == 1

    exported = tmp_path / "atif"
    done = cursorbench("runs", "export", "--db", db, "--format", "atif", "--out", str(exported))
    assert done.returncode == 0, done.stderr
    assert f"wrote {attempts} trajectories" in done.stdout
    files = sorted(exported.rglob("*.atif.json"))
    assert len(files) == attempts

    report = validate_trajectories(files)
    assert report == {str(path): [] for path in files}

    for outcome, folder in ((reference, "reference"), (scripted, "scripted")):
        for result in outcome.results:
            assert result.trajectory is not None
            trajectory = tmp_path / folder / result.trajectory
            records = read_trajectory(trajectory)
            beside = json.loads((tmp_path / folder / atif_path(result.trajectory)).read_text())
            from_export = json.loads(
                (
                    exported / outcome.run.id / Path(beside["trajectory_id"] + ".atif.json")
                ).read_text()
            )
            assert from_atif(beside) == records
            assert from_atif(from_export) == records
            assert beside["final_metrics"]["extra"]["status"] == result.status.value
