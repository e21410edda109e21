"""Test doubles: scripted endpoints served over real HTTP by `OpenAIServer`.

These stand in for a model in tests and benchmarks. None of them is a model
and none of their scores mean anything about a model.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.model.openai_server import (
    RawReply,
    Reply,
    error_reply,
    first_user_message,
    models_list_reply,
    step_index,
    tool_turns,
)


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


# -- baselines: agents every behaviour eval must score about 0 (evals/baselines.py) -----------


class FinishAtOnceDouble:
    """The null agent: calls `finish` at once, every turn, changing nothing."""

    models = ["finish-at-once-double"]

    def respond(self, request: dict[str, Any]) -> Reply:
        return Reply(tool_calls=[("finish", {"summary": "done"})])


IRRELEVANT_COMMANDS = (
    "printf 'scratch notes %s\\n' {token} > NOTES-{token}.md",
    "mkdir -p scratch && printf '%s\\n' {token} > scratch/{token}.txt",
    "f=$(find . -name '*.py' -not -path './tests/*' | sort | head -n 1); "
    "printf '\\n# %s\\n' {token} >> \"$f\"",
)


class IrrelevantEditDouble:
    """The always-edit agent: on its first turn makes one edit unrelated to the request,
    chosen at random (seeded by `seed` and the prompt): a new notes file through
    `write_file`, or through the shell a scratch file or a comment appended to a source
    file. Then it finishes with "Done."."""

    models = ["irrelevant-edit-double"]

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def respond(self, request: dict[str, Any]) -> Reply:
        if tool_turns(request) > 0:
            return Reply(tool_calls=[("finish", {"summary": "Done."})])
        prompt = first_user_message(request)
        rng = random.Random(f"{self.seed}:{prompt}")
        token = f"{rng.randrange(16**6):06x}"
        choice = rng.randrange(len(IRRELEVANT_COMMANDS) + 1)
        if choice == len(IRRELEVANT_COMMANDS):
            write = {"path": f"notes-{token}.md", "content": f"Notes {token}\n"}
            return Reply(tool_calls=[("write_file", write)])
        command = IRRELEVANT_COMMANDS[choice].format(token=token)
        return Reply(tool_calls=[("run", {"command": command})])


BREAK_COMMAND = (
    "find . -name '*.py' -not -path './tests/*' -not -name 'test_*' "
    '-exec sh -c \'printf "\\ndef (:\\n" >> "$1"\' _ {} \\;'
)


class BreakingDouble:
    """The agent that breaks the code: appends a syntax error to every source file outside
    tests through the shell, then finishes saying it fixed everything."""

    models = ["breaking-double"]

    def respond(self, request: dict[str, Any]) -> Reply:
        if tool_turns(request) > 0:
            return Reply(tool_calls=[("finish", {"summary": "Fixed everything."})])
        return Reply(tool_calls=[("run", {"command": BREAK_COMMAND})])
