"""The OpenAI-compatible server over a checkpoint, through the official `openai` client: models,
completions with a tool call the model really generates, streaming, usage, errors in OpenAI's
shape; the command line; and `cursorbench run` scoring a served checkpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)

from training.chat import render_prompt
from training.serve import ModelServer, ServedModel

from .conftest import ASKED, READ_FILE_TOOL

ROOT = Path(__file__).resolve().parents[2]
# The fixtures' plain dicts are the JSON the client sends; these are them as its parameter types.
MESSAGES = cast(list[ChatCompletionMessageParam], ASKED)
TOOL = cast(ChatCompletionFunctionToolParam, READ_FILE_TOOL)


@pytest.fixture(scope="module")
def server(checkpoints: dict[str, Any]) -> Iterator[ModelServer]:
    served = ServedModel.load(checkpoints["trained"], name="toy", max_tokens=64)
    with ModelServer(served) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: ModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)


def test_models_lists_the_served_name(client: openai.OpenAI) -> None:
    assert [model.id for model in client.models.list()] == ["toy"]
    assert client.models.retrieve("toy").id == "toy"


def test_a_completion_carries_the_tool_call_the_model_generated(
    client: openai.OpenAI, checkpoints: dict[str, Any]
) -> None:
    reply = client.chat.completions.create(
        model="toy",
        messages=MESSAGES,
        tools=[TOOL],
        temperature=0,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Reading it."
    [call] = choice.message.tool_calls or []
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.function.name == "read_file"
    assert json.loads(call.function.arguments) == {"path": "a.py"}
    prompt = checkpoints["tokenizer"].encode(render_prompt(ASKED, [READ_FILE_TOOL]))
    assert reply.usage is not None and reply.usage.prompt_tokens == len(prompt)
    generated = checkpoints["tokenizer"].encode(
        'Reading it.<|tool_call|>{"name": "read_file", "arguments": {"path": "a.py"}}'
        "<|end_tool_call|><|end|>"
    )
    assert reply.usage.completion_tokens == len(generated)
    assert reply.usage.total_tokens == len(prompt) + len(generated)


def test_streaming_gives_the_same_reply_in_chunks_then_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="toy",
        messages=MESSAGES,
        tools=[TOOL],
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert content == "Reading it."
    named = [(call.index, call.function.name if call.function else None) for call in calls]
    assert named == [(0, "read_file")]
    function = calls[0].function
    assert function is not None and function.arguments is not None
    assert json.loads(function.arguments) == {"path": "a.py"}
    assert finishes[-1] == "tool_calls" and all(f is None for f in finishes[:-1])
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 2
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None and usage.completion_tokens > 0


def test_a_reply_cut_at_max_tokens_says_length(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="toy",
        messages=MESSAGES,
        tools=[TOOL],
        temperature=0,
        max_tokens=3,
    )
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None and reply.usage.completion_tokens == 3
    assert not reply.choices[0].message.tool_calls


def test_asking_for_more_tokens_than_fit_is_refused_not_clamped(client: openai.OpenAI) -> None:
    for field in ("max_tokens", "max_completion_tokens"):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="toy",
                messages=MESSAGES,
                **{field: 10**9},  # type: ignore[call-overload]
            )
        body = refused.value.body
        assert isinstance(body, dict) and body["param"] == field
        assert refused.value.code == "context_length_exceeded"
        assert f"{10**9} in the completion" in refused.value.message
    # the boundary: exactly the room left after the prompt is served, one more is refused
    probe = client.chat.completions.create(model="toy", messages=MESSAGES, max_tokens=1)
    assert probe.usage is not None
    room = 256 - probe.usage.prompt_tokens
    client.chat.completions.create(model="toy", messages=MESSAGES, max_tokens=room)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="toy", messages=MESSAGES, max_tokens=room + 1)


def test_errors_come_in_openais_shape(client: openai.OpenAI, server: ModelServer) -> None:
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    assert unknown.value.code == "model_not_found"
    long: list[ChatCompletionMessageParam] = [{"role": "user", "content": "word " * 400}]
    with pytest.raises(openai.BadRequestError) as overflow:
        client.chat.completions.create(model="toy", messages=long)
    assert overflow.value.code == "context_length_exceeded"
    assert "maximum context length is 256 tokens" in overflow.value.message
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="toy", messages=MESSAGES, temperature=5)
    refusal = bad.value.body
    assert isinstance(refusal, dict)
    assert refusal["param"] == "temperature"
    assert refusal["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="toy", messages=cast(Any, [{"role": "wizard", "content": "x"}])
        )
    for path, body in (("/v1/nothing", None), ("/v1/chat/completions", b"not json")):
        request = urllib.request.Request(server.base_url.removesuffix("/v1") + path, data=body)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        error = json.loads(refused.value.read())["error"]
        assert set(error) == {"message", "type", "param", "code"}


def test_the_command_line_serves_and_refuses_bad_checkpoints(
    checkpoints: dict[str, Any], tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "training.serve", str(checkpoints["fresh"]), "--port", "0"]
    command += ["--threads", "1"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving step-00000000 at http://127.0.0.1:")
        base_url = line.split(" at ")[1].strip()
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        reply = client.chat.completions.create(
            model="step-00000000",
            messages=MESSAGES,
            max_tokens=5,
            seed=1,
        )
        assert reply.usage is not None and 1 <= reply.usage.completion_tokens <= 5
    finally:
        process.terminate()
        process.wait(timeout=10)
    (tmp_path / "torn").mkdir()  # a folder without the COMPLETE marker
    torn = [*command[:3], str(tmp_path / "torn")]
    done = subprocess.run(torn, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and "not a complete checkpoint" in done.stderr


@pytest.mark.slow
def test_cursorbench_run_scores_a_served_checkpoint(
    checkpoints: dict[str, Any], tmp_path: Path
) -> None:
    # A long context so the untrained model really answers turn after turn (it solves nothing).
    served = ServedModel.load(checkpoints["fresh"], "toy", context_length=8192, max_tokens=16)
    with ModelServer(served) as server:
        done = subprocess.run(
            [sys.executable, "-m", "cursorbench.cli.app", "run", "--base-url", server.base_url,
             "--model", "toy", "--suite", "smoke", "--tasks", "textkit-slugify",
             "--out", str(tmp_path / "run"), "--db", f"sqlite:///{tmp_path / 'lb.sqlite'}",
             "--max-retries", "0"],
            cwd=ROOT, capture_output=True, text=True, check=False, timeout=300,
            env=os.environ | {"CURSORBENCH_HOME": str(tmp_path / "home")},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [attempt] = [json.loads(line) for line in (tmp_path / "run" / "attempts.jsonl").open()]
    assert attempt["status"] == "failed" and attempt["failure"] is not None
    assert attempt["usage"]["model_calls"] >= 1 and attempt["usage"]["estimated_calls"] == 0
    assert attempt["usage"]["tokens_in"] > 2000  # the harness's prompt, counted by the server
