"""A small OpenAI-compatible HTTP server for scripted endpoints on loopback.

It speaks `POST /v1/chat/completions` (non-streaming, with tool calls) and
`GET /v1/models` (the responder's `models`, unless it answers that itself),
and asks a `Responder` what to answer. The embedded
reference solver and the test doubles in `harness.doubles` are responders;
the harness reaches them through the official `openai` client over real HTTP,
exactly as it reaches a provider. Not a general inference server.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, runtime_checkable


@dataclass
class Reply:
    """An assistant message: text and/or tool calls (arguments as a dict or raw text).

    `finish_reason` defaults to "tool_calls" or "stop"; "length" plays a reply cut off
    at the output token limit. Without `report_usage` the reply carries no `usage`."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    finish_reason: str | None = None
    report_usage: bool = True


@dataclass
class RawReply:
    """Anything at all, for endpoints that misbehave."""

    status: int
    body: bytes
    content_type: str = "application/json"


class Responder(Protocol):
    models: list[str]  # what `GET /models` lists

    def respond(self, request: dict[str, Any]) -> Reply | RawReply: ...


@runtime_checkable
class ReadsHeaders(Protocol):
    """A responder that needs the request's headers too (a replay: which attempt asks)."""

    def respond_to(self, request: dict[str, Any], headers: dict[str, str]) -> Reply | RawReply:
        """Headers by lower-case name."""
        ...


@runtime_checkable
class AnswersModels(Protocol):
    """A responder that answers `GET /models` itself (e.g. to fail it like a bad endpoint)."""

    def models_reply(self) -> RawReply: ...


def error_reply(status: int, message: str) -> RawReply:
    body = {"error": {"message": message, "type": "server_error", "code": status}}
    return RawReply(status, json.dumps(body).encode())


def models_list_reply(models: list[str]) -> RawReply:
    """`GET /models` as OpenAI answers it."""
    data = [{"id": name, "object": "model", "owned_by": "cursorbench"} for name in models]
    return RawReply(200, json.dumps({"object": "list", "data": data}).encode())


def completion_body(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
        for name, arguments in reply.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    prompt_chars = len(json.dumps(request.get("messages", [])))
    completion_chars = len(reply.content or "") + sum(
        len(c["function"]["arguments"]) for c in calls
    )
    prompt_tokens, completion_tokens = prompt_chars // 4 + 1, completion_chars // 4 + 1
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    if reply.report_usage:
        body["usage"] = usage
    return body


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        responder = self.server.responder
        if not self.path.rstrip("/").endswith("/models"):
            self._send(error_reply(404, f"no route {self.path}"))
        elif isinstance(responder, AnswersModels):
            self._send(responder.models_reply())
        else:
            self._send(models_list_reply(responder.models))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(error_reply(404, f"no route {self.path}"))
            return
        try:
            request = json.loads(raw)
        except json.JSONDecodeError:
            self._send(error_reply(400, "body is not JSON"))
            return
        self.server.requests += 1
        responder = self.server.responder
        try:
            if isinstance(responder, ReadsHeaders):
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = responder.respond_to(request, headers)
            else:
                reply = responder.respond(request)
        except Exception as error:  # a broken responder answers 500, like a broken provider
            reply = error_reply(500, f"{type(error).__name__}: {error}")
        if isinstance(reply, Reply):
            reply = RawReply(200, json.dumps(completion_body(reply, request)).encode())
        self._send(reply)

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
    manager."""

    def __init__(self, responder: Responder, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), responder)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> int:
        return self._server.requests

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def step_index(request: dict[str, Any]) -> int:
    """How many assistant turns the conversation already has: a stateless script position."""
    return sum(1 for message in request.get("messages", []) if message.get("role") == "assistant")


def first_user_message(request: dict[str, Any]) -> str:
    for message in request.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""
