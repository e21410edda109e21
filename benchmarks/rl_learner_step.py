"""The RL learner's step at the micro-tasks' shape: wall time of one `Learner.step`.

32 rollouts of two segments each (an edit call of 45 tokens after an 850-token context, a
4-token closing reply after 900), the micro-task policy (2 layers, d_model 64, ~1,000-token
vocabulary), a reference for the KL penalty and `kl_ref`, and the KL-bounded step, as
`tests/training/rl/test_rl_learns.py` runs it. One thread, as the RL run sets.

    .venv/bin/python benchmarks/rl_learner_step.py [--repeats 3] [--no-bound]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from training.rl.learner import Learner, LearnerConfig, Rollout
from training.rl.policy import Sampler
from training.rl.warmstart import micro_model, micro_tokenizer


def rollouts(sampler: Sampler, vocab: int) -> list[Rollout]:
    made = []
    for index in range(32):
        edit = sampler.sample([5 + j % (vocab - 5) for j in range(850)], 45, set(), index)
        done = sampler.sample([5 + j % (vocab - 5) for j in range(900)], 4, set(), index)
        made.append(Rollout("t", index // 8, [edit, done], float(index % 3)))
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-bound", action="store_true", help="without max_step_kl")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = micro_tokenizer()
    model = micro_model(tokenizer)
    batch = rollouts(Sampler(model), tokenizer.vocab_size)
    bound = None if args.no_bound else 0.01
    config = LearnerConfig(group_size=8, max_tokens=96, lr=1e-3, beta=0.05, max_step_kl=bound)
    learner = Learner(model, config, copy.deepcopy(model).eval())
    times = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        learner.step(batch)
        times.append(time.perf_counter() - started)
    print(f"learner step: median {statistics.median(times):.2f} s over {args.repeats} "
          f"({', '.join(f'{t:.2f}' for t in times)})")  # fmt: skip


if __name__ == "__main__":
    main()
