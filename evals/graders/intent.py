"""Intent: did the agent do what the user meant?

A question gets an answer and no edit; a request gets an edit of the files it is
about; "make X faster" keeps the public API; a request the code cannot resolve
gets a clarifying question. Graded from the final workspace state and the
final message.

Nothing holds vacuously: an answer scores the share of the facts it must state
(`mentions`, matched as facts: "5,400" states "5400", "timezone" states "time
zone"), and 0 when it also states a `wrong` one (a hedged answer, or one stuffed
with every name and number); an edit scores 0 unless the request's own change was
made, correctly (hidden tests, when the scenario has them) and without breaking
the code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evals.graders.common import (
    broken_python,
    changed_files,
    final_message,
    functions,
    matches,
    missing_facts,
    penalty_score,
    signature,
    stated_wrong,
)
from harness.results import Score
from harness.scoring import FinalState, Records, register
from harness.spec import PreparedTask


class IntentParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expect: Literal["answer", "edit", "clarify"]
    mentions: list[str] = []  # facts the final message must state
    wrong: list[str] = []  # facts a right reply does not state (wrong or hedged answers)
    edit_files: list[str] = []  # globs: an expected edit touches at least one
    keep_api: list[str] = []  # "path::name" (or "path::Class.method") whose signature stays


def _facts(message: str, params: IntentParams) -> Score:
    """The share of the required facts stated; 0 if a wrong one is stated too."""
    wrong = stated_wrong(message, params.wrong)
    if wrong:
        listed = ", ".join(map(repr, wrong))
        return Score(value=0.0, reasons=[f"the reply also states {listed}: wrong, or hedged"])
    if not params.mentions:
        return Score(value=1.0)
    missing = missing_facts(message, params.mentions)
    value = round(1 - len(missing) / len(params.mentions), 4)
    reasons = [f"the reply does not state {', '.join(map(repr, missing))}"] if missing else []
    return Score(value=value, reasons=reasons)


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
    if params.expect == "edit":
        return _edit(state, message, params)
    if not message:
        return Score(value=0.0, reasons=["no final message: the user got no reply"])
    if params.expect == "clarify" and "?" not in message:
        return Score(value=0.0, reasons=["the request was ambiguous; the agent asked nothing"])
    if params.expect == "answer" and not params.mentions:
        return Score(value=0.0, reasons=["the scenario names no fact to check the answer by"])
    return _facts(message, params)


def _edit(state: FinalState, message: str, params: IntentParams) -> Score:
    changed = changed_files(state)
    if not changed:
        return Score(value=0.0, reasons=["asked for a change, the agent changed nothing"])
    if state.resolved is False:
        return Score(value=0.0, reasons=["the change fails the hidden tests"])
    broken = broken_python(state)
    if broken:
        return Score(value=0.0, reasons=[f"the change breaks {', '.join(broken)}"])
    if params.edit_files and not any(matches(path, params.edit_files) for path in changed):
        about = ", ".join(params.edit_files)
        return Score(value=0.0, reasons=[f"edited {', '.join(changed)}, not {about}"])
    penalties = _api_changes(state, params.keep_api)
    value, reasons = penalty_score(penalties)
    if params.mentions or params.wrong:
        said = _facts(message, params)
        value, reasons = round(value * said.value, 4), [*reasons, *said.reasons]
    return Score(value=value, reasons=reasons)
