"""OpenAIChatModel against endpoints served over real HTTP: usage, cost, retries, errors."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness.model.chat import (
    KEY_NOT_GIVEN,
    ContextOverflow,
    EndpointUnusable,
    ModelAPIError,
    ModelReply,
    OpenAIChatModel,
    RetryPolicy,
    ToolCall,
    suggested_base_url,
)
from harness.model.doubles import FailingDouble, JunkDouble, ScriptedDouble
from harness.model.openai_server import RawReply, Reply, error_reply, models_list_reply
from harness.model.pricing import Price

Serve = Callable[[Any], str]
MESSAGES = [{"role": "user", "content": "fix the bug"}]
FAST = RetryPolicy(max_retries=2, backoff_s=0.0)


def completion(
    message: dict[str, Any], usage: dict[str, int] | None = None, finish: str = "stop"
) -> RawReply:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
    }
    if usage is not None:
        body["usage"] = {**usage, "total_tokens": sum(usage.values())}
    return RawReply(200, json.dumps(body).encode())


@dataclass
class Hanging:
    """A step that answers only after `delay_s`: longer than the request timeout."""

    delay_s: float


class Sequence:
    """Answers with the given replies in order (the last one repeats); records requests."""

    models = ["seq-model"]

    def __init__(self, *replies: Reply | RawReply | Hanging) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Hanging):
            time.sleep(reply.delay_s)
            return Reply(content="too late")
        return reply


def model_for(
    base_url: str, price: Price | None = None, retry: RetryPolicy = FAST, **options: Any
) -> OpenAIChatModel:
    return OpenAIChatModel(
        name="seq-model", base_url=base_url, api_key="sk-test", price=price, retry=retry, **options
    )


def test_text_reply_with_usage_and_cost(serve_fast: Serve) -> None:
    responder = Sequence(
        completion({"content": "hello"}, {"prompt_tokens": 1000, "completion_tokens": 500})
    )
    model = model_for(serve_fast(responder), price=Price(input=1.0, output=2.0))
    reply = model.complete(MESSAGES, [])
    assert reply.content == "hello"
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert reply.usage.tokens_in == 1000
    assert reply.usage.tokens_out == 500
    assert reply.usage.cost_usd == pytest.approx(0.002)
    assert reply.usage.model_calls == 1
    assert reply.usage.retries == 0
    assert reply.usage.estimated_calls == 0
    assert reply.usage.truncated_replies == 0
    assert 0 < reply.usage.model_latency_s < 5


def test_a_reply_cut_off_at_the_token_limit_is_counted(serve_fast: Serve) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 4096}
    responder = Sequence(completion({"content": "and then"}, usage, finish="length"))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert reply.finish_reason == "length"
    assert reply.usage.truncated_replies == 1


def test_no_price_means_no_cost(serve_fast: Serve) -> None:
    responder = Sequence(
        completion({"content": "x"}, {"prompt_tokens": 10, "completion_tokens": 5})
    )
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert reply.usage.cost_usd == 0.0
    assert reply.usage.tokens == 15


def test_missing_usage_is_estimated_and_flagged(serve_fast: Serve) -> None:
    responder = Sequence(completion({"content": "abcdefgh"}))
    reply = model_for(serve_fast(responder), price=Price(input=1.0, output=1.0)).complete(
        MESSAGES, []
    )
    assert reply.usage.estimated_calls == 1
    assert reply.usage.tokens_in == len(json.dumps(MESSAGES)) // 4
    assert reply.usage.tokens_out == 2
    assert reply.usage.cost_usd == pytest.approx((reply.usage.tokens_in + 2) / 1_000_000)


def test_request_carries_model_messages_tools_and_temperature(serve_fast: Serve) -> None:
    responder = Sequence(Reply(content="ok"))
    tools = [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}]
    model_for(serve_fast(responder), temperature=0.25).complete(MESSAGES, tools)
    (request,) = responder.requests
    assert request["model"] == "seq-model"
    assert request["messages"] == MESSAGES
    assert request["tools"] == tools
    assert request["temperature"] == 0.25


def test_tool_calls_are_parsed(serve_fast: Serve) -> None:
    responder = Sequence(
        Reply(tool_calls=[("read_file", {"path": "a.py"}), ("run", {"command": "ls"})])
    )
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert [(call.name, json.loads(call.arguments)) for call in reply.tool_calls] == [
        ("read_file", {"path": "a.py"}),
        ("run", {"command": "ls"}),
    ]
    assert all(call.id.startswith("call_") for call in reply.tool_calls)
    assert reply.finish_reason == "tool_calls"


def test_malformed_tool_call_arguments_pass_through_raw(serve_fast: Serve) -> None:
    responder = Sequence(Reply(tool_calls=[("write_file", "{not json")]))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert [(call.name, call.arguments) for call in reply.tool_calls] == [
        ("write_file", "{not json")
    ]


def test_tool_call_without_id_gets_one(serve_fast: Serve) -> None:
    call = {"id": None, "type": "function", "function": {"name": "finish", "arguments": "{}"}}
    responder = Sequence(completion({"content": None, "tool_calls": [call]}))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert reply.tool_calls == [ToolCall(id="call_0", name="finish", arguments="{}")]


def test_reply_round_trips_as_an_assistant_message() -> None:
    reply = ModelReply(content=None, tool_calls=[ToolCall(id="c1", name="run", arguments="{}")])
    assert reply.as_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        ],
    }
    assert ModelReply(content="hi").as_message() == {"role": "assistant", "content": "hi"}


def test_retries_on_500_then_succeeds(serve_fast: Serve) -> None:
    responder = Sequence(error_reply(500, "boom"), error_reply(503, "busy"), Reply(content="ok"))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert reply.content == "ok"
    assert reply.usage.retries == 2
    assert reply.usage.wait_s > 0
    assert len(responder.requests) == 3


def test_waiting_for_a_free_connection_is_waiting_not_latency(serve_fast: Serve) -> None:
    slots = threading.Semaphore(1)
    slots.acquire()  # another attempt holds the only connection for a while
    threading.Timer(0.5, slots.release).start()
    model = model_for(serve_fast(Sequence(Reply(content="ok"))), connection_slots=slots)
    reply = model.complete(MESSAGES, [])
    assert reply.usage.wait_s >= 0.3  # the slot came free 0.5 s after the Timer started
    assert reply.usage.model_latency_s < reply.usage.wait_s  # the wait is not latency


def test_persistent_500_becomes_a_one_line_model_api_error(serve_fast: Serve) -> None:
    double = FailingDouble(500)
    base_url = serve_fast(double)
    model = OpenAIChatModel(
        name="failing-double", base_url=base_url, api_key="k", price=None, retry=FAST
    )
    with pytest.raises(ModelAPIError) as caught:
        model.complete(MESSAGES, [])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("HTTP 500 after 2 retries: ")
    assert "the double always fails" in message
    assert caught.value.usage.retries == 2


def test_429_is_retried_then_succeeds(serve_fast: Serve) -> None:
    responder = Sequence(error_reply(429, "slow down"), Reply(content="finally"))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert reply.content == "finally"
    assert reply.usage.retries == 1
    assert len(responder.requests) == 2


def test_no_retries_when_the_policy_allows_none(serve_fast: Serve) -> None:
    responder = Sequence(error_reply(500, "boom"), Reply(content="never reached"))
    with pytest.raises(ModelAPIError, match=r"^HTTP 500: "):
        model_for(serve_fast(responder), retry=RetryPolicy(max_retries=0)).complete(MESSAGES, [])
    assert len(responder.requests) == 1


def test_401_is_not_retried(serve_fast: Serve) -> None:
    responder = Sequence(error_reply(401, "invalid api key"), Reply(content="never reached"))
    with pytest.raises(ModelAPIError) as caught:
        model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert str(caught.value).startswith("HTTP 401: ")
    assert "invalid api key" in str(caught.value)
    assert len(responder.requests) == 1


def test_context_overflow_is_its_own_error(serve_fast: Serve) -> None:
    text = "This model's maximum context length is 8192 tokens, your messages resulted in 9000"
    responder = Sequence(error_reply(400, text))
    with pytest.raises(ContextOverflow, match="maximum context length is 8192"):
        model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert len(responder.requests) == 1


def test_other_400_is_a_model_api_error(serve_fast: Serve) -> None:
    responder = Sequence(error_reply(400, "unsupported parameter: tools"))
    with pytest.raises(ModelAPIError, match=r"^HTTP 400: .*unsupported parameter"):
        model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert len(responder.requests) == 1


def test_junk_double_without_choices_is_retried_then_fails(serve_fast: Serve) -> None:
    base_url = serve_fast(JunkDouble())
    model = OpenAIChatModel(
        name="junk-double", base_url=base_url, api_key="k", price=None, retry=FAST
    )
    with pytest.raises(ModelAPIError) as caught:
        model.complete(MESSAGES, [])
    expected = "bad reply after 2 retries: no choices: 200 application/json: '{\"choices\": []}'"
    assert str(caught.value) == expected
    assert caught.value.usage.retries == 2


def test_an_html_page_says_what_came_back_and_counts_the_retries(serve_fast: Serve) -> None:
    page = b"<!doctype html><html><head><title>Sign in</title></head><body>" + b"x" * 200
    base_url = serve_fast(JunkDouble(page, content_type="text/html; charset=utf-8"))
    model = OpenAIChatModel(
        name="junk-double", base_url=base_url, api_key="k", price=None, retry=FAST
    )
    with pytest.raises(ModelAPIError) as caught:
        model.complete(MESSAGES, [])
    shown = page[:80].decode() + "..."
    assert str(caught.value) == f"bad reply after 2 retries: 200 text/html: {shown!r}"
    assert caught.value.usage.retries == 2
    assert caught.value.usage.model_calls == 0


def test_a_hanging_endpoint_times_out_per_request_and_is_retried(serve_fast: Serve) -> None:
    responder = Sequence(Hanging(2.0))
    model = model_for(serve_fast(responder), request_timeout_s=0.3)
    with pytest.raises(ModelAPIError) as caught:
        model.complete(MESSAGES, [])
    assert str(caught.value) == "timeout after 2 retries: no reply within 0.3s"
    assert caught.value.usage.retries == 2
    assert caught.value.usage.wait_s >= 0.9
    assert len(responder.requests) == 3


def test_a_slow_try_then_a_good_one_reports_the_time_waited(serve_fast: Serve) -> None:
    responder = Sequence(Hanging(1.0), Reply(content="ok"))
    model = model_for(serve_fast(responder), request_timeout_s=0.3)
    reply = model.complete(MESSAGES, [])
    assert reply.content == "ok"
    assert reply.usage.retries == 1
    assert reply.usage.wait_s >= 0.3  # the timed-out try counts as waiting
    assert reply.usage.model_latency_s < reply.usage.wait_s


def test_non_json_text_body_is_a_model_api_error(serve_fast: Serve) -> None:
    responder = Sequence(RawReply(200, b"not json", "text/plain"))
    with pytest.raises(ModelAPIError):
        model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert len(responder.requests) == 3


def test_junk_then_good_reply_recovers(serve_fast: Serve) -> None:
    responder = Sequence(RawReply(200, b'{"choices": [{"index": 0}]}'), Reply(content="ok"))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert reply.content == "ok"
    assert reply.usage.retries == 1


def test_non_json_body_labelled_json_is_a_model_api_error(serve_fast: Serve) -> None:
    responder = Sequence(RawReply(200, b"<html>bad gateway</html>"))
    with pytest.raises(ModelAPIError):
        model_for(serve_fast(responder)).complete(MESSAGES, [])


def test_wrongly_typed_choice_is_a_model_api_error(serve_fast: Serve) -> None:
    responder = Sequence(completion({"content": 5}))
    with pytest.raises(ModelAPIError, match="bad reply"):
        model_for(serve_fast(responder)).complete(MESSAGES, [])


def test_tool_arguments_sent_as_an_object_become_json_text(serve_fast: Serve) -> None:
    function = {"name": "run", "arguments": {"command": "ls"}}
    call = {"id": "c", "type": "function", "function": function}
    responder = Sequence(completion({"content": None, "tool_calls": [call]}))
    reply = model_for(serve_fast(responder)).complete(MESSAGES, [])
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("run", {"command": "ls"})
    ]


def test_unreachable_endpoint_is_a_model_api_error(serve_fast: Serve) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = model_for(f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(max_retries=1, backoff_s=0))
    with pytest.raises(ModelAPIError, match=r"^APIConnectionError after 1 retries"):
        model.complete(MESSAGES, [])


def test_scripted_double_over_http(serve: Serve) -> None:
    base_url = serve(ScriptedDouble([Reply(content="first")]))
    model = OpenAIChatModel(name="scripted-double", base_url=base_url, api_key="k", price=None)
    assert model.complete(MESSAGES, []).content == "first"
    later = [*MESSAGES, {"role": "assistant", "content": "first"}]
    reply = model.complete(later, [])
    assert [call.name for call in reply.tool_calls] == ["finish"]


def test_retry_policy_backoff_doubles_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=5.0)
    for attempt, base in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        for _ in range(20):
            assert base / 2 <= policy.wait(attempt, None) <= base
    assert policy.wait(0, 2.5) == 2.5
    assert policy.wait(0, 100.0) == 5.0


@pytest.mark.parametrize("retry_after", [-1.0, math.nan])
def test_retry_policy_never_waits_a_negative_or_nan_time(retry_after: float) -> None:
    wait = RetryPolicy(max_backoff_s=5.0).wait(0, retry_after)
    assert 0.0 <= wait <= 5.0


class Endpoint:
    """Answers `GET /models` and chat completions as told; records completion requests."""

    models = ["seq-model"]

    def __init__(self, models: RawReply, completion: Reply | RawReply | None = None) -> None:
        self.models_answer = models
        self.completion = completion or Reply(content="OK")
        self.requests: list[dict[str, Any]] = []

    def models_reply(self) -> RawReply:
        return self.models_answer

    def respond(self, request: dict[str, Any]) -> Reply | RawReply:
        self.requests.append(request)
        return self.completion


def test_check_passes_when_the_model_is_listed(serve_fast: Serve) -> None:
    responder = Sequence(Reply(content="never asked"))
    model_for(serve_fast(responder)).check()
    assert responder.requests == []


def test_check_names_the_model_and_some_that_are_served(serve_fast: Serve) -> None:
    served = [f"model-{n}" for n in range(7)]
    base_url = serve_fast(Endpoint(models_list_reply(served)))
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url).check()
    assert str(caught.value) == (
        f"model 'seq-model' not served by {base_url}; "
        "available: model-0, model-1, model-2, model-3, model-4 and 2 more"
    )


def test_check_says_the_key_was_rejected(serve_fast: Serve) -> None:
    base_url = serve_fast(FailingDouble(401))
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url).check()
    assert str(caught.value) == f"endpoint {base_url} rejected the API key (HTTP 401)"


def test_check_retries_5xx_then_names_the_status(serve_fast: Serve) -> None:
    base_url = serve_fast(FailingDouble(500))
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url).check()
    assert str(caught.value) == (
        f"endpoint {base_url} answered HTTP 500 to GET /models after 2 retries: "
        "the double always fails"
    )


def test_check_falls_back_to_a_one_token_completion_without_a_models_route(
    serve_fast: Serve,
) -> None:
    responder = Endpoint(error_reply(404, "no route /v1/models"))
    model_for(serve_fast(responder)).check()
    (request,) = responder.requests
    assert request["model"] == "seq-model" and request["max_tokens"] == 1


def test_check_without_a_models_route_says_when_the_model_is_not_found(
    serve_fast: Serve,
) -> None:
    missing = error_reply(404, "The model `seq-model` does not exist.")
    base_url = serve_fast(Endpoint(RawReply(405, b""), missing))
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url).check()
    assert str(caught.value) == (
        f"model 'seq-model' not served by {base_url} "
        "(HTTP 404 to a chat completion: The model `seq-model` does not exist.)"
    )


def test_check_says_what_came_back_instead_of_a_model_list(serve_fast: Serve) -> None:
    page = RawReply(200, b"<!doctype html><html>welcome</html>", "text/html")
    base_url = serve_fast(Endpoint(page))
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url).check()
    assert str(caught.value) == (
        f"{base_url}/models did not answer with a model list "
        "(200 text/html: '<!doctype html><html>welcome</html>'); "
        "is the base URL right (most end in /v1)?"
    )


def test_check_says_when_nothing_listens(serve_fast: Serve) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url).check()
    assert str(caught.value) == f"cannot reach {base_url}: connection refused"


def test_check_of_a_hanging_endpoint_gives_up_after_the_request_timeout(serve_fast: Serve) -> None:
    class Stuck(Endpoint):
        def models_reply(self) -> RawReply:
            time.sleep(2)
            return models_list_reply(self.models)

    base_url = serve_fast(Stuck(RawReply(200, b"")))
    with pytest.raises(EndpointUnusable) as caught:
        model_for(base_url, request_timeout_s=0.3).check()
    assert str(caught.value) == f"{base_url} did not answer within 0.3s (--request-timeout)"


class _OnlyUnderV1(BaseHTTPRequestHandler):
    """Routes as vLLM and OpenAI do: `/v1/models` and `/v1/chat/completions`, else 404."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(models_list_reply(["seq-model"]))
        else:
            self._send(error_reply(404, "Not Found"))

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/v1/chat/completions":
            self._send(completion({"content": "OK"}))
        else:
            self._send(error_reply(404, "Not Found"))

    def _send(self, reply: RawReply) -> None:
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)


@pytest.fixture
def root_url() -> Iterator[str]:
    """A real HTTP server that serves the OpenAI API under /v1 only; its URL without /v1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OnlyUnderV1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_check_suggests_v1_when_the_base_url_lacks_it(root_url: str) -> None:
    with pytest.raises(EndpointUnusable) as caught:
        model_for(root_url).check()
    assert str(caught.value) == (
        f"{root_url} answered 404 for /models; did you mean --base-url {root_url}/v1?"
    )
    model_for(f"{root_url}/v1").check()  # the suggestion is right


def test_check_suggests_v1_when_models_answers_a_page(serve_fast: Serve) -> None:
    page = RawReply(200, b"<html>welcome</html>", "text/html")
    root = serve_fast(Endpoint(page)).removesuffix("/v1")
    with pytest.raises(EndpointUnusable) as caught:
        model_for(root).check()
    assert str(caught.value) == (
        f"{root}/models did not answer with a model list (200 text/html: "
        f"'<html>welcome</html>'); did you mean --base-url {root}/v1?"
    )


@pytest.mark.parametrize(
    ("base_url", "suggested"),
    [
        ("http://x:8000", "http://x:8000/v1"),
        ("http://x:8000/", "http://x:8000/v1"),
        ("https://api.example.com/openai", "https://api.example.com/openai/v1"),
        ("http://x:8000/v1", ""),
        ("http://x:8000/v1/", ""),
        ("http://x/api/v1/openai", ""),
    ],
)
def test_suggested_base_url(base_url: str, suggested: str) -> None:
    assert suggested_base_url(base_url) == suggested


def test_check_without_a_key_says_to_give_one(serve_fast: Serve) -> None:
    base_url = serve_fast(FailingDouble(401))
    for no_key in (KEY_NOT_GIVEN, ""):
        model = OpenAIChatModel(name="seq-model", base_url=base_url, api_key=no_key, price=None)
        with pytest.raises(EndpointUnusable) as caught:
            model.check()
        assert str(caught.value) == (
            f"no API key given: set OPENAI_API_KEY or pass --api-key ({base_url} answered HTTP 401)"
        )


def test_the_run_sends_the_no_key_placeholder_when_no_key_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`api.prepare` builds the client with `_api_key`; without --api-key or OPENAI_API_KEY
    that is the placeholder `check` recognises."""
    from cursorbench.api import _api_key
    from cursorbench.config import RunSpec

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = RunSpec.model_validate(
        {"model": {"kind": "openai", "name": "m", "base_url": "http://x/v1"}}
    )
    assert _api_key(spec) == KEY_NOT_GIVEN
    monkeypatch.setenv("OPENAI_API_KEY", "sk-given")
    assert _api_key(spec) == "sk-given"
