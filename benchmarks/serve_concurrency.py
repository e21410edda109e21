"""A short request behind a long one on the project's server (`training.serve`).

Run:  .venv/bin/python benchmarks/serve_concurrency.py [--long 1000] [--short 4] [--write]

A toy model (the tests' size: d_model 64, 2 layers, a tokenizer trained on `training/`) with
its final norm zeroed, so greedy decoding never emits a stop id and a long reply runs its
full length, is served over HTTP. Measured: the short request alone; the long one alone;
the short one sent once the long one is streaming (its latency, and how many of the long
reply's tokens were generated before the short one finished, counted server-side).

Before concurrent serving (issue 20) the short request waited for the whole long one
(3.4 s for a 4-token request behind a 1,000-token one); steps now interleave in arrival order.
"""

from __future__ import annotations

import argparse
import platform
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root
from training.generate import SamplingParams
from training.model import ModelConfig, Transformer
from training.serve import ModelServer, ServedModel
from training.tokenizer import train_tokenizer

MESSAGES: Any = [{"role": "user", "content": "Go on."}]


class Counting(ServedModel):
    """Counts the long reply's tokens server-side, and when it started."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.long_tokens = 0
        self.long_started = threading.Event()
        self.long_length = 0

    def tokens(self, prompt: list[int], params: SamplingParams) -> Iterator[int]:
        is_long = params.max_tokens == self.long_length
        for token in super().tokens(prompt, params):
            if is_long:
                self.long_tokens += 1
                self.long_started.set()
            yield token


def _served(long: int) -> Counting:
    root = Path(__file__).resolve().parents[1] / "training"
    tokenizer = train_tokenizer([p.read_text() for p in sorted(root.glob("*.py"))], 400)
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=tokenizer.vocab_size, d_model=64, n_layers=2, n_heads=4, d_ff=128
    )
    model = Transformer(config)
    with torch.no_grad():
        model.norm.weight.zero_()
    served = Counting(model, tokenizer, "toy", context_length=long + 200)
    served.long_length = long
    return served


def _ask(client: openai.OpenAI, tokens: int) -> float:
    started = time.perf_counter()
    client.chat.completions.create(model="toy", messages=MESSAGES, temperature=0, max_tokens=tokens)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--long", type=int, default=1000)
    parser.add_argument("--short", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="append to benchmarks/RESULTS.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    served = _served(args.long)
    with ModelServer(served) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=600)
        _ask(client, args.short)  # warm-up
        short_alone = _ask(client, args.short)
        long_alone = _ask(client, args.long)
        served.long_tokens = 0
        served.long_started.clear()
        worker = threading.Thread(target=_ask, args=(client, args.long))
        worker.start()
        served.long_started.wait(300)
        before = served.long_tokens
        short_behind = _ask(client, args.short)
        during = served.long_tokens - before
        worker.join()
    lines = [
        f"## serve_concurrency — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"`benchmarks/serve_concurrency.py --long {args.long} --short {args.short}` "
        f"({platform.machine()}, torch {torch.__version__}, {args.threads} thread(s), "
        "toy model d_model 64 x 2 layers, greedy, never stops)",
        "",
        "| measure | value |",
        "|---|---|",
        f"| {args.short}-token request alone | {short_alone * 1000:.1f} ms |",
        f"| {args.long}-token request alone | {long_alone * 1000:.0f} ms |",
        f"| {args.short}-token request while the long one streams | {short_behind * 1000:.1f} ms |",
        f"| long reply's tokens generated meanwhile | {during} of {args.long} |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        results = Path(__file__).resolve().parent / "RESULTS.md"
        results.write_text(results.read_text().rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    main()
