"""The one OpenAI-compatible HTTP server: scripted endpoints, replays and served checkpoints.

It speaks `POST /v1/chat/completions` (tool calls; whole bodies, or server-sent events when
the responder streams) and `GET /v1/models` (the responder's `models`, unless it answers that
itself), and asks a `Responder` what to answer. The embedded reference solver, the test
doubles in `harness.model.doubles`, a replay (`harness.model.replay`) and a served checkpoint
(`training.serve`) are responders; the harness reaches them through the official `openai`
client over real HTTP, exactly as it reaches a provider.

The chat-completion bodies, whole and chunked, are built here too (`chat_completion`,
`ChunkStream`), so every responder answers in one shape. Errors come in OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`; a responder refuses a request by raising
`RequestError`, and any other exception answers 500.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, runtime_checkable


@dataclass
class Reply:
    """An assistant message: text and/or tool calls (arguments as a dict or raw text).

    `finish_reason` defaults to "tool_calls" or "stop"; "length" plays a reply cut off
    at the output token limit. `usage` is (prompt, completion) tokens as counted; without it
    they are estimated from characters. Without `report_usage` the reply carries no `usage`."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    finish_reason: str | None = None
    report_usage: bool = True
    usage: tuple[int, int] | None = None


@dataclass
class RawReply:
    """Anything at all, for endpoints that misbehave."""

    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class StreamReply:
    """A streamed completion: `chat.completion.chunk` bodies, sent as server-sent events.

    The first chunk is drawn before the status line goes out, so a `RequestError` raised
    while preparing the stream still answers as an ordinary error."""

    chunks: Generator[dict[str, Any], None, None]


Answer = Reply | RawReply | StreamReply


class Responder(Protocol):
    @property
    def models(self) -> list[str]:
        """What `GET /models` lists."""
        ...

    def respond(self, request: dict[str, Any]) -> Answer: ...


@runtime_checkable
class ReadsHeaders(Protocol):
    """A responder that needs the request's headers too (a replay: which attempt asks)."""

    def respond_to(self, request: dict[str, Any], headers: dict[str, str]) -> Answer:
        """Headers by lower-case name."""
        ...


@runtime_checkable
class AnswersModels(Protocol):
    """A responder that answers `GET /models` itself (e.g. to fail it like a bad endpoint)."""

    def models_reply(self) -> RawReply: ...


@runtime_checkable
class AnswersGets(Protocol):
    """A responder with GET routes of its own (`/models/NAME`, `/health`)."""

    def answer_get(self, route: str) -> RawReply | None:
        """`route` is the path without query, trailing slash and `/v1`; None: no such route."""
        ...


class RequestError(Exception):
    """A request a responder refuses, with its HTTP status and OpenAI's error fields."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = (
            status,
            message,
            kind,
            param,
            code,
        )

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.kind, self.param, self.code)

    def reply(self) -> RawReply:
        return RawReply(self.status, json.dumps(self.body()).encode())


def error_body(
    message: str, kind: str, param: str | None = None, code: str | int | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_reply(status: int, message: str, kind: str = "server_error") -> RawReply:
    """An error in OpenAI's shape, its `code` the status."""
    return RawReply(status, json.dumps(error_body(message, kind, None, status)).encode())


def model_card(name: str, owned_by: str = "cursorbench", created: int = 0) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": created, "owned_by": owned_by}


def models_list_reply(models: list[str]) -> RawReply:
    """`GET /models` as OpenAI answers it."""
    return models_body_reply([model_card(name) for name in models])


def models_body_reply(cards: list[dict[str, Any]]) -> RawReply:
    return RawReply(200, json.dumps({"object": "list", "data": cards}).encode())


# --- chat-completion bodies -----------------------------------------------------------------


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage_body(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def tool_call_body(
    name: str, arguments: dict[str, Any] | str, index: int | None = None
) -> dict[str, Any]:
    """One tool call of a message (or, with `index`, of a chunk's delta), with a fresh id."""
    body: dict[str, Any] = {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }
    return body if index is None else {"index": index, **body}


def chat_completion(
    model: str,
    message: dict[str, Any],
    finish_reason: str,
    usage: dict[str, int] | None,
    ident: str | None = None,
) -> dict[str, Any]:
    """A whole `chat.completion` body with one choice."""
    body: dict[str, Any] = {
        "id": ident or completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class ChunkStream:
    """The `chat.completion.chunk` bodies of one streamed completion (one id, one time)."""

    def __init__(self, model: str) -> None:
        self.model, self.ident, self.created = model, completion_id(), int(time.time())

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return self._envelope() | {"choices": [choice]}

    def usage(self, usage: dict[str, int]) -> dict[str, Any]:
        """The last chunk when the client asked for usage: no choices."""
        return self._envelope() | {"choices": [], "usage": usage}

    def _envelope(self) -> dict[str, Any]:
        return {
            "id": self.ident,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }


def completion_body(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    """The body of a `Reply` to `request`; tokens counted by the reply or estimated."""
    calls = [tool_call_body(name, arguments) for name, arguments in reply.tool_calls]
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    if reply.usage is not None:
        prompt_tokens, completion_tokens = reply.usage
    else:
        prompt_chars = len(json.dumps(request.get("messages", [])))
        completion_chars = len(reply.content or "") + sum(
            len(c["function"]["arguments"]) for c in calls
        )
        prompt_tokens, completion_tokens = prompt_chars // 4 + 1, completion_chars // 4 + 1
    return chat_completion(
        str(request.get("model", "")),
        message,
        reply.finish_reason or ("tool_calls" if calls else "stop"),
        usage_body(prompt_tokens, completion_tokens) if reply.report_usage else None,
    )


# --- HTTP -----------------------------------------------------------------------------------


def _route(path: str) -> str:
    """The path without query, trailing slash and `/v1` prefix."""
    return path.split("?", 1)[0].rstrip("/").removeprefix("/v1")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        responder = self.server.responder
        route = _route(self.path)
        own = responder.answer_get(route) if isinstance(responder, AnswersGets) else None
        if own is not None:
            self._send(own)
        elif not route.endswith("/models"):
            self._send(error_reply(404, f"no route {self.path}", "invalid_request_error"))
        elif isinstance(responder, AnswersModels):
            self._send(responder.models_reply())
        else:
            self._send(models_list_reply(responder.models))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if not _route(self.path).endswith("/chat/completions"):
            self._send(error_reply(404, f"no route {self.path}", "invalid_request_error"))
            return
        try:
            request = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._send(error_reply(400, "body is not JSON", "invalid_request_error"))
            return
        if not isinstance(request, dict):
            self._send(error_reply(400, "body is not a JSON object", "invalid_request_error"))
            return
        self.server.requests += 1
        answer = self._answer(request)
        if isinstance(answer, StreamReply):
            self._stream(answer.chunks)
        elif isinstance(answer, Reply):
            self._send(RawReply(200, json.dumps(completion_body(answer, request)).encode()))
        else:
            self._send(answer)

    def _answer(self, request: dict[str, Any]) -> Answer:
        responder = self.server.responder
        try:
            if isinstance(responder, ReadsHeaders):
                headers = {name.lower(): value for name, value in self.headers.items()}
                return responder.respond_to(request, headers)
            return responder.respond(request)
        except RequestError as error:
            return error.reply()
        except Exception as error:  # a broken responder answers 500, like a broken provider
            return error_reply(500, f"{type(error).__name__}: {error}")

    def _stream(self, chunks: Generator[dict[str, Any], None, None]) -> None:
        try:
            first = next(chunks)
        except RequestError as error:
            self._send(error.reply())
            return
        except Exception as error:
            self._send(error_reply(500, f"{type(error).__name__}: {error}"))
            return
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self._event(first)
            try:
                for chunk in chunks:
                    self._event(chunk)
            except (BrokenPipeError, ConnectionResetError):
                raise
            except Exception as error:  # headers are out: the error goes as an event
                self._event(error_body(f"{type(error).__name__}: {error}", "server_error"))
            self._send_chunk(b"data: [DONE]\n\n")
            self._send_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client left: stop generating for it
        finally:
            chunks.close()

    def _event(self, data: dict[str, Any]) -> None:
        self._send_chunk(b"data: " + json.dumps(data).encode() + b"\n\n")

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send(self, reply: RawReply) -> None:
        try:
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout); not our fault


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], responder: Responder) -> None:
        super().__init__(address, _Handler)
        self.responder = responder
        self.requests = 0


class OpenAIServer:
    """Serves a responder on loopback (or `host`) in a background thread; use as a context
    manager, or `serve_forever` in this thread."""

    def __init__(self, responder: Responder, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), responder)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}/v1"

    @property
    def requests(self) -> int:
        return self._server.requests

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def step_index(request: dict[str, Any]) -> int:
    """How many assistant turns the conversation already has: a stateless script position."""
    return sum(1 for message in request.get("messages", []) if message.get("role") == "assistant")


def tool_turns(request: dict[str, Any]) -> int:
    """How many assistant turns with tool calls the conversation has: the position of a
    script whose every reply calls a tool, which a task's earlier turns (plain text) do not
    move."""
    messages = request.get("messages", [])
    return sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))


def first_user_message(request: dict[str, Any]) -> str:
    for message in request.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""
