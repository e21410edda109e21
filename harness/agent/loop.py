"""The agent loop: a model, a sandbox, a prompt, and budgets.

The loop asks the model for its next step, runs the tool calls it makes, and
stops when the model calls `finish` (or answers without calling a tool), or
when a budget, the endpoint or the model's output format gives out. A reply
cut off at the output token limit does not end the attempt: the model is told
so and goes on. A task may give its own system prompt and set of tools, and
user messages to inject mid-run (`Interruption`: after turn N, or right after
the first turn that edited a file; one the agent tries to end before is
delivered then, and the agent goes on). Each way
of stopping is a typed exception turned into an `AgentOutcome`; scoring is not
done here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from harness.agent.tools import (
    EDIT_TOOLS,
    READ_ONLY_TOOLS,
    MalformedCall,
    Submitted,
    ToolContext,
    ToolError,
    call_tool,
    tool_schemas,
)
from harness.agent.trajectory import Trajectory
from harness.model.chat import ChatModel, ContextOverflow, ModelAPIError, ToolCall
from harness.results import Failure, Usage
from harness.sandbox import ResourceLimitExceeded, Sandbox
from harness.spec import Interruption, Limits, Turn

SYSTEM_PROMPT = """You are a coding agent working in a software repository at {root}.
Use the tools to read, search, edit and run code there. Commands have no network access.
Make the change the user asks for, check it (for example by running the tests), then call
`finish` with a one-paragraph summary of what you changed."""

MAX_MALFORMED_REPLIES = 3  # consecutive replies whose every tool call was unusable
MAX_TOOL_CALLS_PER_REPLY = 25  # calls past this in one reply are skipped, not run
MAX_TOOL_CALLS = 500  # calls run per attempt; one more ends it as `tool_call_limit`
TRUNCATED_NOTE = (
    "Your last reply was cut off at the output token limit; continue, keeping replies shorter."
)


class LimitExceeded(Exception):
    def __init__(self, failure: Failure, message: str) -> None:
        super().__init__(message)
        self.failure = failure


@dataclass
class AgentOutcome:
    failure: Failure | None  # None: the agent finished on its own
    message: str
    turns: int = 0
    tool_calls: int = 0  # calls run; calls skipped past the per-reply budget are not counted
    usage: Usage = field(default_factory=Usage)


@dataclass
class _Budget:
    """The agent's own time counts against its wall time: tool calls and the latency of
    model replies. Time spent waiting on the endpoint (`Usage.wait_s`) does not."""

    limits: Limits
    started: float = field(default_factory=time.monotonic)
    not_charged_s: float = 0.0

    def time_left(self) -> float:
        charged = time.monotonic() - self.started - self.not_charged_s
        return self.limits.wall_time_s - charged

    def check_time(self) -> None:
        if self.time_left() <= 0:
            raise LimitExceeded(Failure.AGENT_TIMEOUT, f"wall time {self.limits.wall_time_s}s")

    def check(self, turns: int, usage: Usage) -> None:
        self.check_time()
        if turns >= self.limits.max_turns:
            raise LimitExceeded(Failure.TURN_LIMIT, f"{self.limits.max_turns} turns")
        if usage.tokens >= self.limits.max_tokens:
            raise LimitExceeded(Failure.TOKEN_LIMIT, f"{usage.tokens} tokens")


def run_agent(
    model: ChatModel,
    sandbox: Sandbox,
    prompt: str,
    limits: Limits,
    trajectory: Trajectory,
    *,
    max_tool_calls_per_reply: int = MAX_TOOL_CALLS_PER_REPLY,
    max_tool_calls: int = MAX_TOOL_CALLS,
    system_prompt: str | None = None,
    tools: list[str] | None = None,
    interruptions: list[Interruption] | None = None,
    earlier_turns: list[Turn] | None = None,
) -> AgentOutcome:
    """Runs the loop to its end. Of one reply's tool calls only the first
    `max_tool_calls_per_reply` run (each of the rest gets a tool result saying it was
    skipped); running more than `max_tool_calls` in the attempt ends it as `tool_call_limit`.
    `system_prompt` (with `{root}` filled in) and `tools` (names) replace the defaults;
    `interruptions` are user messages injected mid-run; `earlier_turns` come between the
    system prompt and `prompt`, as the session so far."""
    budget = _Budget(limits)
    offered = tuple(tools) if tools is not None else None
    schemas = tool_schemas(offered)
    context = ToolContext(sandbox, limits.command_timeout_s, budget.time_left, offered)
    outcome = AgentOutcome(failure=None, message="")
    pending = list(interruptions or [])
    system = (system_prompt or SYSTEM_PROMPT).replace("{root}", sandbox.root)
    messages = [
        {"role": "system", "content": system},
        *({"role": t.role, "content": t.content} for t in earlier_turns or []),
        {"role": "user", "content": prompt},
    ]
    for at, message in enumerate(messages):
        earlier = 0 < at < len(messages) - 1  # never the model's own reply in this attempt
        trajectory.write("message", **message, **({"earlier": True} if earlier else {}))
    malformed = 0
    try:
        while True:
            budget.check(outcome.turns, outcome.usage)
            reply = model.complete(messages, schemas)
            budget.not_charged_s += reply.usage.wait_s
            outcome.turns += 1
            outcome.usage.add(reply.usage)
            messages.append(reply.as_message())
            trajectory.write(
                "model",
                message=messages[-1],
                finish_reason=reply.finish_reason,
                usage=reply.usage.model_dump(),
            )
            budget.check_time()  # a reply that came after the wall time is not acted on
            truncated = reply.finish_reason == "length"
            ended = not reply.tool_calls and not truncated
            asked = ended and "?" in (reply.content or "")
            finishing = any(call.name == "finish" for call in reply.tool_calls or [])
            if (ended and not asked) or finishing:  # a simulated user answers questions only
                pending[:] = [item for item in pending if not item.on_question]
            if ended and not pending:
                raise Submitted(reply.content or "")
            watch = any(item.after_first_edit for item in pending)
            calls = _Calls(
                context, outcome, trajectory, max_tool_calls_per_reply, bool(pending), watch
            )
            if reply.tool_calls:
                all_malformed = calls.run(reply.tool_calls, messages, max_tool_calls)
                malformed = malformed + 1 if all_malformed else 0
            if malformed >= MAX_MALFORMED_REPLIES:
                raise LimitExceeded(Failure.FORMAT_ERROR, f"{malformed} unusable replies in a row")
            if truncated:  # after the tool results: they must follow the assistant message
                messages.append({"role": "user", "content": TRUNCATED_NOTE})
                trajectory.write("message", **messages[-1])
            ending = ended or calls.finish_deferred
            for due in _due(pending, outcome.turns, calls.edited, ending, asked):
                pending.remove(due)
                messages.append({"role": "user", "content": due.message})
                trajectory.write("message", **messages[-1], injected=True, turn=outcome.turns)
    except Submitted as done:
        outcome.message = done.summary
    except LimitExceeded as stop:
        outcome.failure, outcome.message = stop.failure, str(stop)
    except ContextOverflow as overflow:
        outcome.usage.add(overflow.usage)
        outcome.failure, outcome.message = Failure.CONTEXT_OVERFLOW, str(overflow)
    except ModelAPIError as error:  # never the agent's timeout: the endpoint failed
        outcome.usage.add(error.usage)
        outcome.failure, outcome.message = Failure.MODEL_API_ERROR, str(error)
    except ResourceLimitExceeded as limit:  # a fork storm, a memory bomb, a full disk
        outcome.failure, outcome.message = Failure.RESOURCE_LIMIT, str(limit)
    trajectory.write("agent_end", failure=outcome.failure, message=outcome.message)
    return outcome


def _due(
    pending: list[Interruption], turns: int, edited: bool, ending: bool, asked: bool = False
) -> list[Interruption]:
    """The interruptions to deliver after this turn: those whose moment came (an answer
    when the agent asked), or, when the agent tries to end with some still pending, the
    first of them."""
    due = [
        item
        for item in pending
        if (item.after_turn is not None and turns >= item.after_turn)
        or (item.after_first_edit and edited)
        or (item.on_question and asked)
    ]
    if not due and ending and pending:
        due = pending[:1]
    return due


FINISH_DEFERRED = "not finished yet: the user sent a new message; read it and go on"
AFTER_FINISH = "not run: `finish` was called earlier in this reply"


@dataclass
class _Calls:
    """Runs one reply's tool calls within the per-reply and per-attempt budgets. With
    `defer_finish` (an interruption is still pending) a `finish` call does not end the
    attempt: it is noted, the calls after it are not run, and the loop goes on."""

    context: ToolContext
    outcome: AgentOutcome
    trajectory: Trajectory
    per_reply: int
    defer_finish: bool = False
    # While an interruption waits for the first edit, any other tool's call (a shell command
    # that writes, say) is followed by a look at the workspace: an edit is a change that
    # appeared, however it was made.
    watch_changes: bool = False
    edited: bool = False  # a file in the workspace changed (an edit tool, or a command)
    finish_deferred: bool = False

    def run(self, calls: list[ToolCall], messages: list[dict], per_attempt: int) -> bool:
        """Appends a tool message for every call; says whether every call run was malformed."""
        all_malformed = True
        for index, call in enumerate(calls):
            if self.finish_deferred:
                text = AFTER_FINISH
                self.trajectory.write("tool", id=call.id, name=call.name, output=text, skipped=True)
            elif index >= self.per_reply:
                text = self._skip(call, len(calls))
            else:
                if self.outcome.tool_calls >= per_attempt:
                    raise LimitExceeded(Failure.TOOL_CALL_LIMIT, f"{per_attempt} tool calls")
                self.outcome.tool_calls += 1
                text, was_malformed = self._run_one(call)
                all_malformed &= was_malformed
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        return all_malformed

    def _run_one(self, call: ToolCall) -> tuple[str, bool]:
        try:
            text, malformed = _run_tool(self.context, call, self.trajectory)
        except Submitted:
            if not self.defer_finish:
                raise
            self.finish_deferred = True
            return FINISH_DEFERRED, False
        if call.name in EDIT_TOOLS and not text.startswith("error: "):
            self.edited = True
        elif self.watch_changes and not self.edited and call.name not in READ_ONLY_TOOLS:
            self.edited = bool(self.context.sandbox.diff())
        return text, malformed

    def _skip(self, call: ToolCall, made: int) -> str:
        """The tool result for a call past the per-reply budget: it is not run."""
        text = (
            f"error: skipped: this reply made {made} tool calls, more than the "
            f"{self.per_reply} allowed per reply; only the first {self.per_reply} were run"
        )
        self.trajectory.write(
            "tool", id=call.id, name=call.name, arguments=call.arguments, output=text, skipped=True
        )
        return text


def _run_tool(context: ToolContext, call: ToolCall, trajectory: Trajectory) -> tuple[str, bool]:
    """The tool's output (or error) for the model, and whether the call was malformed."""
    started = time.monotonic()
    malformed = False
    try:
        text = call_tool(context, call.name, call.arguments)
    except Submitted:
        trajectory.write("tool", id=call.id, name=call.name, arguments=call.arguments)
        raise
    except ToolError as error:
        malformed = isinstance(error, MalformedCall)
        text = f"error: {error}"
    trajectory.write(
        "tool",
        id=call.id,
        name=call.name,
        arguments=call.arguments,
        output=text,
        duration_s=round(time.monotonic() - started, 4),
    )
    return text, malformed
