"""Does RL through the harness raise the held-out reward above its flat twin, seed by seed?

For each seed: the warm start (cached by content hash), an RL run on the one-operation
micro-task level, its last checkpoint scored on the held-out wording, and the flat twin (the
run's step-0 weights, lr 0) scored with the very same held-out sampling seeds; the paired
difference sample by sample (`training.rl.rise.paired_rise`, the draws coupled by the
shared seeds) is the learning, not the sampling noise. Every rollout is a harness attempt.

    python benchmarks/rl_rise.py --out /tmp/rl-rise --seeds 0 1 2 3 --steps 8 --lr 5e-4 --beta 0.05
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from training.rl.learner import LearnerConfig
from training.rl.microtasks import HELD_OUT_WORDINGS
from training.rl.rise import paired_rise
from training.rl.run import RLConfig, exact_rise, flat_twin, run_rl


def one_seed(args: argparse.Namespace, seed: int) -> dict[str, object]:
    config = RLConfig(
        out=args.out / f"seed{seed}",
        steps=args.steps,
        groups_per_step=args.groups,
        workers=2,
        inflight=not args.sync,
        checkpoint_every=args.steps,
        warm_start_steps=args.warm_start_steps,
        warm_start_cache=args.out / "warm-starts",
        held_out_samples=args.held_out_samples,
        held_out_k=2,
        operations=["sum"],
        seed=seed,
        learner=LearnerConfig(
            group_size=8,
            max_tokens=96,
            lr=args.lr,
            beta=args.beta,
            adam_eps=args.adam_eps,
            max_step_kl=args.max_step_kl,
        ),
    )
    started = time.perf_counter()
    steps = run_rl(config, lambda _line: None)
    wall = time.perf_counter() - started
    lines = (config.out / "metrics.jsonl").read_text().splitlines()
    checkpoints = {r["version"]: r for r in map(json.loads, lines) if r["kind"] == "checkpoint"}
    flat = flat_twin(config, [args.steps])[args.steps]
    last = checkpoints[args.steps]
    exact = exact_rise(config, [0, args.steps])  # on every held-out trajectory sampled
    held_tasks = len(HELD_OUT_WORDINGS)  # one task per held-out wording, `operations: [sum]`
    rise = paired_rise(last["held_out_rewards"], flat["held_out_rewards"], held_tasks)
    return {
        "seed": seed,
        "reference_p_0": round(checkpoints[0]["held_out_reference_p"], 4),
        "reference_p_rl": round(last["held_out_reference_p"], 4),
        "exact_reward_0_rl": [round(exact[v].mean_reward, 4) for v in (0, args.steps)],
        "exact_best_of_2_0_rl": [round(exact[v].best_of_k, 4) for v in (0, args.steps)],
        "exact_covered_0_rl": [round(exact[v].covered, 3) for v in (0, args.steps)],
        "held_out_0": checkpoints[0]["held_out_reward"],
        "held_out_rl": last["held_out_reward"],
        "held_out_flat": flat["held_out_reward"],
        "best_of_2_rl": last["held_out_best_of_k"],
        "best_of_2_flat": flat["held_out_best_of_k"],
        "train_rewards": [round(s["mean_reward"], 3) for s in steps],
        "max_kl_ref": max(s["kl_ref"] for s in steps),
        "step_lr": [s["step_lr"] for s in steps],
        "paired_difference": round(rise.difference, 3),
        "interval_95": [round(rise.low, 3), round(rise.high, 3)],
        "improved_worsened": [rise.improved, rise.worsened],
        "rose": rise.rose,
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--groups", type=int, default=4, help="groups of 8 per step")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--adam-eps", type=float, default=1e-8)
    parser.add_argument("--max-step-kl", type=float, default=None)
    parser.add_argument("--warm-start-steps", type=int, default=300)
    parser.add_argument("--sync", action="store_true", help="no in-flight updates (lag 0)")
    parser.add_argument("--held-out-samples", type=int, default=16, help="per held-out task")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for seed in args.seeds:
        print(json.dumps(one_seed(args, seed)), flush=True)


if __name__ == "__main__":
    main()
