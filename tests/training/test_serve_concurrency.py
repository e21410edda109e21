"""The project's server answers concurrent requests: steps interleave in arrival order, so a
short request finishes while a long one is still generating (checked by order, not time), and
both replies are what each request gets alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import openai
import pytest
import torch
from openai.types.chat import ChatCompletionMessageParam

from training.checkpoint import load_model
from training.generate import SamplingParams
from training.serve import FairTurns, ModelServer, ServedModel

from .conftest import save_servable

LONG = 1500
MESSAGES = cast(list[ChatCompletionMessageParam], [{"role": "user", "content": "Go on."}])


class RecordingModel(ServedModel):
    """The real served model, noting server-side when each request's generation starts and
    ends (the client reads a long stream more slowly than a tiny model writes it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.long_started = threading.Event()
        self.finished: list[str] = []

    def tokens(self, prompt: list[int], params: SamplingParams) -> Iterator[int]:
        label = "long" if params.max_tokens == LONG else "short"
        for index, token in enumerate(super().tokens(prompt, params)):
            if index == 0 and label == "long":
                self.long_started.set()
            yield token
        self.finished.append(label)


@pytest.fixture(scope="module")
def server(
    checkpoints: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ModelServer]:
    # a model that never stops: the final norm zeroed, every logit is 0 and greedy decoding
    # picks id 0 (padding, not a stop id) at every step, computing the whole network each time
    model = load_model(Path(checkpoints["fresh"]))
    with torch.no_grad():
        model.norm.weight.zero_()
    folder = save_servable(tmp_path_factory.mktemp("endless"), model, checkpoints["tokenizer"], 0)
    # served far past the length it was built for: only the room for a long reply matters here
    served = RecordingModel.load(folder, name="toy", context_length=LONG + 200)
    with ModelServer(served) as running:
        yield running


def _client(server: ModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=600)


def test_a_short_request_is_not_stuck_behind_a_long_one(server: ModelServer) -> None:
    served = server.served
    assert isinstance(served, RecordingModel)
    long_reply: dict[str, Any] = {}

    def long_request() -> None:
        stream = _client(server).chat.completions.create(
            model="toy",
            messages=MESSAGES,
            temperature=0,
            max_tokens=LONG,
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            if chunk.usage is not None:
                long_reply["tokens"] = chunk.usage.completion_tokens
            if chunk.choices and chunk.choices[0].finish_reason:
                long_reply["finish"] = chunk.choices[0].finish_reason

    worker = threading.Thread(target=long_request)
    worker.start()
    assert served.long_started.wait(300)  # the server is generating the long reply now
    short = _client(server).chat.completions.create(
        model="toy", messages=MESSAGES, temperature=0, max_tokens=2
    )
    worker.join(600)
    assert served.finished == ["short", "long"]
    assert short.usage is not None and short.usage.completion_tokens == 2
    # the long one was not cut short to let the other through
    assert long_reply == {"tokens": LONG, "finish": "length"}
    # interleaving changes nothing in what is generated: greedy replies equal a lone request
    alone = _client(server).chat.completions.create(
        model="toy", messages=MESSAGES, temperature=0, max_tokens=2
    )
    assert alone.choices[0].message.content == short.choices[0].message.content


def test_fair_turns_are_granted_in_arrival_order() -> None:
    turns = FairTurns()
    order: list[int] = []
    turns.__enter__()  # held: the threads below queue up behind it
    arrived: list[threading.Event] = []
    threads = []
    for index in range(5):
        ready = threading.Event()

        def take(index: int = index, ready: threading.Event = ready) -> None:
            ready.set()
            with turns:
                order.append(index)

        thread = threading.Thread(target=take)
        thread.start()
        ready.wait()
        # wait until the thread holds its ticket (it is blocked inside __enter__)
        while turns._next_ticket < index + 2:
            threading.Event().wait(0.001)
        arrived.append(ready)
        threads.append(thread)
    turns.__exit__(None, None, None)
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2, 3, 4]
