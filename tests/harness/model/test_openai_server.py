"""The loopback OpenAI-compatible server, spoken to by the official `openai` client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Generator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall

from harness.model.doubles import DoneOnlyDouble, FailingDouble, JunkDouble, ScriptedDouble
from harness.model.openai_server import (
    ChunkStream,
    OpenAIServer,
    RawReply,
    Reply,
    RequestError,
    StreamReply,
    completion_body,
    first_user_message,
    step_index,
    tool_call_body,
    usage_body,
)

Serve = Callable[[Any], str]


class Echo:
    models = ["echo-1", "echo-2"]

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def respond(self, request: dict[str, Any]) -> Reply:
        self.requests.append(request)
        return Reply(
            content=f"you said {first_user_message(request)}",
            tool_calls=[("run", {"command": "pytest -q"}), ("write_file", "{raw text")],
        )


class Exploding:
    models = ["boom"]

    def respond(self, request: dict[str, Any]) -> Reply:
        raise ValueError("responder blew up")


def function_calls(message: ChatCompletionMessage) -> list[ChatCompletionMessageFunctionToolCall]:
    """The message's tool calls, each a function call."""
    calls = message.tool_calls or []
    assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
    return [call for call in calls if isinstance(call, ChatCompletionMessageFunctionToolCall)]


class Streaming:
    """Streams "hel" + "lo" and a tool call; refuses a model it does not serve."""

    models = ["streamer"]

    def respond(self, request: dict[str, Any]) -> StreamReply:
        return StreamReply(self._chunks(request))

    def _chunks(self, request: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        if request.get("model") != "streamer":
            raise RequestError(404, "no such model", param="model", code="model_not_found")
        chunks = ChunkStream("streamer")
        yield chunks.delta({"role": "assistant", "content": ""})
        yield chunks.delta({"content": "hel"})
        yield chunks.delta({"content": "lo"})
        yield chunks.delta({"tool_calls": [tool_call_body("run", {"command": "ls"}, index=0)]})
        yield chunks.delta({}, "tool_calls")
        yield chunks.usage(usage_body(3, 4))


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


def http(method: str, url: str, body: bytes | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_official_client_lists_models(serve: Serve) -> None:
    models = client(serve(Echo())).models.list()
    assert [model.id for model in models.data] == ["echo-1", "echo-2"]


def test_a_failing_double_fails_the_model_list_unless_it_lists_models(serve: Serve) -> None:
    assert http("GET", serve(FailingDouble(401)) + "/models")[0] == 401
    status, body = http("GET", serve(FailingDouble(500, lists_models=True)) + "/models")
    assert (status, [model["id"] for model in body["data"]]) == (200, ["failing-double"])


def test_a_reply_can_be_cut_off_and_carry_no_usage() -> None:
    cut = completion_body(Reply(content="and th", finish_reason="length", report_usage=False), {})
    assert cut["choices"][0]["finish_reason"] == "length"
    assert "usage" not in cut
    assert "usage" in completion_body(Reply(content="done"), {})


def test_official_client_gets_a_completion_with_tool_calls(serve: Serve) -> None:
    responder = Echo()
    completion = client(serve(responder)).chat.completions.create(
        model="echo-1",
        messages=[{"role": "user", "content": "hello"}],
        tools=[{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}],
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "you said hello"
    calls = function_calls(choice.message)
    assert [(c.type, c.function.name, c.function.arguments) for c in calls] == [
        ("function", "run", '{"command": "pytest -q"}'),
        ("function", "write_file", "{raw text"),
    ]
    assert len({c.id for c in calls}) == 2
    assert completion.model == "echo-1"
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    (request,) = responder.requests
    assert request["messages"] == [{"role": "user", "content": "hello"}]
    assert request["tools"][0]["function"]["name"] == "run"


def test_unknown_routes_are_404(serve: Serve) -> None:
    base_url = serve(DoneOnlyDouble())
    status, body = http("GET", f"{base_url}/nothing-here")
    assert status == 404
    assert body["error"]["message"] == "no route /v1/nothing-here"
    status, _ = http("POST", f"{base_url}/completions", b"{}")
    assert status == 404
    with pytest.raises(openai.NotFoundError):
        client(base_url).embeddings.create(model="x", input="y")


def test_responder_that_raises_gives_500(serve: Serve) -> None:
    base_url = serve(Exploding())
    with pytest.raises(openai.InternalServerError) as caught:
        client(base_url).chat.completions.create(
            model="boom", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 500
    assert "ValueError: responder blew up" in str(caught.value)


def test_non_json_request_body_is_400(serve: Serve) -> None:
    status, body = http("POST", f"{serve(DoneOnlyDouble())}/chat/completions", b"{not json")
    assert status == 400
    assert body["error"]["message"] == "body is not JSON"


def test_raw_replies_are_sent_as_is(serve: Serve) -> None:
    base_url = serve(JunkDouble(b'{"anything": [1, 2]}'))
    status, body = http("POST", f"{base_url}/chat/completions", b'{"messages": []}')
    assert (status, body) == (200, {"anything": [1, 2]})


def test_failing_double_status_reaches_the_client(serve: Serve) -> None:
    with pytest.raises(openai.RateLimitError):
        client(serve(FailingDouble(429))).chat.completions.create(
            model="failing-double", messages=[{"role": "user", "content": "hi"}]
        )


def test_server_counts_requests_and_stops() -> None:
    with OpenAIServer(DoneOnlyDouble()) as server:
        api = client(server.base_url)
        for _ in range(3):
            api.chat.completions.create(
                model="done-only-double", messages=[{"role": "user", "content": "hi"}]
            )
        api.models.list()  # not a completion: not counted
        assert server.requests == 3
        base_url = server.base_url
    with pytest.raises(openai.APIConnectionError):
        client(base_url).models.list()


def test_scripted_double_follows_the_conversation() -> None:
    double = ScriptedDouble([Reply(content="one"), RawReply(503, b"{}"), lambda r: Reply("three")])
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    assert double.respond({"messages": conversation}) == Reply(content="one")
    conversation.append({"role": "assistant", "content": "one"})
    assert double.respond({"messages": conversation}) == RawReply(503, b"{}")
    conversation.append({"role": "assistant", "content": "x"})
    assert double.respond({"messages": conversation}) == Reply(content="three")
    conversation.append({"role": "assistant", "content": "three"})
    assert double.respond({"messages": conversation}) == Reply(
        tool_calls=[("finish", {"summary": "script ended"})]
    )


def test_step_index_and_first_user_message() -> None:
    request = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None},
            {"role": "tool", "content": "out"},
            {"role": "assistant", "content": "ok"},
        ]
    }
    assert step_index(request) == 2
    assert step_index({}) == 0
    assert json.loads(first_user_message(request)) == [{"type": "text", "text": "hi"}]
    assert first_user_message({"messages": []}) == ""


def test_completion_body_without_tool_calls() -> None:
    body = completion_body(Reply(content="done"), {"model": "m", "messages": []})
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in choice["message"]
    assert body["usage"]["completion_tokens"] == len("done") // 4 + 1


def test_a_streamed_reply_arrives_as_chunks_through_the_official_client(serve: Serve) -> None:
    stream = client(serve(Streaming())).chat.completions.create(
        model="streamer",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "hello"
    calls = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    assert [(call.index, call.function and call.function.name) for call in calls] == [(0, "run")]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert len({c.id for c in chunks}) == 1
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None and usage.total_tokens == 7


def test_a_refusal_raised_before_the_stream_is_an_openai_shaped_error(serve: Serve) -> None:
    with pytest.raises(openai.NotFoundError) as refused:
        client(serve(Streaming())).chat.completions.create(
            model="other", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    assert refused.value.code == "model_not_found"
    assert refused.value.body == {
        "message": "no such model",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }
