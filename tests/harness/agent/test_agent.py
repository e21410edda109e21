"""The agent loop over HTTP: ways of stopping, budgets, format errors, the trajectory."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agent.loop import (
    MAX_MALFORMED_REPLIES,
    MAX_TOOL_CALLS,
    MAX_TOOL_CALLS_PER_REPLY,
    TRUNCATED_NOTE,
    AgentOutcome,
    run_agent,
)
from harness.agent.trajectory import TRAJECTORY_FORMAT_VERSION, Trajectory, read_trajectory
from harness.model.chat import OpenAIChatModel, RetryPolicy
from harness.model.doubles import FailingDouble, ScriptedDouble, Step
from harness.model.openai_server import RawReply, Reply, error_reply, step_index, tool_turns
from harness.results import Failure
from harness.sandbox import Sandbox, open_backend
from harness.spec import Limits, Turn, check_earlier_turns

Serve = Callable[[Any], str]

UNKNOWN_TOOL = Reply(tool_calls=[("teleport", {"to": "mars"})])
BAD_JSON = Reply(tool_calls=[("write_file", "{not json")])
MISSING_FIELD = Reply(tool_calls=[("write_file", {"path": "x.py"})])
GOOD = Reply(tool_calls=[("list_dir", {})])


class Forever:
    """Never finishes: the same reply for every request; remembers what it was sent."""

    def __init__(self, reply: Reply | RawReply, name: str = "forever") -> None:
        self.models = [name]
        self.reply = reply
        self.requests: list[dict[str, Any]] = []

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        self.requests.append(request)
        return self.reply


class Recording(ScriptedDouble):
    """A ScriptedDouble that keeps the requests it answered."""

    def __init__(self, steps: list[Any]) -> None:
        super().__init__(steps)
        self.requests: list[dict[str, Any]] = []

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        self.requests.append(request)
        return super().respond(request)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    (prepared / "app.py").write_text("VALUE = 1\n")
    box = open_backend("subprocess").open(prepared, tmp_path / "attempt")
    yield box
    box.close()


@pytest.fixture
def agent(
    serve_fast: Serve, sandbox: Sandbox, tmp_path: Path
) -> Callable[..., tuple[AgentOutcome, list[dict[str, Any]]]]:
    """Runs the loop against a responder; returns the outcome and the trajectory records."""

    def go(
        responder: Any, limits: Limits | None = None, **budgets: Any
    ) -> tuple[AgentOutcome, list[dict]]:
        model = OpenAIChatModel(
            name=responder.models[0],
            base_url=serve_fast(responder),
            api_key="sk-test",
            price=None,
            retry=RetryPolicy(max_retries=0),
        )
        path = tmp_path / "trajectory.jsonl"
        with Trajectory(path, {"task_id": "t", "epoch": 0}) as trajectory:
            outcome = run_agent(
                model, sandbox, "Set VALUE to 2.", limits or Limits(), trajectory, **budgets
            )
        return outcome, read_trajectory(path)

    return go


def kinds(records: list[dict[str, Any]]) -> list[str]:
    return [record["type"] for record in records]


def test_finishes_via_the_finish_tool(agent: Any, sandbox: Sandbox) -> None:
    responder = Recording(
        [
            Reply(
                tool_calls=[("edit_file", {"path": "app.py", "old_string": "1", "new_string": "2"})]
            ),
            Reply(content="done editing", tool_calls=[("finish", {"summary": "set VALUE to 2"})]),
        ]
    )
    outcome, records = agent(responder)
    assert outcome.failure is None
    assert outcome.message == "set VALUE to 2"
    assert outcome.turns == 2
    assert outcome.tool_calls == 2
    assert outcome.usage.model_calls == 2
    assert outcome.usage.tokens_in > 0 and outcome.usage.tokens_out > 0
    assert sandbox.read("app.py") == "VALUE = 2\n"
    assert kinds(records) == [
        "header",
        "message",
        "message",
        "model",
        "tool",
        "model",
        "tool",
        "agent_end",
    ]
    assert records[-1]["failure"] is None
    assert records[-1]["message"] == "set VALUE to 2"


def test_the_model_sees_system_prompt_task_and_tool_results(agent: Any, sandbox: Sandbox) -> None:
    responder = Recording(
        [
            Reply(tool_calls=[("read_file", {"path": "app.py"}), ("read_file", {"path": "no.py"})]),
            Reply(content="nothing to do"),
        ]
    )
    agent(responder)
    first, second = responder.requests
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert sandbox.root in first["messages"][0]["content"]
    assert first["messages"][1]["content"] == "Set VALUE to 2."
    assert sorted(tool["function"]["name"] for tool in first["tools"]) == [
        "edit_file", "finish", "list_dir", "read_file", "run", "search", "write_file",
    ]  # fmt: skip
    assistant, ok, missing = second["messages"][2:]
    call_ids = [call["id"] for call in assistant["tool_calls"]]
    assert [ok["role"], missing["role"]] == ["tool", "tool"]
    assert [ok["tool_call_id"], missing["tool_call_id"]] == call_ids
    assert ok["content"] == "VALUE = 1\n"
    assert missing["content"] == "error: no.py: no such file"


def test_earlier_turns_come_between_the_system_prompt_and_the_task(agent: Any) -> None:
    """An iterate-on-feature task's session so far: the model sees it as its own past, the
    trajectory keeps it marked `earlier`, and a tool-calling script still starts at step 0."""
    earlier = [
        Turn(role="user", content="Add VALUE to app.py."),
        Turn(role="assistant", content="Added VALUE = 1."),
    ]
    responder = Recording([Reply(content="nothing to do")])
    outcome, records = agent(responder, earlier_turns=earlier)
    assert outcome.failure is None
    (request,) = responder.requests
    roles = [(m["role"], m["content"]) for m in request["messages"][1:]]
    assert roles == [
        ("user", "Add VALUE to app.py."),
        ("assistant", "Added VALUE = 1."),
        ("user", "Set VALUE to 2."),
    ]
    said = [(r["role"], r.get("earlier", False)) for r in records if r["type"] == "message"]
    assert said == [("system", False), ("user", True), ("assistant", True), ("user", False)]
    assert tool_turns(request) == 0 and step_index(request) == 1


def test_earlier_turns_alternate_and_end_with_the_assistant() -> None:
    user, assistant = Turn(role="user", content="a"), Turn(role="assistant", content="b")
    assert check_earlier_turns([user, assistant, user, assistant]) == [user, assistant] * 2
    with pytest.raises(ValueError, match="want the user's"):
        check_earlier_turns([assistant])
    with pytest.raises(ValueError, match="end with the user's"):
        check_earlier_turns([user, assistant, user])


def test_finishes_via_a_reply_without_tool_calls(agent: Any) -> None:
    outcome, records = agent(ScriptedDouble([Reply(content="All done, nothing needed.")]))
    assert outcome.failure is None
    assert outcome.message == "All done, nothing needed."
    assert outcome.turns == 1
    assert outcome.tool_calls == 0
    assert kinds(records) == ["header", "message", "message", "model", "agent_end"]


def test_turn_limit(agent: Any) -> None:
    responder = Forever(GOOD)
    outcome, records = agent(responder, Limits(max_turns=2))
    assert outcome.failure is Failure.TURN_LIMIT
    assert outcome.message == "2 turns"
    assert outcome.turns == 2
    assert outcome.tool_calls == 2
    assert len(responder.requests) == 2
    assert records[-1] == {**records[-1], "type": "agent_end", "failure": "turn_limit"}


def test_token_limit(agent: Any) -> None:
    responder = Forever(GOOD)
    outcome, _ = agent(responder, Limits(max_tokens=50))
    assert outcome.failure is Failure.TOKEN_LIMIT
    assert outcome.turns == 1  # the first reply alone is over 50 tokens
    assert outcome.usage.tokens >= 50
    assert outcome.message == f"{outcome.usage.tokens} tokens"
    assert len(responder.requests) == 1


def test_wall_time_stops_a_long_command(agent: Any) -> None:
    responder = Forever(Reply(tool_calls=[("run", {"command": "sleep 5"})]))
    outcome, records = agent(responder, Limits(wall_time_s=1, command_timeout_s=60))
    assert outcome.failure is Failure.AGENT_TIMEOUT
    assert outcome.message == "wall time 1.0s"
    tool_outputs = [r["output"] for r in records if r["type"] == "tool"]
    assert tool_outputs and tool_outputs[0].startswith("[timed out after 1s")


class Slow:
    """Answers each request after `delay_s`, the first `failures` of them with a 500."""

    models = ["slow"]

    def __init__(self, delay_s: float, reply: Reply, failures: int = 0) -> None:
        self.delay_s = delay_s
        self.reply = reply
        self.failures = failures
        self.requests = 0

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        self.requests += 1
        time.sleep(self.delay_s)
        return error_reply(500, "busy") if self.requests <= self.failures else self.reply


def run_against(
    responder: Any, sandbox: Sandbox, path: Path, limits: Limits, **model_options: Any
) -> AgentOutcome:
    model = OpenAIChatModel(
        name=responder.models[0], api_key="sk-test", price=None, **model_options
    )
    with Trajectory(path, {}) as trajectory:
        return run_agent(model, sandbox, "x", limits, trajectory)


def test_a_hanging_endpoint_is_a_model_api_error_never_the_agents_timeout(
    serve_fast: Serve, sandbox: Sandbox, tmp_path: Path
) -> None:
    responder = Slow(delay_s=3.0, reply=Reply(content="too late"))
    outcome = run_against(
        responder, sandbox, tmp_path / "t.jsonl", Limits(wall_time_s=0.5),
        base_url=serve_fast(responder), request_timeout_s=0.3,
        retry=RetryPolicy(max_retries=2, backoff_s=0.0),
    )  # fmt: skip
    assert outcome.failure is Failure.MODEL_API_ERROR
    # each try was cut at the request timeout: three tries, none of them waited out the 3 s
    assert outcome.message == "timeout after 2 retries: no reply within 0.3s"
    assert outcome.usage.retries == 2 and responder.requests == 3


def test_time_spent_on_retries_is_not_charged_to_the_agent(
    serve_fast: Serve, sandbox: Sandbox, tmp_path: Path
) -> None:
    finish = Reply(tool_calls=[("finish", {"summary": "ok"})])
    responder = Slow(delay_s=0.3, reply=finish, failures=2)
    outcome = run_against(
        responder, sandbox, tmp_path / "t.jsonl", Limits(wall_time_s=0.8),
        base_url=serve_fast(responder), retry=RetryPolicy(max_retries=2, backoff_s=0.2),
    )  # fmt: skip
    # Two failed tries (0.3 s each) and two backoffs (0.1-0.4 s) take longer than the
    # agent's 0.8 s; only the good try's 0.3 s is the agent's.
    assert outcome.failure is None, outcome.message
    assert outcome.usage.retries == 2
    assert outcome.usage.wait_s >= 0.7


def test_a_reply_that_comes_after_the_wall_time_is_not_acted_on(
    serve_fast: Serve, sandbox: Sandbox, tmp_path: Path
) -> None:
    write = Reply(tool_calls=[("write_file", {"path": "late.txt", "content": "x"})])
    responder = Slow(delay_s=0.8, reply=write)
    outcome = run_against(
        responder, sandbox, tmp_path / "t.jsonl", Limits(wall_time_s=0.5),
        base_url=serve_fast(responder), request_timeout_s=5,
    )  # fmt: skip
    assert outcome.failure is Failure.AGENT_TIMEOUT
    assert outcome.turns == 1 and outcome.tool_calls == 0
    assert "late.txt" not in sandbox.diff()


def test_three_malformed_replies_in_a_row_is_a_format_error(agent: Any) -> None:
    responder = Recording([UNKNOWN_TOOL, BAD_JSON, MISSING_FIELD, GOOD])
    outcome, records = agent(responder)
    assert MAX_MALFORMED_REPLIES == 3
    assert outcome.failure is Failure.FORMAT_ERROR
    assert outcome.message == "3 unusable replies in a row"
    assert outcome.turns == 3
    assert len(responder.requests) == 3
    outputs = [r["output"] for r in records if r["type"] == "tool"]
    assert outputs[0].startswith("error: unknown tool 'teleport'")
    assert outputs[1].startswith("error: arguments for write_file are not valid JSON")
    assert outputs[2] == "error: bad arguments for write_file: content: Field required"


def test_malformed_replies_interleaved_with_good_ones_are_tolerated(agent: Any) -> None:
    script: list[Step] = [UNKNOWN_TOOL, BAD_JSON, GOOD, MISSING_FIELD, UNKNOWN_TOOL, GOOD, BAD_JSON]
    outcome, _ = agent(ScriptedDouble(script))
    assert outcome.failure is None
    assert outcome.message == "script ended"
    assert outcome.turns == len(script) + 1


def test_a_reply_with_one_good_call_is_not_malformed(agent: Any) -> None:
    mixed = Reply(tool_calls=[("teleport", {}), ("list_dir", {})])
    outcome, _ = agent(ScriptedDouble([mixed, mixed, mixed, mixed]))
    assert outcome.failure is None
    assert outcome.tool_calls == 9


def test_tool_errors_that_are_not_malformed_do_not_count(agent: Any) -> None:
    missing = Reply(tool_calls=[("read_file", {"path": "missing.py"})])
    outcome, _ = agent(ScriptedDouble([missing] * 4))
    assert outcome.failure is None
    assert outcome.turns == 5


def test_calls_past_the_per_reply_budget_are_skipped_but_answered(
    agent: Any, sandbox: Sandbox
) -> None:
    flood = Reply(tool_calls=[("run", {"command": f"echo {n} >> calls.txt"}) for n in range(8)])
    responder = Recording([flood, Reply(content="done")])
    outcome, records = agent(responder, max_tool_calls_per_reply=3)
    assert outcome.failure is None
    assert outcome.tool_calls == 3
    assert sandbox.read("calls.txt") == "0\n1\n2\n"
    _, second = responder.requests
    assistant, *results = second["messages"][2:]
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in assistant["tool_calls"]]
    skipped = [r["content"] for r in results[3:]]
    assert len(skipped) == 5
    assert all("this reply made 8 tool calls, more than the 3 allowed" in s for s in skipped)
    assert all(r["content"].startswith("[exit code 0]") for r in results[:3])
    tools = [r for r in records if r["type"] == "tool"]
    assert [bool(t.get("skipped")) for t in tools] == [False] * 3 + [True] * 5


def test_calls_past_the_attempt_budget_end_it_as_a_tool_call_limit(agent: Any) -> None:
    responder = Forever(Reply(tool_calls=[("list_dir", {})] * 4))
    outcome, records = agent(responder, max_tool_calls=10)
    assert outcome.failure is Failure.TOOL_CALL_LIMIT
    assert outcome.failure.status.value == "failed"
    assert outcome.message == "10 tool calls"
    assert outcome.tool_calls == 10
    assert outcome.turns == 3
    assert records[-1]["failure"] == "tool_call_limit"


def test_the_default_tool_call_budgets() -> None:
    assert (MAX_TOOL_CALLS_PER_REPLY, MAX_TOOL_CALLS) == (25, 500)


def test_failing_endpoint_is_a_model_api_error(agent: Any) -> None:
    outcome, records = agent(FailingDouble(500))
    assert outcome.failure is Failure.MODEL_API_ERROR
    assert outcome.failure.status.value == "error"
    assert outcome.message.startswith("HTTP 500: ")
    assert outcome.turns == 0
    assert kinds(records) == ["header", "message", "message", "agent_end"]


def test_failure_after_some_turns_keeps_the_count(agent: Any) -> None:
    outcome, _ = agent(ScriptedDouble([GOOD, error_reply(503, "gone")]))
    assert outcome.failure is Failure.MODEL_API_ERROR
    assert outcome.turns == 1
    assert outcome.tool_calls == 1


def test_context_overflow(agent: Any) -> None:
    overflow = error_reply(400, "This model's maximum context length is 10 tokens")
    outcome, _ = agent(ScriptedDouble([GOOD, overflow]))
    assert outcome.failure is Failure.CONTEXT_OVERFLOW
    assert "maximum context length" in outcome.message
    assert outcome.turns == 1


def test_a_reply_cut_off_without_tool_calls_does_not_end_the_attempt(agent: Any) -> None:
    cut = Reply(content="First I will read app.py and th", finish_reason="length")
    responder = Recording([cut, Reply(tool_calls=[("finish", {"summary": "ok"})])])
    outcome, records = agent(responder)
    assert outcome.failure is None and outcome.message == "ok"
    assert outcome.turns == 2
    assert outcome.usage.truncated_replies == 1
    _, second = responder.requests
    assert second["messages"][-1] == {"role": "user", "content": TRUNCATED_NOTE}
    models = [r for r in records if r["type"] == "model"]
    assert [m["finish_reason"] for m in models] == ["length", "tool_calls"]
    assert models[0]["usage"]["truncated_replies"] == 1
    assert kinds(records)[3:6] == ["model", "message", "model"]


def test_a_reply_cut_off_in_a_tool_call_gets_a_tool_error_then_the_note(agent: Any) -> None:
    cut = Reply(
        tool_calls=[("write_file", '{"path": "app.py", "content": "VAL')], finish_reason="length"
    )
    responder = Recording([cut, Reply(content="giving up")])
    outcome, _ = agent(responder)
    assert outcome.usage.truncated_replies == 1
    _, second = responder.requests
    assistant, tool, note = second["messages"][2:]
    assert tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert tool["content"].startswith("error: arguments for write_file are not valid JSON")
    assert note == {"role": "user", "content": TRUNCATED_NOTE}
    assert TRUNCATED_NOTE.startswith("Your last reply was cut off at the output token limit")


def test_trajectory_file_parses_line_by_line(agent: Any, tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(
            content="looking",
            tool_calls=[("read_file", {"path": "app.py"}), ("run", {"command": "echo hi"})],
        ),
        Reply(tool_calls=[("write_file", {"path": "app.py", "content": "VALUE = 2\n"})]),
        Reply(tool_calls=[("finish", {"summary": "ok"})]),
    ]
    outcome, records = agent(ScriptedDouble(script))
    assert outcome.failure is None
    lines = (tmp_path / "trajectory.jsonl").read_text().splitlines()
    parsed = [json.loads(line) for line in lines]
    assert parsed == records
    header = parsed[0]
    assert header["type"] == "header"
    assert header["format_version"] == TRAJECTORY_FORMAT_VERSION
    assert header["task_id"] == "t"
    models = [r for r in parsed if r["type"] == "model"]
    tools = [r for r in parsed if r["type"] == "tool"]
    assert len(models) == outcome.turns == 3
    assert len(tools) == outcome.tool_calls == 4
    assert [t["name"] for t in tools] == ["read_file", "run", "write_file", "finish"]
    assert tools[0]["output"] == "VALUE = 1\n"
    assert tools[1]["output"] == "[exit code 0]\nhi\n"
    assert "output" not in tools[3]  # finish ends the attempt before any output
    assert models[0]["message"]["content"] == "looking"
    assert models[0]["usage"]["model_calls"] == 1
    times = [r["t"] for r in parsed]
    assert times == sorted(times)
    assert parsed[-1]["type"] == "agent_end"


# -- task-given prompt and tools, injected user messages -------------------------------------

EDIT = Reply(tool_calls=[("edit_file", {"path": "app.py", "old_string": "1", "new_string": "2"})])
LOOK = Reply(tool_calls=[("read_file", {"path": "app.py"})])
FINISH = Reply(tool_calls=[("finish", {"summary": "done"})])


def injected(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == "message" and r.get("injected")]


def test_the_task_gives_system_prompt_and_tools(agent: Any) -> None:
    from harness.spec import Interruption  # noqa: F401  (the loop's own types)

    responder = Recording([Reply(tool_calls=[("write_file", {"path": "x", "content": ""})])])
    _outcome, records = agent(
        responder, system_prompt="Read-only reviewer in {root}.", tools=["read_file", "finish"]
    )
    sent = responder.requests[0]
    assert sent["messages"][0]["content"].startswith("Read-only reviewer in /")
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["read_file", "finish"]
    tool = next(r for r in records if r["type"] == "tool")
    assert "unknown tool 'write_file'; available: read_file, finish" in tool["output"]


def test_message_injected_after_turn_n(agent: Any) -> None:
    from harness.spec import Interruption

    responder = Recording([LOOK, LOOK, LOOK, FINISH])
    outcome, records = agent(responder, interruptions=[Interruption(message="use B", after_turn=2)])
    assert outcome.failure is None
    [message] = injected(records)
    assert message["content"] == "use B" and message["turn"] == 2
    third = responder.requests[2]["messages"]
    assert third[-1] == {"role": "user", "content": "use B"}  # after turn 2's tool result
    assert third[-2]["role"] == "tool"
    assert all(m.get("content") != "use B" for m in responder.requests[1]["messages"])


def test_message_injected_right_after_the_first_edit(agent: Any, sandbox: Sandbox) -> None:
    from harness.spec import Interruption

    responder = Recording([LOOK, EDIT, FINISH])
    _outcome, records = agent(
        responder, interruptions=[Interruption(message="stop", after_first_edit=True)]
    )
    [message] = injected(records)
    assert message["turn"] == 2
    assert responder.requests[2]["messages"][-1]["content"] == "stop"
    assert sandbox.read("app.py") == "VALUE = 2\n"


def test_an_edit_made_by_a_command_also_brings_the_message(agent: Any, sandbox: Sandbox) -> None:
    from harness.spec import Interruption

    shell_edit = Reply(tool_calls=[("run", {"command": "echo 'VALUE = 3' > app.py"})])
    read_only = Reply(tool_calls=[("run", {"command": "cat app.py; git status"})])
    responder = Recording([read_only, shell_edit, FINISH])
    _outcome, records = agent(
        responder, interruptions=[Interruption(message="stop", after_first_edit=True)]
    )
    [message] = injected(records)
    assert message["turn"] == 2  # not after the command that changed nothing
    assert responder.requests[2]["messages"][-1]["content"] == "stop"


def test_an_agent_that_ends_early_still_gets_the_message(agent: Any) -> None:
    from harness.spec import Interruption

    responder = Recording([FINISH, Reply(content="ok, stopping")])
    outcome, records = agent(
        responder, interruptions=[Interruption(message="also do Y", after_turn=5)]
    )
    assert outcome.failure is None and outcome.message == "ok, stopping"
    assert outcome.turns == 2
    second = responder.requests[1]["messages"]
    assert second[-2]["role"] == "tool" and "not finished yet" in second[-2]["content"]
    assert second[-1] == {"role": "user", "content": "also do Y"}
    # a reply without tool calls is deferred the same way
    responder = Recording([Reply(content="all done"), FINISH])
    outcome, records = agent(
        responder, interruptions=[Interruption(message="wait", after_first_edit=True)]
    )
    assert outcome.message == "done" and len(injected(records)) == 1


def test_an_interruption_needs_exactly_one_moment() -> None:
    from pydantic import ValidationError

    from harness.spec import Interruption

    with pytest.raises(ValidationError):
        Interruption(message="x")
    with pytest.raises(ValidationError):
        Interruption(message="x", after_turn=1, after_first_edit=True)


def test_a_simulated_user_answers_a_question_and_only_a_question(agent: Any) -> None:
    from harness.spec import Interruption

    answer = [Interruption(message="Make it 7.", on_question=True)]
    asks = Recording([LOOK, Reply(content="Which value should it be?"), FINISH])
    outcome, records = agent(asks, interruptions=answer)
    [message] = injected(records)
    assert message["content"] == "Make it 7." and outcome.failure is None
    assert asks.requests[2]["messages"][-1] == {"role": "user", "content": "Make it 7."}
    # an agent that ends without asking, or calls finish, hears nothing and is done
    for ending in (Reply(content="I set it to 3."), FINISH):
        guesses = Recording([LOOK, ending, LOOK])
        outcome, records = agent(guesses, interruptions=answer)
        assert not injected(records) and len(guesses.requests) == 2
