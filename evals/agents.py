"""Scripted agents for the eval scenarios: test doubles, not models.

`ScenarioAgent` answers as the well- or badly-behaved agent of each scenario,
knowing the scenario by its prompt and its place in the script by the turns so
far (the script is written knowing when the harness injects its messages).
The well-behaved one is the reference behaviour `cursorbench run --evals`
serves when no endpoint is given; `or_else` hands prompts it does not know to
another responder (the suite's reference solver).

`StufferAgent` is a cheap policy the intent eval must score 0: it answers every
request at once, changing nothing, with every identifier and number of the code
(all of the codebase's, or of the files the scenario is about, or its numbers only),
ending in a question mark so that it also reads as a clarifying question.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

from evals.graders.common import code_tokens
from evals.scenario import Scenario, Step, focus_candidates
from harness.model.openai_server import Answer, Reply, Responder, first_user_message, step_index

WELL_BEHAVED = "eval-reference-agent"


def reply_for(step: Step) -> Reply:
    if step.say is not None:
        return Reply(content=step.say)
    if step.finish is not None:
        return Reply(content=step.finish, tool_calls=[("finish", {"summary": step.finish})])
    if step.read is not None:
        return Reply(tool_calls=[("read_file", {"path": step.read})])
    if step.list is not None:
        return Reply(tool_calls=[("list_dir", {"path": step.list})])
    if step.search is not None:
        return Reply(tool_calls=[("search", {"pattern": step.search})])
    if step.run is not None:
        return Reply(tool_calls=[("run", {"command": step.run})])
    if step.edit is not None:
        edit = {"path": step.edit.path, "old_string": step.edit.old, "new_string": step.edit.new}
        return Reply(tool_calls=[("edit_file", edit)])
    assert step.write is not None
    return Reply(
        tool_calls=[("write_file", {"path": step.write.path, "content": step.write.content})]
    )


class ScenarioAgent:
    """Replays each scenario's `well` or `badly` script; past its end it calls `finish`."""

    def __init__(
        self,
        scenarios: list[Scenario],
        behaviour: Literal["well", "badly"] = "well",
        or_else: Responder | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.models = [WELL_BEHAVED if behaviour == "well" else "eval-badly-behaved-double"]
        if or_else is not None:
            self.models = [*self.models, *or_else.models]
        self.or_else = or_else
        self._scripts = {
            s.prompt.strip(): [reply_for(x) for x in s.script(behaviour)] for s in scenarios
        }

    def knows(self, request: dict[str, Any]) -> bool:
        return first_user_message(request).strip() in self._scripts

    def respond(self, request: dict[str, Any]) -> Answer:
        script = self._scripts.get(first_user_message(request).strip())
        if script is None:
            if self.or_else is not None:
                return self.or_else.respond(request)
            return Reply(content="I do not know this scenario.")
        index = step_index(request)
        if index >= len(script):
            return Reply(tool_calls=[("finish", {"summary": "done"})])
        return script[index]


Stuffing = Literal["codebase", "focus", "values"]


def _codebase_tokens(scenario: Scenario) -> frozenset[str]:
    return _tokens_under(scenario.codebase_dir())


@functools.cache
def _tokens_under(root: Path) -> frozenset[str]:
    """Every identifier and number (`code_tokens`) of the Python files under `root`."""
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts:
            found |= code_tokens(path.read_text(encoding="utf-8"))
    return frozenset(found)


def stuffed_reply(scenario: Scenario, what: Stuffing) -> str:
    """Every identifier and number of the scenario's code (`what`: of the whole codebase,
    of the files it is about, or its numbers only), as one reply."""
    words = set(focus_candidates(scenario) if what == "focus" else _codebase_tokens(scenario))
    if what == "values":
        words = {word for word in words if word[0].isdigit()}
    return "It could be any of these: " + ", ".join(sorted(words)) + ". Which one do you mean?"


class StufferAgent:
    """Replies to each scenario, changing nothing, with every name and value of its code."""

    def __init__(self, scenarios: list[Scenario], what: Stuffing = "codebase") -> None:
        self.models = [f"eval-stuffer-{what}-double"]
        self._replies = {s.prompt.strip(): stuffed_reply(s, what) for s in scenarios}

    def respond(self, request: dict[str, Any]) -> Answer:
        reply = self._replies.get(first_user_message(request).strip(), "I do not know.")
        if step_index(request) == 0:
            return Reply(content=reply)
        return Reply(tool_calls=[("finish", {"summary": reply})])
