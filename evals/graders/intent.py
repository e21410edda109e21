"""Intent: did the agent do what the user meant?

A question gets an answer and no edit; a request gets an edit of the files it is
about; "make X faster" keeps the public API; a request the code cannot resolve
gets a clarifying question. Graded from the final workspace state and the
final message.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evals.graders.common import (
    changed_files,
    final_message,
    functions,
    matches,
    penalty_score,
    signature,
)
from harness.results import Score
from harness.scoring import FinalState, Records, register
from harness.spec import PreparedTask


class IntentParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expect: Literal["answer", "edit", "clarify"]
    mentions: list[str] = []  # words the final message must contain (any case)
    edit_files: list[str] = []  # globs: an expected edit touches at least one
    keep_api: list[str] = []  # "path::name" (or "path::Class.method") whose signature stays


def _mentions(message: str, words: list[str]) -> list[tuple[float, str]]:
    lowered = message.lower()
    missing = [word for word in words if word.lower() not in lowered]
    if not words or not missing:
        return []
    weight = 0.6 * len(missing) / len(words)
    return [(weight, f"the final message does not mention {', '.join(map(repr, missing))}")]


def _api_changes(state: FinalState, keep: list[str]) -> list[tuple[float, str]]:
    penalties = []
    for item in keep:
        path, _, name = item.partition("::")
        if path not in state.after:
            continue  # the file was not touched
        old = functions(state.before.get(path)).get(name)
        new = functions(state.after.get(path)).get(name)
        if old is None:
            continue
        if new is None:
            penalties.append((0.6, f"removed public {name} from {path}"))
        elif signature(old) != signature(new):
            change = f"{signature(old)} -> {signature(new)}"
            penalties.append((0.6, f"changed the public signature of {name}: {change}"))
    return penalties


@register("intent", IntentParams)
def grade_intent(
    task: PreparedTask, state: FinalState, records: Records, params: IntentParams
) -> Score:
    changed = changed_files(state)
    message = final_message(records).strip()
    if params.expect in ("answer", "clarify") and changed:
        wanted = "an answer" if params.expect == "answer" else "a clarifying question"
        return Score(value=0.0, reasons=[f"wanted {wanted}, got edits to {', '.join(changed)}"])
    penalties: list[tuple[float, str]] = []
    if params.expect == "edit":
        if not changed:
            return Score(value=0.0, reasons=["asked for a change, the agent changed nothing"])
        if params.edit_files and not any(matches(path, params.edit_files) for path in changed):
            about = ", ".join(params.edit_files)
            penalties.append((0.7, f"edited {', '.join(changed)}, not what was asked ({about})"))
        penalties += _api_changes(state, params.keep_api)
    elif not message:
        return Score(value=0.0, reasons=["no final message: the user got no reply"])
    elif params.expect == "clarify" and "?" not in message:
        return Score(value=0.0, reasons=["the request was ambiguous; the agent asked nothing"])
    penalties += _mentions(message, params.mentions)
    value, reasons = penalty_score(penalties)
    return Score(value=value, reasons=reasons)
