"""Replaying a finished run: its recorded model replies served back over HTTP, turn by turn.

Every reply a model gave is in the run's trajectories. `ReplayResponder`
serves them through `OpenAIServer`, so a replayed run takes exactly the path
a live one takes (client, agent loop, sandbox, grading) and can be re-scored
offline, or used to regression-test the harness: two executors or two
sandbox backends must give identical per-attempt outcomes on one replay.

Which attempt asks is told by the `X-CursorBench-Attempt: task#epoch` header
(sent by the model client when it serves a replay); the turn is the number
of assistant messages so far. Before answering, the conversation so far is
compared with the recording: the user messages and tool results must match,
with durations (`0.12s`) and the sandbox's root path left out. A replay that
diverges answers HTTP 409 saying where (task, epoch, turn) and what differs;
the attempt then ends as `error`/`model_api_error` with that message. Where
the recording ended in an endpoint failure or a context overflow, the replay
answers with the same kind of error.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agent.trajectory import read_trajectory
from harness.errors import ConfigError
from harness.model.chat import ATTEMPT_HEADER
from harness.model.openai_server import (
    RawReply,
    chat_completion,
    error_reply,
    step_index,
    usage_body,
)
from harness.results import RunInfo

DIVERGED = 409
DIVERGED_MESSAGE = "replay diverged"  # how the message of a diverged replay starts
SHOWN_CHARS = 120
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(s|ms|sec|seconds)\b")


@dataclass
class Recording:
    """One attempt's conversation as recorded: replies in order, and what the model saw."""

    task_id: str
    epoch: int
    replies: list[dict[str, Any]] = field(default_factory=list)  # `model` records
    seen: list[list[dict[str, Any]]] = field(default_factory=list)  # user/tool before each turn
    root: str = ""
    ended_with: str | None = None  # the agent's failure, if the endpoint ended it
    end_message: str = ""
    earlier: int = 0  # assistant turns of the task's earlier session (no replies of its own)


def load_recordings(run_dir: Path) -> tuple[RunInfo, dict[str, Recording]]:
    """The recorded run and its attempts' conversations by key (`task#epoch`)."""
    run_file = run_dir / "run.json"
    if not run_file.is_file():
        raise ConfigError(f"--replay {run_dir}: not a run folder (no run.json)")
    try:
        run = RunInfo.model_validate_json(run_file.read_text())
    except ValueError:
        raise ConfigError(f"--replay {run_dir}: run.json is not a CursorBench run file") from None
    recordings: dict[str, Recording] = {}
    for path in sorted((run_dir / "trajectories").glob("*.jsonl")):
        recording = _recording(read_trajectory(path))
        if recording is not None:
            recordings[f"{recording.task_id}#{recording.epoch}"] = recording
    if not recordings:
        raise ConfigError(f"--replay {run_dir}: the run has no trajectories to replay")
    return run, recordings


def _recording(records: list[dict[str, Any]]) -> Recording | None:
    if not records or records[0].get("type") != "header":
        return None
    header = records[0]
    recording = Recording(task_id=str(header["task_id"]), epoch=int(header["epoch"]))
    seen: list[dict[str, Any]] = []
    for record in records[1:]:
        kind = record.get("type")
        if kind == "message" and record.get("role") == "system":
            recording.root = _root(str(record.get("content", "")))
        elif kind == "message" and record.get("role") == "assistant":
            recording.earlier += 1  # an earlier turn: the request carries it, not a reply
        elif kind == "message":
            seen.append({"role": record.get("role"), "content": record.get("content")})
        elif kind == "model":
            recording.seen.append(list(seen))
            recording.replies.append(record)
        elif kind == "tool" and "output" in record:
            seen.append({"role": "tool", "content": record["output"]})
        elif kind == "agent_end":
            recording.ended_with = record.get("failure")
            recording.end_message = str(record.get("message") or "")
    recording.seen.append(list(seen))  # what the turn after the last reply would have seen
    return recording


def _root(system_prompt: str) -> str:
    found = re.search(r"repository at (\S+?)\.?\n", system_prompt + "\n")
    return found.group(1) if found else ""


def _normalized(text: Any, root: str) -> str:
    text = text if isinstance(text, str) else json.dumps(text)
    if root:
        text = text.replace(root, "<root>")
    return _DURATION.sub("<duration>", text)


def _shown(text: str) -> str:
    return repr(text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "...")


class ReplayResponder:
    """Serves a recorded run's replies; see the module docstring."""

    def __init__(self, run_dir: Path) -> None:
        self.run, self.recordings = load_recordings(run_dir)
        self.models = [self.run.model]
        self.divergences: list[str] = []

    def respond_to(self, request: dict[str, Any], headers: dict[str, str]) -> RawReply:
        key = headers.get(ATTEMPT_HEADER.lower())
        if not key:
            return error_reply(400, f"a replay needs the {ATTEMPT_HEADER} header")
        task_id, _, epoch = key.rpartition("#")
        recording = self.recordings.get(key)
        turn = step_index(request) - (recording.earlier if recording else 0)
        if recording is None:
            return self._diverged(task_id, epoch, turn, "the recording has no such attempt")
        messages = request.get("messages", [])
        difference = self._difference(recording, messages, turn)
        if difference:
            return self._diverged(task_id, epoch, turn, difference)
        if turn >= len(recording.replies):
            return self._recorded_end(recording, turn)
        return RawReply(200, json.dumps(_completion(recording.replies[turn], request)).encode())

    def respond(self, request: dict[str, Any]) -> RawReply:
        return error_reply(400, f"a replay needs the {ATTEMPT_HEADER} header")

    def _difference(
        self, recording: Recording, messages: list[dict[str, Any]], turn: int
    ) -> str | None:
        system = next((m for m in messages if m.get("role") == "system"), None)
        root = _root(str(system.get("content", ""))) if system else ""
        now = [m for m in messages if m.get("role") in ("user", "tool")]
        if turn >= len(recording.seen):
            return None  # past the recording's end: `_recorded_end` says so
        then = recording.seen[turn]
        for index, (was, came) in enumerate(zip(then, now, strict=False)):
            before = _normalized(was.get("content"), recording.root)
            after = _normalized(came.get("content"), root)
            if was.get("role") != came.get("role") or before != after:
                what = "a tool result" if was.get("role") == "tool" else "a user message"
                return (
                    f"{what} differs from the recording (message {index + 1}): "
                    f"recorded {_shown(before)}, now {_shown(after)}"
                )
        if len(then) != len(now):
            return f"{len(now)} user and tool messages, the recording has {len(then)}"
        return None

    def _recorded_end(self, recording: Recording, turn: int) -> RawReply:
        if recording.ended_with == "model_api_error":
            return error_reply(503, f"recorded endpoint failure: {recording.end_message}")
        if recording.ended_with == "context_overflow":
            return error_reply(
                400, f"maximum context length exceeded (recorded): {recording.end_message}"
            )
        return self._diverged(
            recording.task_id,
            str(recording.epoch),
            turn,
            f"the agent asks for turn {turn + 1}; the recording has {len(recording.replies)}",
        )

    def _diverged(self, task_id: str, epoch: str, turn: int, what: str) -> RawReply:
        message = f"{DIVERGED_MESSAGE} at {task_id} epoch {epoch} turn {turn + 1}: {what}"
        self.divergences.append(message)
        return error_reply(DIVERGED, message)


def _completion(record: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The recorded reply as a chat completion, tool call ids and token counts as recorded."""
    message = dict(record.get("message") or {})
    message.setdefault("role", "assistant")
    usage = record.get("usage") or {}
    finish = record.get("finish_reason") or ("tool_calls" if message.get("tool_calls") else "stop")
    counted = None
    if not usage.get("estimated_calls"):
        counted = usage_body(int(usage.get("tokens_in", 0)), int(usage.get("tokens_out", 0)))
    ident = f"chatcmpl-replay-{int(time.time() * 1000)}"
    return chat_completion(str(request.get("model", "")), message, str(finish), counted, ident)
