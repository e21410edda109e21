"""The reference solver: the embedded default endpoint, and not a model.

It replays each task's reference solution (the reverse of its mutation, or the
solution its source brings: a Harbor task's solve.sh) through real tool calls: it
lists the workspace, writes every file the solution changes, runs the visible tests,
and calls `finish`. It is served by
`harness.model.openai_server.OpenAIServer`, so a run against it takes exactly the
path a provider's endpoint takes. A run scoring less than 100% with it points
at the harness or the task, never at a model.
"""

from __future__ import annotations

import shlex
from typing import Any

from cursorbench.config import REFERENCE_SOLVER as REFERENCE_SOLVER
from cursorbench.tasks.answer import reference_tree
from cursorbench.tasks.sources.registry import source_of
from cursorbench.tasks.workspace import BuiltTask
from harness.kinds.registry import kind_of
from harness.model.openai_server import RawReply, Reply, error_reply, step_index


def reference_steps(built: BuiltTask) -> list[Reply]:
    spec = built.task.source
    own = source_of(spec).solution_steps(spec, built)
    if own is not None:
        return own
    steps = [Reply(content="Looking at the workspace.", tool_calls=[("list_dir", {"path": "."})])]
    tree = reference_tree(built)
    for path, text in tree.items():
        if text is None:
            steps.append(Reply(tool_calls=[("run", {"command": shlex.join(["rm", "-f", path])})]))
        else:
            steps.append(Reply(tool_calls=[("write_file", {"path": path, "content": text})]))
    test_args = visible_test_args(built, list(tree))
    if test_args:
        test_command = shlex.join(["python", "-m", "pytest", "-q", *test_args])
        steps.append(Reply(tool_calls=[("run", {"command": test_command})]))
    summary = f"Applied the reference solution of {built.task.id}."
    steps.append(Reply(content=summary, tool_calls=[("finish", {"summary": summary})]))
    return steps


def visible_test_args(built: BuiltTask, written: list[str]) -> list[str]:
    """What the solver runs to check its work: the task's tests, the test files it wrote
    for a testing task, nothing for an answer."""
    check = built.task.verification
    return kind_of(check).solver_test_args(check, written)


class ReferenceSolver:
    """Knows each task by its prompt (the first user message it knows: a task's earlier
    turns come before it); its position in a script by the model's turns since."""

    models = [REFERENCE_SOLVER]

    def __init__(self, tasks: list[BuiltTask]) -> None:
        self._scripts: dict[str, tuple[list[Reply], int]] = {}
        for built in tasks:
            earlier = sum(1 for t in built.task.earlier_turns if t.role == "assistant")
            self._scripts[built.task.prompt.strip()] = (reference_steps(built), earlier)

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        for text in user_messages(request):
            if text.strip() in self._scripts:
                script, earlier = self._scripts[text.strip()]
                index = step_index(request) - earlier
                return script[min(index, len(script) - 1)]
        return error_reply(400, "the reference solver knows no task with this prompt")


def user_messages(request: dict[str, Any]) -> list[str]:
    messages = request.get("messages", [])
    users = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return [text for text in users if isinstance(text, str)]
