"""Muon vs AdamW: optimizer steps to a fixed held-out loss on the same tiny model and data.

Run:  .venv/bin/python benchmarks/muon_vs_adamw.py [--seeds 0 1 2] [--target-loss 4.6] [--write]

Data: a byte-level BPE trained on top-level standard-library modules, the files packed into
windows, every tenth file held out (`benchmarks/toy_code_data.py`). Model: the toy dense
transformer. Both runs of a seed share the initial weights and the batch order; "Muon" is
`build_optimizers(model, ...)` (Muon for hidden matrices, AdamW for embeddings, head, norms),
"AdamW" is AdamW on everything with the same decay rules. Held-out loss is evaluated every
`--eval-every` steps on a fixed slice of the held-out windows; a run's figure is the first
evaluated step at or below `--target-loss`. The ratio is AdamW steps / Muon steps (mean over
seeds); above 1 means Muon gets there in fewer steps.
`--write` appends the figures to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from training.model import ModelConfig, Transformer, next_token_loss
from training.muon import build_optimizers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root
from benchmarks.toy_code_data import PackedCode, batches, packed_stdlib


def toy_config(vocab_size: int, d_model: int, seq_len: int) -> ModelConfig:
    return ModelConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        n_layers=2,
        n_heads=4,
        d_ff=3 * d_model,
        max_seq_len=seq_len,
    )


@torch.no_grad()
def held_out_loss(model: Transformer, windows: torch.Tensor) -> float:
    model.eval()
    losses = [
        next_token_loss(model(chunk[:, :-1]).logits, chunk[:, 1:], None).item()
        for chunk in windows.split(32)
    ]
    model.train()
    return statistics.fmean(losses)


def steps_to_target(
    data: PackedCode, args: argparse.Namespace, seed: int, use_muon: bool
) -> tuple[int | None, list[tuple[int, float]]]:
    """First evaluated step whose held-out loss <= target (None if never), and the curve."""
    torch.manual_seed(seed)
    model = Transformer(toy_config(data.tokenizer.vocab_size, args.d_model, args.seq_len))
    lr = args.lr if use_muon else args.adamw_lr
    optimizers = build_optimizers(model, lr=lr, weight_decay=args.weight_decay, use_muon=use_muon)
    held_out = data.held_out[: args.eval_windows]
    curve: list[tuple[int, float]] = []
    stream = batches(data.train, args.batch, seed)
    for step in range(1, args.max_steps + 1):
        batch = next(stream)
        loss = next_token_loss(model(batch[:, :-1]).logits, batch[:, 1:], None)
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss.backward()
        for optimizer in optimizers:
            optimizer.step()
        if step % args.eval_every == 0:
            curve.append((step, held_out_loss(model, held_out)))
            if curve[-1][1] <= args.target_loss:
                return step, curve
    return None, curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--target-loss", type=float, default=4.6)
    parser.add_argument("--max-steps", type=int, default=600)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--eval-windows", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3, help="Muon run (both optimizers)")
    parser.add_argument("--adamw-lr", type=float, default=3e-3, help="AdamW-only run")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    started = time.time()
    data = packed_stdlib(seq_len=args.seq_len)
    print(
        f"data: {data.train.shape[0]} train / {data.held_out.shape[0]} held-out windows of "
        f"{args.seq_len + 1} tokens, vocab {data.tokenizer.vocab_size}"
    )
    results: dict[str, list[int | None]] = {"muon": [], "adamw": []}
    for seed in args.seeds:
        for name in ("muon", "adamw"):
            steps, curve = steps_to_target(data, args, seed, use_muon=name == "muon")
            results[name].append(steps)
            tail = ", ".join(f"{s}:{loss:.3f}" for s, loss in curve[-3:])
            print(f"seed {seed} {name:5s}: steps to {args.target_loss} = {steps}  (last: {tail})")
    elapsed = time.time() - started

    reached = all(s is not None for runs in results.values() for s in runs)
    ratio = None
    if reached:
        ratio = statistics.fmean(results["adamw"]) / statistics.fmean(results["muon"])  # type: ignore[arg-type]
        print(f"AdamW / Muon steps ratio: {ratio:.2f}  ({elapsed:.0f} s)")
    else:
        print(f"not every run reached {args.target_loss} in {args.max_steps} steps")
    if args.write:
        write_results(args, results, ratio, elapsed)


def write_results(
    args: argparse.Namespace,
    results: dict[str, list[int | None]],
    ratio: float | None,
    elapsed: float,
) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(["benchmarks/muon_vs_adamw.py", *sys.argv[1:]])
    rows = "\n".join(
        f"| {seed} | {muon} | {adamw} |"
        for seed, muon, adamw in zip(args.seeds, results["muon"], results["adamw"], strict=True)
    )
    ratio_text = f"{ratio:.2f}" if ratio is not None else "n/a (a run missed the target)"
    text = f"""
## muon_vs_adamw — {now}

- machine: {platform.machine()}, {torch.get_num_threads()} torch thread(s), Python \
{platform.python_version()}, torch {torch.__version__}
- command: `.venv/bin/python {command}` ({elapsed:.0f} s)
- model: d_model {args.d_model}, 2 layers, seq {args.seq_len}, batch {args.batch}; \
lr Muon run {args.lr}, AdamW run {args.adamw_lr}; weight decay {args.weight_decay}

| seed | Muon steps to held-out loss {args.target_loss} | AdamW steps |
|---|---|---|
{rows}

AdamW / Muon steps ratio (mean over seeds): **{ratio_text}**
"""
    path = Path(__file__).resolve().parent / "RESULTS.md"
    with path.open("a") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
