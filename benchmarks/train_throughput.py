"""Training throughput: tokens/s, step time and peak memory; Muon vs AdamW; MFU on a GPU.

Run:  .venv/bin/python benchmarks/train_throughput.py [--steps 10] [--write]
      .venv/bin/python benchmarks/train_throughput.py --device cuda [--compile] [--write]

CPU (default): the toy model, dense and MoE, each trained with Muon (+ AdamW for the rest, as
`build_optimizers` splits it) and with AdamW alone, on random tokens. Per case: tokens/s over
whole steps (forward, backward, optimizer), the optimizer step's own time, and peak memory.
Each case runs in a fresh subprocess so its peak RSS is its own; the figure reported is the
peak RSS growth from just after the model is built (activations, gradients, optimizer state).

CUDA (`--device cuda`): a ~110M-parameter dense model (d_model 768, 12 layers, vocab 16384,
seq 1024) under bf16 autocast, same two optimizers. Peak memory is
`torch.cuda.max_memory_allocated`; model FLOPs utilization is
tokens/s x `Transformer.flops_per_token(seq_len)` / the device's peak dense bf16 FLOP/s
(a table by device name, or `--peak-tflops`). The optimizer step (Newton-Schulz in float32)
counts in the step time but not in the model FLOPs, as MFU is usually defined.
`--write` appends the figures to benchmarks/RESULTS.md with date, machine and command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch

from training.model import ModelConfig, MoEConfig, Transformer, next_token_loss
from training.muon import build_optimizers

# Peak dense bf16 tensor FLOP/s (no sparsity), by a substring of torch.cuda.get_device_name().
PEAK_BF16_FLOPS = {
    "H200": 989e12,
    "H100": 989e12,  # SXM; the PCIe card is 756e12: pass --peak-tflops
    "A100": 312e12,
    "L40S": 362e12,
    "A10G": 70e12,
    "RTX 4090": 165e12,
}

TOY = {"vocab_size": 2048, "d_model": 128, "n_layers": 2, "n_heads": 4, "d_ff": 384}
GPU = {"vocab_size": 16384, "d_model": 768, "n_layers": 12, "n_heads": 12, "d_ff": 2048}
TOY_MOE = MoEConfig(n_experts=4, top_k=2, d_expert=256, every=2)


@dataclass
class Case:
    size: str  # "toy" or "gpu"
    moe: bool
    optimizer: str  # "muon" or "adamw"
    batch: int
    seq_len: int

    @property
    def name(self) -> str:
        return f"{self.size}-{'moe' if self.moe else 'dense'}-{self.optimizer}"

    def model_config(self) -> ModelConfig:
        sizes = TOY if self.size == "toy" else GPU
        moe = TOY_MOE if self.moe else None
        return ModelConfig(**sizes, max_seq_len=self.seq_len, moe=moe)


@dataclass
class Measurement:
    case: str
    parameters: int
    tokens_per_step: int
    step_ms: float
    optimizer_ms: float
    tokens_per_s: float
    peak_memory_mib: float
    mfu: float | None


def _rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_flops(device: torch.device, override_tflops: float | None) -> float | None:
    if override_tflops is not None:
        return override_tflops * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((flops for key, flops in PEAK_BF16_FLOPS.items() if key in name), None)


def measure(case: Case, args: argparse.Namespace) -> Measurement:
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = Transformer(case.model_config()).to(device)
    optimizers = build_optimizers(model, lr=1e-3, use_muon=case.optimizer == "muon")
    forward = torch.compile(model) if args.compile else model
    generator = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    batch = torch.randint(0, vocab, (case.batch, case.seq_len + 1), generator=generator)
    batch = batch.to(device)
    bf16 = args.bf16 if args.bf16 is not None else device.type == "cuda"
    baseline_rss = _rss_mib()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step() -> float:
        """One training step; returns the optimizer's own seconds."""
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            output = forward(batch[:, :-1])
            loss = next_token_loss(output.logits, batch[:, 1:], None)
            if output.aux_loss is not None:
                loss = loss + output.aux_loss
        loss.backward()
        _sync(device)
        started = time.perf_counter()
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        _sync(device)
        return time.perf_counter() - started

    for _ in range(args.warmup):
        step()
    _sync(device)
    started = time.perf_counter()
    optimizer_seconds = sum(step() for _ in range(args.steps))
    elapsed = time.perf_counter() - started

    tokens = case.batch * case.seq_len
    tokens_per_s = tokens * args.steps / elapsed
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2**20
    else:  # ru_maxrss is in KiB on Linux
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - baseline_rss
    flops = peak_flops(device, args.peak_tflops)
    mfu = tokens_per_s * model.flops_per_token(case.seq_len) / flops if flops else None
    return Measurement(
        case=case.name,
        parameters=model.num_parameters(),
        tokens_per_step=tokens,
        step_ms=1000 * elapsed / args.steps,
        optimizer_ms=1000 * optimizer_seconds / args.steps,
        tokens_per_s=tokens_per_s,
        peak_memory_mib=peak,
        mfu=mfu,
    )


def cases(args: argparse.Namespace) -> list[Case]:
    size = args.size or ("gpu" if args.device == "cuda" else "toy")
    batch = args.batch or (16 if size == "gpu" else 8)
    seq_len = args.seq_len or (1024 if size == "gpu" else 256)
    kinds = [False] if size == "gpu" else [False, True]
    return [Case(size, moe, opt, batch, seq_len) for moe in kinds for opt in ("muon", "adamw")]


def run_in_subprocess(case: Case, argv: list[str]) -> Measurement:
    command = [sys.executable, __file__, *argv, "--one", json.dumps(asdict(case))]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{case.name} failed: {done.stderr.strip().splitlines()[-1:]}")
    return Measurement(**json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--size", choices=["toy", "gpu"], help="default: toy on cpu, gpu on cuda")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq-len", type=int)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--peak-tflops", type=float, help="device peak bf16 TFLOP/s for MFU")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one case, print JSON
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available here")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.one:
        print(json.dumps(asdict(measure(Case(**json.loads(args.one)), args))))
        return

    argv = [a for a in sys.argv[1:] if a != "--write"]
    results = [run_in_subprocess(case, argv) for case in cases(args)]
    print(table(results))
    if args.write:
        write_results(results, args)


def table(results: list[Measurement]) -> str:
    lines = [
        "| case | params | tokens/step | step ms | optimizer ms | tokens/s | peak MiB | MFU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        mfu = f"{100 * r.mfu:.1f}%" if r.mfu is not None else "n/a"
        lines.append(
            f"| {r.case} | {r.parameters / 1e6:.2f}M | {r.tokens_per_step} | {r.step_ms:.1f} | "
            f"{r.optimizer_ms:.1f} | {r.tokens_per_s:,.0f} | {r.peak_memory_mib:.0f} | {mfu} |"
        )
    return "\n".join(lines)


def write_results(results: list[Measurement], args: argparse.Namespace) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    device = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor()
    memory = "torch.cuda.max_memory_allocated" if args.device == "cuda" else "peak RSS growth"
    text = f"""
## train_throughput — {now}

- machine: {platform.machine()} {device or ""}, {os.cpu_count()} cores, \
{args.threads or torch.get_num_threads()} torch thread(s), torch {torch.__version__}
- command: `.venv/bin/python benchmarks/train_throughput.py {" ".join(sys.argv[1:])}`
- peak memory column: {memory}

{table(results)}
"""
    path = Path(__file__).resolve().parent / "RESULTS.md"
    with path.open("a") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
