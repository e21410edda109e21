"""RL pipeline throughput: rollouts/s, learner tokens/s and learner idle share, with and
without in-flight updates.

Run:  .venv/bin/python benchmarks/rl_throughput.py [--steps 6] [--workers 2] [--write]
      .venv/bin/python benchmarks/rl_throughput.py --env harness [--steps 3]
      .venv/bin/python benchmarks/rl_throughput.py --executor ray   # workers as Ray actors

`--env toy` (default): the sandbox-free target-token environment (`training.rl.toy_env`),
so the figures are the pipeline's (sampling, learning, delta sync), on a toy MoE policy.
`--env harness`: micro-task attempts through the harness (sandbox, pytest, graders) with
the micro-task policy warm-started, the same loop `python -m training.rl run` drives.

Per mode: `inflight` keeps `max_lag + 1` steps of groups submitted and pushes each delta
mid-rollout; `sync` submits a step's groups, waits for all, trains, pushes (lag 0).
Learner idle share is the part of the wall time the learner spent waiting for rollouts.
Learner tokens/s counts trained tokens over the learner's busy time (forward, backward,
optimizer, delta encoding). `--write` appends the table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from training.model import ModelConfig, MoEConfig, Transformer
from training.rl.learner import Learner, LearnerConfig
from training.rl.orchestrator import LoopStats, Orchestrator
from training.rl.toy_env import TargetTask, TargetTokenEnv
from training.rl.workers import ProcessWorker, RolloutWorker, WorkerSpec

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _toy_setup(max_tokens: int) -> tuple[Transformer, Any, list[Any], LearnerConfig]:
    torch.manual_seed(0)
    moe = MoEConfig(n_experts=4, top_k=2, d_expert=64, every=2)
    config = ModelConfig(vocab_size=64, d_model=64, n_layers=2, n_heads=4, d_ff=128, moe=moe)
    tasks = [TargetTask(f"t{i}", [1 + i, 2, 3, 4, 5, 6], target=10 + i) for i in range(4)]
    learner = LearnerConfig(group_size=4, max_tokens=max_tokens, lr=1e-2)
    return Transformer(config), TargetTokenEnv(max_tokens), tasks, learner


def _harness_setup(root: Path) -> tuple[Transformer, Any, list[Any], LearnerConfig]:
    os.environ.setdefault("CURSORBENCH_HOME", str(root / "home"))
    from training.rl.env import HarnessEnv
    from training.rl.microtasks import build_micro_tasks
    from training.rl.warmstart import micro_model, micro_tokenizer, warm_start
    from training.serve import TOKENIZER_FILE

    tokenizer = micro_tokenizer()
    tokenizer.save(root / TOKENIZER_FILE)
    model = micro_model(tokenizer)
    warm_start(model, tokenizer, 120)
    env = HarnessEnv(root / TOKENIZER_FILE, root / "rollouts", 1536, 96, "auto")
    tasks = [t.task for t in build_micro_tasks(root / "micro")]
    return model, env, tasks, LearnerConfig(group_size=4, max_tokens=96, lr=2e-3)


def measure(args: argparse.Namespace, inflight: bool, root: Path) -> LoopStats:
    if args.env == "toy":
        model, env, tasks, config = _toy_setup(args.max_tokens)
    else:
        model, env, tasks, config = _harness_setup(root)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    spec = WorkerSpec(model.config.to_dict(), state, 0, env, inflight)
    workers = [_worker(args.executor, spec) for _ in range(args.workers)]
    try:
        learner = Learner(model, config)
        loop = Orchestrator(learner, workers, tasks, args.groups, args.max_lag, inflight)
        loop.run(1)  # warm-up: workers import torch and build their model
        loop.stats = LoopStats()
        return loop.run(args.steps)
    finally:
        for worker in workers:
            worker.close()


def _worker(executor: str, spec: WorkerSpec) -> RolloutWorker:
    if executor == "ray":
        from training.rl.ray_workers import RayWorker

        return RayWorker(spec)  # a local cluster, started on first use
    return ProcessWorker(spec)


def _row(mode: str, stats: LoopStats) -> str:
    tokens = sum(s.tokens for s in stats.steps)
    lags = Counter(stats.lags)
    lag_text = ", ".join(f"{k}: {v}" for k, v in sorted(lags.items()))
    ratio = stats.sync_bytes / max(stats.full_bytes, 1)
    return (
        f"| {mode} | {stats.rollouts / stats.wall_s:.2f} | {tokens / stats.learner_busy_s:,.0f} "
        f"| {stats.learner_idle_share:.0%} | {lag_text} | {stats.mixed_version_segments} "
        f"| {stats.dropped_groups} | {ratio:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", choices=["toy", "harness"], default="toy")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--groups", type=int, default=2, help="groups per learner step")
    parser.add_argument("--max-lag", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--executor", choices=["processes", "ray"], default="processes")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    header = (
        "| mode | rollouts/s | learner tokens/s | learner idle | token lags (lag: count) "
        "| segments spanning an update | dropped groups | delta bytes / full |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for inflight in (True, False):
            stats = measure(args, inflight, Path(folder) / ("inflight" if inflight else "sync"))
            rows.append(_row("in-flight" if inflight else "sync", stats))
            print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    text = (
        f"\n## RL throughput ({args.env} environment, {args.executor} workers) — "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n\n"
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, load average {load:.1f} "
        f"at the end; command: `benchmarks/rl_throughput.py --env {args.env} --steps "
        f"{args.steps} --workers {args.workers} --groups {args.groups} --max-lag {args.max_lag} "
        f"--executor {args.executor}`"
        f"\n\n{header}\n" + "\n".join(rows) + "\n"
    )
    print(text)
    if args.write:
        with RESULTS.open("a") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
