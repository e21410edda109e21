"""Intent: did the agent do what the user meant?

A question gets an answer and no edit; a request gets an edit of the files it is
about; "make X faster" keeps the public API; a request the code cannot resolve
gets a clarifying question; an underspecified one (`ask_then_edit`) gets a question, then
the edit the simulated user's answer asks for (an edit made before asking is a guess: 0).
Graded from the final workspace state, the trajectory and the final message.

Nothing holds vacuously: an answer scores the share of the facts it must state
(`mentions`, matched as facts: "5,400" states "5400", "timezone" states "time
zone"), and 0 when it also states a `wrong` one (a hedged answer); an edit scores 0
unless the request's own change was made, correctly (hidden tests, when the scenario
has them) and without breaking the code.

Answers must be specific, in every scenario: a final message that names many of the
code's other identifiers and numbers (`candidates`, filled by `evals.scenario.checks`
from the files the scenario is about; those of the request and of `mentions` left out)
is stuffed and scores 0, whatever it also gets right: `stuffing_limit` of them, at
least 3 and at most `STUFFED_AT`, a quarter of the pool between.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evals.graders.common import (
    broken_python,
    changed_files,
    fact_tokens,
    final_message,
    functions,
    injected_messages,
    matches,
    missing_facts,
    penalty_score,
    signature,
    stated_candidates,
    stated_wrong,
    tool_events,
)
from evals.graders.interruption import writes
from harness.grading.scoring import FinalState, Records, register
from harness.results import Score
from harness.spec import PreparedTask


class IntentParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expect: Literal["answer", "edit", "clarify", "ask_then_edit"]
    mentions: list[str] = []  # facts the final message must state
    wrong: list[str] = []  # facts a right reply does not state (wrong or hedged answers)
    edit_files: list[str] = []  # globs: an expected edit touches at least one
    keep_api: list[str] = []  # "path::name" (or "path::Class.method") whose signature stays
    candidates: list[str] = []  # the code's identifiers and numbers (fact tokens)


STUFFED_AT = 8  # other names and values a reply may never reach (well-behaved ones say <= 4)


def stuffing_limit(pool: int) -> int:
    """How many of a pool of other names and values make a reply stuffed."""
    return max(3, min(STUFFED_AT, math.ceil(pool / 4)))


def stuffed(prompt: str, message: str, params: IntentParams) -> Score | None:
    """0 when the message names too many of the candidates the request and the required
    facts do not: a reply stuffed with the code's names and values, not a specific one."""
    asked = {token for text in (prompt, *params.mentions) for token in fact_tokens(text)}
    pool = set(params.candidates) - asked
    extra = stated_candidates(message, pool)
    if len(extra) < stuffing_limit(len(pool)):
        return None
    some = ", ".join(sorted(extra)[:6])
    reason = f"the reply names {len(extra)} of the code's {len(pool)} other names and values "
    return Score(value=0.0, reasons=[reason + f"({some}, ...): stuffed, not specific"])


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
    stuffing = stuffed(task.prompt, message, params)
    if stuffing is not None:
        return stuffing
    if params.expect in ("answer", "clarify") and changed:
        wanted = "an answer" if params.expect == "answer" else "a clarifying question"
        return Score(value=0.0, reasons=[f"wanted {wanted}, got edits to {', '.join(changed)}"])
    if params.expect == "ask_then_edit":
        return _ask_then_edit(state, records, message, params)
    if params.expect == "edit":
        return _edit(state, message, params)
    if not message:
        return Score(value=0.0, reasons=["no final message: the user got no reply"])
    if params.expect == "clarify" and "?" not in message:
        return Score(value=0.0, reasons=["the request was ambiguous; the agent asked nothing"])
    if params.expect == "answer" and not params.mentions:
        return Score(value=0.0, reasons=["the scenario names no fact to check the answer by"])
    return _facts(message, params)


def _ask_then_edit(
    state: FinalState, records: Records, message: str, params: IntentParams
) -> Score:
    """An underspecified request: the simulated user answers only a question (the
    scenario's `on_question` interruption), so an answer delivered means the agent asked;
    the edit must come after it, and be right (its hidden tests check the answer's value)."""
    if not injected_messages(records):
        return Score(value=0.0, reasons=["the request lacked a detail; the agent never asked"])
    early = [
        e.path or str(e.arguments.get("command", ""))
        for e in tool_events(records)
        if not e.failed and not e.after_injections and writes(e)
    ]
    if early:
        return Score(value=0.0, reasons=[f"changed {', '.join(early)} before asking: a guess"])
    return _edit(state, message, params)


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
