"""Scripted agents for the eval scenarios: test doubles, not models.

`ScenarioAgent` answers as the well- or badly-behaved agent of each scenario,
knowing the scenario by its prompt and its place in the script by the turns so
far (the script is written knowing when the harness injects its messages).
The well-behaved one is the reference behaviour `cursorbench run --evals`
serves when no endpoint is given; `or_else` hands prompts it does not know to
another responder (the suite's reference solver).
"""

from __future__ import annotations

from typing import Any, Literal

from evals.scenario import Scenario, Step
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
