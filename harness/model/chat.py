"""Chat models: the `ChatModel` protocol and its client for OpenAI-compatible endpoints.

`OpenAIChatModel` speaks chat completions with tool calling through the
official `openai` client, bounds each request by its own timeout, retries with
backoff on 429, 5xx, timeouts, dropped connections and junk replies, and
meters tokens, latency, retries and cost. What it cannot get after its
retries becomes a `ModelAPIError`; a prompt too long for the model becomes a
`ContextOverflow`; both carry the usage spent on the way (retries, time spent
waiting). Malformed tool-call arguments are passed through untouched: the
agent loop turns them into tool errors.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from contextlib import nullcontext
from contextvars import ContextVar
from typing import Any, Protocol

import openai
from pydantic import BaseModel, Field

from harness.errors import CursorBenchError
from harness.model.defaults import DEFAULT_REQUEST_TIMEOUT_S as DEFAULT_REQUEST_TIMEOUT_S
from harness.model.pricing import Price
from harness.results import Usage

RETRYABLE = (
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.APIResponseValidationError,
)
CONTEXT_OVERFLOW = re.compile(
    r"context.length|maximum context|context window|too many tokens|prompt is too long", re.I
)
SHOWN_BODY_BYTES = 80  # of a junk reply, in error messages
SHOWN_MODELS = 5  # of the models an endpoint serves, when it does not serve the one asked for
ATTEMPT_HEADER = "X-CursorBench-Attempt"  # `task#epoch`, sent only where asked (replays)
# The key sent where none was given (no --api-key, no OPENAI_API_KEY): a 401 then means
# "give a key", not "your key was refused".
KEY_NOT_GIVEN = "unused"
CURRENT_ATTEMPT: ContextVar[str | None] = ContextVar("cursorbench_attempt", default=None)


class RetryNotice(BaseModel):
    """A model call about to be retried: what went wrong and how long it waits."""

    attempt: str | None  # `task#epoch` of the attempt that made the call, when known
    retry: int  # 1 for the first retry
    max_retries: int
    wait_s: float
    reason: str


RetryListener = Callable[[RetryNotice], None]


class ModelAPIError(Exception):
    """The endpoint could not give a usable reply after retries."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()  # what the failed call cost: retries, time waited


class ContextOverflow(Exception):
    """The conversation no longer fits the model's context window."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


class EndpointUnusable(CursorBenchError):
    """The endpoint cannot serve a run: unreachable, key refused, model not served (one line)."""


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str  # raw JSON text, exactly as the model wrote it


class ModelReply(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)

    def as_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


class ChatModel(Protocol):
    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        """One reply. Its `usage.wait_s` is the time spent waiting on the endpoint (failed
        tries, backoff, a free connection), which the agent's wall-time budget does not count."""
        ...


class RetryPolicy(BaseModel):
    max_retries: int = Field(default=4, ge=0, description="Retries after the first try.")
    backoff_s: float = Field(default=1.0, ge=0, description="First wait; doubles each retry.")
    max_backoff_s: float = Field(default=30.0, ge=0)

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and math.isfinite(retry_after):
            return min(max(retry_after, 0.0), self.max_backoff_s)
        base = min(self.backoff_s * 2**attempt, self.max_backoff_s)
        return base * (0.5 + random.random() / 2)


class OpenAIChatModel:
    def __init__(
        self,
        *,
        name: str,
        base_url: str,
        api_key: str,
        price: Price | None,
        retry: RetryPolicy | None = None,
        temperature: float | None = None,
        connection_slots: threading.Semaphore | None = None,
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        attempt_header: bool = False,
        on_retry: RetryListener | None = None,
    ) -> None:
        self.name = name
        self.attempt_header = attempt_header
        self.on_retry = on_retry
        self.base_url = base_url
        self.price = price
        self.retry = retry or RetryPolicy()
        self.temperature = temperature
        self.request_timeout_s = request_timeout_s
        self._slots = connection_slots
        self._models_route_missing = False  # GET /models answered 404 (see `check`)
        self.key_given = api_key not in ("", KEY_NOT_GIVEN)
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or KEY_NOT_GIVEN, max_retries=0
        )

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        """One reply. Each try gets `request_timeout_s`; a try that fails in a way worth
        retrying is retried up to `retry.max_retries` times, with backoff."""
        retries = 0
        waited = 0.0  # for a free connection, on failed tries, in backoff
        while True:
            queued = time.monotonic()
            try:
                with self._slots or nullcontext():
                    started = time.monotonic()
                    waited += started - queued
                    reply = self._call(messages, tools)
            except (*RETRYABLE, _JunkReply) as error:
                waited += time.monotonic() - started
                if retries >= self.retry.max_retries:
                    spent = Usage(retries=retries, wait_s=waited)
                    raise ModelAPIError(self._describe(error, retries), spent) from None
                wait = self.retry.wait(retries, _retry_after(error))
                self._notify_retry(retries + 1, wait, error)
                time.sleep(wait)
                waited += wait
                retries += 1
                continue
            except openai.APIStatusError as error:
                waited += time.monotonic() - started
                spent = Usage(retries=retries, wait_s=waited)
                if CONTEXT_OVERFLOW.search(str(error.message)):
                    raise ContextOverflow(str(error.message), spent) from None
                raise ModelAPIError(self._describe(error, retries), spent) from None
            except openai.OpenAIError as error:
                waited += time.monotonic() - started
                spent = Usage(retries=retries, wait_s=waited)
                raise ModelAPIError(self._describe(error, retries), spent) from None
            reply.usage.model_latency_s = time.monotonic() - started
            reply.usage.retries = retries
            reply.usage.wait_s = waited
            return reply

    def _notify_retry(self, retry: int, wait: float, error: Exception) -> None:
        if self.on_retry is None:
            return
        reason = self._describe(error, 0)
        notice = RetryNotice(
            attempt=CURRENT_ATTEMPT.get(),
            retry=retry,
            max_retries=self.retry.max_retries,
            wait_s=wait,
            reason=reason,
        )
        with contextlib.suppress(Exception):  # a broken listener must not break the call
            self.on_retry(notice)

    def check(self) -> None:
        """Once, before a run: the endpoint answers, takes the key and serves the model.

        It asks `GET /models`; an endpoint without that route (404, 405) gets a one-token
        chat completion instead. 429 and 5xx are retried as for any request; anything else
        that goes wrong raises `EndpointUnusable` saying what."""
        listed = self._listed_models()
        if not listed:  # no such route, or an empty list: ask for a completion instead
            self._probe_completion()
        elif self.name not in listed:
            shown = ", ".join(sorted(listed)[:SHOWN_MODELS])
            more = f" and {len(listed) - SHOWN_MODELS} more" if len(listed) > SHOWN_MODELS else ""
            raise EndpointUnusable(
                f"model {self.name!r} not served by {self.base_url}; available: {shown}{more}"
            )

    def _listed_models(self) -> list[str] | None:
        """The ids `GET /models` lists; None where the endpoint has no such route."""
        try:
            raw = self._checked(
                "GET /models",
                lambda: self._client.models.with_raw_response.list(timeout=self.request_timeout_s),
            )
        except openai.APIStatusError as error:
            if error.status_code in (404, 405):
                self._models_route_missing = error.status_code == 404
                return None
            raise self._unusable(error, "GET /models") from None
        try:
            return [str(model["id"]) for model in json.loads(raw.http_response.content)["data"]]
        except (ValueError, KeyError, TypeError):
            came = _what_came(raw.http_response)
            suggested = suggested_base_url(self.base_url)
            hint = (
                "is the base URL right (most end in /v1)?"
                if not suggested
                else f"did you mean --base-url {suggested}?"
            )
            raise EndpointUnusable(
                f"{self.base_url}/models did not answer with a model list ({came}); {hint}"
            ) from None

    def _probe_completion(self) -> None:
        try:
            raw = self._checked(
                "a chat completion",
                lambda: self._client.chat.completions.with_raw_response.create(
                    model=self.name,
                    messages=[{"role": "user", "content": "Say OK."}],
                    max_tokens=1,
                    timeout=self.request_timeout_s,
                ),
            )
        except openai.APIStatusError as error:
            if error.status_code == 404 and self._models_route_missing:
                suggested = suggested_base_url(self.base_url)
                if suggested:
                    raise EndpointUnusable(
                        f"{self.base_url} answered 404 for /models; "
                        f"did you mean --base-url {suggested}?"
                    ) from None
            if error.status_code == 404:
                raise EndpointUnusable(
                    f"model {self.name!r} not served by {self.base_url} "
                    f"(HTTP 404 to a chat completion: {_detail(error)})"
                ) from None
            raise self._unusable(error, "a chat completion") from None
        try:
            json.loads(raw.http_response.content)["choices"]
        except (ValueError, KeyError, TypeError):
            came = _what_came(raw.http_response)
            raise EndpointUnusable(
                f"{self.base_url} did not answer a chat completion ({came})"
            ) from None

    def _checked(self, asked: str, request: Callable[[], Any]) -> Any:
        """The request's raw response; 429 and 5xx retried; other failures as `EndpointUnusable`
        (HTTP statuses are left to the caller as `APIStatusError`)."""
        retries = 0
        while True:
            try:
                return request()
            except (openai.RateLimitError, openai.InternalServerError) as error:
                if retries >= self.retry.max_retries:
                    raise self._unusable(error, asked, retries) from None
                time.sleep(self.retry.wait(retries, _retry_after(error)))
                retries += 1
            except openai.APITimeoutError:
                raise EndpointUnusable(
                    f"{self.base_url} did not answer within {self.request_timeout_s:g}s "
                    "(--request-timeout)"
                ) from None
            except openai.APIConnectionError as error:
                raise EndpointUnusable(f"cannot reach {self.base_url}: {_cause(error)}") from None

    def _unusable(
        self, error: openai.APIStatusError, asked: str, retries: int = 0
    ) -> EndpointUnusable:
        status = error.status_code
        if status == 401 and not self.key_given:
            return EndpointUnusable(
                f"no API key given: set OPENAI_API_KEY or pass --api-key "
                f"({self.base_url} answered HTTP 401)"
            )
        if status == 401:
            return EndpointUnusable(f"endpoint {self.base_url} rejected the API key (HTTP 401)")
        if status == 403:
            return EndpointUnusable(
                f"endpoint {self.base_url} refused access (HTTP 403): {_detail(error)}"
            )
        after = f" after {retries} retries" if retries else ""
        return EndpointUnusable(
            f"endpoint {self.base_url} answered HTTP {status} to {asked}{after}: {_detail(error)}"
        )

    def _describe(self, error: Exception, retries: int) -> str:
        if isinstance(error, openai.APITimeoutError):
            after = f" after {retries} retries" if retries else ""
            return f"timeout{after}: no reply within {self.request_timeout_s:g}s"
        return _describe(error, retries)

    def _call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        # The conversation goes in `extra_body`, already in wire format: the client's
        # own transform of `messages` walks every message's type hints and costs
        # ~1 ms per message per call, which dominated the harness's time per step.
        attempt = CURRENT_ATTEMPT.get() if self.attempt_header else None
        raw = self._client.chat.completions.with_raw_response.create(
            model=self.name,
            messages=[],
            timeout=self.request_timeout_s,
            extra_body={"messages": messages, "tools": tools, **options},
            extra_headers={ATTEMPT_HEADER: attempt} if attempt else None,
        )
        try:
            response = raw.parse()
        except (ValueError, TypeError):  # a 200 whose body is not JSON
            raise _JunkReply("", raw.http_response) from None
        if isinstance(response, str):  # not JSON either: the client hands back the text
            raise _JunkReply("", raw.http_response)
        try:
            return self._parse(response, messages)
        except _JunkReply as junk:
            raise _JunkReply(junk.reason, raw.http_response) from None
        except (ValueError, TypeError, AttributeError) as error:
            reason = f"malformed ({type(error).__name__})"
            raise _JunkReply(reason, raw.http_response) from None

    def _parse(self, response: Any, messages: list[dict[str, Any]]) -> ModelReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise _JunkReply("no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise _JunkReply("a choice without a message")
        calls = [
            ToolCall(
                id=call.id or f"call_{index}",
                name=call.function.name or "",
                arguments=_arguments_text(call.function.arguments),
            )
            for index, call in enumerate(message.tool_calls or [])
            if getattr(call, "function", None) is not None
        ]
        usage = _usage(response, messages, message.content, calls)
        usage.truncated_replies = int(choice.finish_reason == "length")
        if self.price is not None:
            usage.cost_usd = self.price.cost(usage.tokens_in, usage.tokens_out)
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            usage=usage,
        )


class _JunkReply(Exception):
    """A 200 whose body is not a usable completion; says what came back (`response`
    is the client's HTTP response)."""

    def __init__(self, reason: str, response: Any = None) -> None:
        self.reason = reason
        self.response = response
        super().__init__(": ".join(part for part in (reason, _what_came(response)) if part))


def suggested_base_url(base_url: str) -> str:
    """`base_url` + `/v1`, where an OpenAI-style base URL would usually have it and this one
    has no `/v1` part; "" otherwise."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or "v1" in parts.path.split("/"):
        return ""
    return base_url.rstrip("/") + "/v1"


def _what_came(response: Any) -> str:
    """E.g. `200 text/html: '<!doctype html>...'`: status, content type, the body's start."""
    if response is None:
        return ""
    kind = response.headers.get("content-type", "no content type").split(";")[0].strip()
    body = response.content
    shown = body[:SHOWN_BODY_BYTES].decode("utf-8", "replace")
    shown += "..." if len(body) > SHOWN_BODY_BYTES else ""
    return (
        f"{response.status_code} {kind}: {shown!r}"
        if body
        else f"{response.status_code} {kind}: empty"
    )


def _arguments_text(arguments: Any) -> str:
    """Arguments as the model wrote them; some providers send an object, not a string."""
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _usage(response: Any, messages: list[Any], content: str | None, calls: list[ToolCall]) -> Usage:
    reported = getattr(response, "usage", None)
    if reported is not None and reported.prompt_tokens is not None:
        return Usage(
            tokens_in=reported.prompt_tokens,
            tokens_out=reported.completion_tokens or 0,
            model_calls=1,
        )
    # No usage reported: estimate at four characters a token, and say so.
    sent = len(json.dumps(messages))
    received = len(content or "") + sum(len(call.arguments) for call in calls)
    return Usage(tokens_in=sent // 4, tokens_out=received // 4, model_calls=1, estimated_calls=1)


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None


_ERROR_NAMES: dict[type, str] = {_JunkReply: "bad reply", openai.APITimeoutError: "timeout"}


def _detail(error: Exception) -> str:
    """The first line of what the endpoint or the client said, without the client's prefix."""
    text = str(getattr(error, "message", None) or error).strip()
    lines = re.sub(r"^Error code: \d+ - ", "", text).splitlines()
    return lines[0][:200] if lines else "no detail"


def _cause(error: Exception) -> str:
    """Why a connection failed, from the innermost exception: e.g. `connection refused`."""
    inner: BaseException = error
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__  # type: ignore[assignment]
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", str(inner).strip()) or type(inner).__name__
    return text[0].lower() + text[1:]


def _describe(error: Exception, retries: int) -> str:
    status = getattr(error, "status_code", None)
    what = f"HTTP {status}" if status else _ERROR_NAMES.get(type(error), type(error).__name__)
    after = f" after {retries} retries" if retries else ""
    return f"{what}{after}: {_detail(error)}"
