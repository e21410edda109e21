"""Test doubles: scripted endpoints served over real HTTP by `OpenAIServer`.

These stand in for a model in tests and benchmarks. None of them is a model
and none of their scores mean anything about a model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.openai_server import RawReply, Reply, error_reply, models_list_reply, step_index


class DoneOnlyDouble:
    """Says "done" without touching anything."""

    models = ["done-only-double"]

    def respond(self, request: dict[str, Any]) -> Reply:
        return Reply(content="done")


class FailingDouble:
    """Answers every request with the same HTTP error; with `lists_models`, every request
    but `GET /models` (an endpoint that passes the pre-run check, then fails)."""

    models = ["failing-double"]

    def __init__(self, status: int = 500, lists_models: bool = False) -> None:
        self.status = status
        self.lists_models = lists_models

    def respond(self, request: dict[str, Any]) -> RawReply:
        return error_reply(self.status, "the double always fails")

    def models_reply(self) -> RawReply:
        if self.lists_models:
            return models_list_reply(self.models)
        return error_reply(self.status, "the double always fails")


class JunkDouble:
    """Answers 200 with bodies that are not chat completions (e.g. an HTML page)."""

    models = ["junk-double"]

    def __init__(
        self, body: bytes = b'{"choices": []}', content_type: str = "application/json"
    ) -> None:
        self.body = body
        self.content_type = content_type

    def respond(self, request: dict[str, Any]) -> RawReply:
        return RawReply(200, self.body, self.content_type)


Step = Reply | RawReply | Callable[[dict[str, Any]], Reply | RawReply]


class ScriptedDouble:
    """Replays a fixed list of steps; the step is chosen by the number of turns so far.

    Past the end of the script it calls `finish`.
    """

    models = ["scripted-double"]

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        index = step_index(request)
        if index >= len(self.steps):
            return Reply(tool_calls=[("finish", {"summary": "script ended"})])
        step = self.steps[index]
        return step(request) if callable(step) else step
