"""Serve a checkpoint behind an OpenAI-compatible chat-completions API.

    python -m training.serve CHECKPOINT [--host 127.0.0.1] [--port 8000] [--model-name NAME]

Routes: `GET /v1/models`, `GET /v1/models/NAME`, `POST /v1/chat/completions` (tools and tool
calls, `stream: true` as server-sent events, `usage` counts, `temperature`, `top_p`,
`max_tokens`/`max_completion_tokens`, `seed`). The conversation is rendered with the chat
template the model is SFT-trained with (`training.chat`), continued by `training.generate` up
to `<|end|>`, and parsed back into text and tool calls. The tokenizer is the checkpoint
folder's `tokenizer.json`. Errors come in OpenAI's shape, `{"error": {"message", "type",
"param", "code"}}`; a prompt longer than the context answers 400 `context_length_exceeded`,
which the harness scores as the agent's `context_overflow`.

`ServedModel` is a responder of `harness.model.openai_server`, the one OpenAI-compatible
server, which does the HTTP, the streaming (server-sent events) and the body shapes. One
model answers one request at a time (a lock); connections are served by threads. The
key/value cache of the last request is kept, so the prefix the next prompt shares with it (an
agent's system prompt, tools and conversation so far) is not computed again.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.model.openai_server import (
    ChunkStream,
    OpenAIServer,
    RawReply,
    Reply,
    RequestError,
    StreamReply,
    model_card,
    models_body_reply,
    tool_call_body,
    usage_body,
)
from training.chat import AssistantReply, parse_reply, render_prompt
from training.checkpoint import CheckpointError, load_model, read_checkpoint
from training.generate import KVCache, SamplingParams, stream_tokens
from training.hf_llama import is_hf_checkpoint
from training.model import Transformer
from training.tokenizer import END, EOS, TOOL_CALL, CodeTokenizer

TOKENIZER_FILE = "tokenizer.json"
DEFAULT_MAX_TOKENS = 256


class ServeError(Exception):
    """A checkpoint that cannot be served (one line)."""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The fields of a chat-completions request this server uses; others are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    n: int = Field(default=1, ge=1, le=1)
    stream: bool = False
    stream_options: StreamOptions | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int

    def as_dict(self) -> dict[str, int]:
        return usage_body(self.prompt_tokens, self.completion_tokens)


@dataclass(frozen=True)
class Completion:
    reply: AssistantReply
    finish_reason: Literal["stop", "length", "tool_calls"]
    usage: Usage


def load_tokenizer(checkpoint: Path) -> CodeTokenizer:
    path = checkpoint / TOKENIZER_FILE
    if not path.is_file():
        raise ServeError(f"{checkpoint}: no {TOKENIZER_FILE} in the checkpoint folder")
    try:
        return CodeTokenizer.load(path)
    except (OSError, ValueError, Exception) as error:  # tokenizers raises its own Exception
        raise ServeError(f"{path}: unreadable tokenizer: {error}") from None


class FairTurns:
    """A lock granted in the order it was asked for (a ticket lock): a thread that releases
    it and asks again goes behind the threads already waiting."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._next_ticket = 0
        self._serving = 0

    def __enter__(self) -> None:
        with self._condition:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._condition.wait_for(lambda: self._serving == ticket)

    def __exit__(self, *exc: object) -> None:
        with self._condition:
            self._serving += 1
            self._condition.notify_all()


class CachePool:
    """Key/value caches of finished sequences, lent one per request in flight: a request
    takes the idle cache sharing the longest prefix with its prompt, or a fresh one."""

    def __init__(self, n_layers: int, keep: int = 4) -> None:
        self.n_layers = n_layers
        self.keep = keep
        self._idle: list[KVCache] = []
        self._lock = threading.Lock()

    def take(self, prompt: list[int]) -> KVCache:
        def shared(cache: KVCache) -> int:
            return next(
                (i for i, (a, b) in enumerate(zip(cache.fed, prompt, strict=False)) if a != b),
                min(len(cache.fed), len(prompt)),
            )

        with self._lock:
            if not self._idle:
                return KVCache.empty(self.n_layers)
            best = max(self._idle, key=shared)
            self._idle.remove(best)
            return best

    def give_back(self, cache: KVCache) -> None:
        with self._lock:
            self._idle.append(cache)
            del self._idle[: -self.keep]


class ServedModel:
    """A checkpoint ready to answer chat completions."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: CodeTokenizer,
        name: str,
        context_length: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        rope_base: float | None = None,
    ) -> None:
        if tokenizer.vocab_size > model.config.vocab_size:
            raise ServeError(
                f"tokenizer has {tokenizer.vocab_size} tokens, the model only "
                f"{model.config.vocab_size}"
            )
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.context_length = context_length or model.config.max_seq_len
        self.max_tokens = max_tokens
        self.rope_base = rope_base
        self.stop_ids = {tokenizer.id(END), tokenizer.id(EOS)}
        self.created = int(time.time())
        # one decode step at a time, steps taken in arrival order: concurrent requests
        # interleave token by token, so a short one is not stuck behind a long one
        self._turns = FairTurns()
        # finished sequences' keys and values: a new prompt's shared prefix is not recomputed
        self._caches = CachePool(len(model.blocks))

    @classmethod
    def load(
        cls,
        checkpoint: Path,
        name: str | None = None,
        context_length: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> ServedModel:
        """The model of a complete checkpoint folder, named after it unless `name` is given.

        The RoPE base is the one the checkpoint was trained at: `rope_base` in its
        `state.json` when the trainer stored one there, else the model config's."""
        try:
            # a Hugging Face-layout folder has no trainer state (no COMPLETE marker either)
            state = {} if is_hf_checkpoint(checkpoint) else read_checkpoint(checkpoint).state
            model = load_model(checkpoint)
        except CheckpointError as error:
            raise ServeError(str(error)) from None
        tokenizer = load_tokenizer(checkpoint)
        rope_base = state.get("rope_base")
        return cls(
            model,
            tokenizer,
            name or checkpoint.resolve().name,
            context_length=context_length,
            max_tokens=max_tokens,
            rope_base=float(rope_base) if rope_base is not None else None,
        )

    # --- one request ---------------------------------------------------------------------

    def prepare(self, request: ChatRequest) -> tuple[list[int], SamplingParams]:
        """The prompt's token ids and how to sample, or a `RequestError`."""
        if request.model != self.name:
            raise RequestError(
                404,
                f"The model `{request.model}` does not exist (this server serves `{self.name}`)",
                param="model",
                code="model_not_found",
            )
        messages = [_normalized(m) for m in request.messages]
        try:
            text = render_prompt(messages, request.tools if request.tool_choice != "none" else None)
        except ValueError as error:
            raise RequestError(400, str(error), param="messages") from None
        prompt = self.tokenizer.encode(text)
        room = self.context_length - len(prompt)
        if room < 1:
            raise RequestError(
                400,
                f"This model's maximum context length is {self.context_length} tokens. "
                f"However, your messages resulted in {len(prompt)} tokens. "
                "Please reduce the length of the messages.",
                param="messages",
                code="context_length_exceeded",
            )
        asked = request.max_completion_tokens or request.max_tokens
        if asked is not None and asked > room:
            # asked for more than fits: refused as vLLM does, not silently cut to the room
            field = "max_completion_tokens" if request.max_completion_tokens else "max_tokens"
            raise RequestError(
                400,
                f"This model's maximum context length is {self.context_length} tokens. "
                f"However, you requested {len(prompt) + asked} tokens ({len(prompt)} in the "
                f"messages, {asked} in the completion). Please reduce the length of the "
                f"messages or the completion.",
                param=field,
                code="context_length_exceeded",
            )
        # the server's default reply length is only a default: it shrinks to the room left
        wanted = asked or self.max_tokens
        params = SamplingParams(
            temperature=1.0 if request.temperature is None else request.temperature,
            top_p=1.0 if request.top_p is None else request.top_p,
            max_tokens=min(wanted, room),
            seed=request.seed,
        )
        return prompt, params

    def tokens(self, prompt: list[int], params: SamplingParams) -> Iterator[int]:
        """Generated ids; each step (the prompt's prefill, then one token) waits its turn."""
        cache = self._caches.take(prompt)
        steps = stream_tokens(self.model, prompt, params, self.stop_ids, self.rope_base, cache)
        try:
            while True:
                with self._turns, torch.inference_mode():
                    token = next(steps, None)
                if token is None:
                    return
                yield token
        finally:
            with self._turns:
                steps.close()
            self._caches.give_back(cache)

    def complete(self, request: ChatRequest) -> Completion:
        prompt, params = self.prepare(request)
        generated = list(self.tokens(prompt, params))
        return self._completion(prompt, generated)

    def _completion(self, prompt: list[int], generated: list[int]) -> Completion:
        stopped = bool(generated) and generated[-1] in self.stop_ids
        text = self.tokenizer.decode(generated[:-1] if stopped else generated)
        reply = parse_reply(text)
        finish: Literal["stop", "length", "tool_calls"] = "stop" if stopped else "length"
        if reply.tool_calls and stopped:
            finish = "tool_calls"
        return Completion(reply, finish, Usage(len(prompt), len(generated)))

    def stream(self, request: ChatRequest) -> Generator[dict[str, Any], None, None]:
        """The completion as chat-completion chunks: text as it is generated (up to the first
        tool call), then the rest of the text and the tool calls, the finish, the usage."""
        prompt, params = self.prepare(request)
        chunks = ChunkStream(self.name)
        yield chunks.delta({"role": "assistant", "content": ""})
        generated: list[int] = []
        sent = ""
        for token in self.tokens(prompt, params):
            generated.append(token)
            if token in self.stop_ids:
                continue  # the last id: `stream_tokens` ends after it
            text = self.tokenizer.decode(generated)
            visible = text.split(TOOL_CALL, 1)[0]
            # an unfinished UTF-8 sequence decodes as U+FFFD: wait for its last bytes
            if len(visible) > len(sent) and not visible.endswith("\ufffd"):
                yield chunks.delta({"content": visible[len(sent) :]})
                sent = visible
        completion = self._completion(prompt, generated)
        rest = completion.reply.content[len(sent) :]
        if rest:
            yield chunks.delta({"content": rest})
        for index, call in enumerate(completion.reply.tool_calls):
            yield chunks.delta({"tool_calls": [tool_call_body(call.name, call.arguments, index)]})
        yield chunks.delta({}, completion.finish_reason)
        if request.stream_options is not None and request.stream_options.include_usage:
            yield chunks.usage(completion.usage.as_dict())

    # --- as a responder of `harness.model.openai_server` ---------------------------------------

    @property
    def models(self) -> list[str]:
        return [self.name]

    def respond(self, request: dict[str, Any]) -> Reply | StreamReply:
        """A chat-completions request answered, streamed when it asks; refusals raise
        `RequestError`, which the server sends in OpenAI's shape."""
        chat = parse_request(request)
        if chat.stream:
            return StreamReply(self.stream(chat))
        completion = self.complete(chat)
        reply = completion.reply
        calls = [(call.name, call.arguments) for call in reply.tool_calls]
        return Reply(
            content=reply.content if reply.content or not calls else None,
            tool_calls=list(calls),
            finish_reason=completion.finish_reason,
            usage=(completion.usage.prompt_tokens, completion.usage.completion_tokens),
        )

    def models_reply(self) -> RawReply:
        return models_body_reply([self.model_card()])

    def answer_get(self, route: str) -> RawReply | None:
        if route == f"/models/{self.name}":
            return RawReply(200, json.dumps(self.model_card()).encode())
        if route.startswith("/models/"):
            name = route.removeprefix("/models/")
            return RequestError(
                404, f"The model `{name}` does not exist", code="model_not_found"
            ).reply()
        if route == "/health":
            return RawReply(200, json.dumps({"status": "ok"}).encode())
        return None

    def model_card(self) -> dict[str, Any]:
        return model_card(self.name, owned_by="training", created=self.created)


def _normalized(message: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's `developer` role is a system message to this template."""
    if message.get("role") == "developer":
        return {**message, "role": "system"}
    return message


def parse_request(data: dict[str, Any]) -> ChatRequest:
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise RequestError(400, f"{where}: {first['msg']}", param=where) from None


class ModelServer(OpenAIServer):
    """Serves a `ServedModel` over HTTP in a background thread; use as a context manager."""

    def __init__(self, served: ServedModel, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(served, host, port)
        self.served = served

    def __enter__(self) -> ModelServer:
        self.start()
        return self


# --- command line -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m training.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a complete checkpoint folder")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--model-name", help="the name clients ask for [default: the folder's]")
    parser.add_argument(
        "--context-length",
        type=int,
        help="prompt + reply tokens allowed [default: the model's max_seq_len]",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help="reply tokens when a request does not say",
    )
    parser.add_argument("--threads", type=int, help="torch CPU threads [default: torch's]")
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be at least 1, not {args.threads}")
        torch.set_num_threads(args.threads)
    try:
        served = ServedModel.load(
            args.checkpoint, args.model_name, args.context_length, args.max_tokens
        )
        server = ModelServer(served, args.host, args.port)
    except (ServeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"serving {served.name} at {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
