"""Did an RL run rise above its flat twin? The paired comparison of held-out rewards.

A checkpoint and its flat twin (the run's step-0 weights) are scored on the same held-out
tasks with the same sampling seeds (`training.rl.run.held_out_score`, `flat_twin`). The
sampler draws each token with `torch.multinomial(p, 1)`, which takes the argmax of `p / e`
over one vector of exponential noise per position, so two policies given one seed share
that noise (a coupling: with a slightly moved distribution about 95% of draws are the same
token, against 5% for independent seeds on a 50-token vocabulary). Where the checkpoint
writes what the twin writes, the two rewards are equal; the per-sample difference is
therefore mostly the policy's change, not sampling noise, and is the measure here.

The interval is a percentile bootstrap over the samples (within each task, every task
kept): it is conditional on the weights this run learned, so it answers "did this run's
checkpoint beat its twin", not "does RL rise from any seed"; that is told by how many
training seeds rise (`benchmarks/rl_rise.py`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Rise:
    samples: int
    trained: float  # mean held-out reward of the checkpoint
    flat: float  # of its flat twin, at the same seeds
    difference: float
    low: float  # the bootstrap interval of the difference
    high: float
    improved: int  # samples whose reward rose
    worsened: int

    @property
    def rose(self) -> bool:
        """The interval lies above zero."""
        return self.low > 0


def paired_rise(
    trained: list[float],
    flat: list[float],
    tasks: int = 1,
    level: float = 0.95,
    draws: int = 4000,
    seed: int = 0,
) -> Rise:
    """The paired difference of per-sample rewards (`tasks` equal blocks of samples, in
    the order `held_out_score` lists them) with its bootstrap interval at `level`."""
    if len(trained) != len(flat) or not trained or len(trained) % tasks:
        raise ValueError(f"{len(trained)} and {len(flat)} rewards for {tasks} tasks: not paired")
    diffs = [a - b for a, b in zip(trained, flat, strict=True)]
    per_task = len(diffs) // tasks
    blocks = [diffs[at : at + per_task] for at in range(0, len(diffs), per_task)]
    rng = random.Random(seed)
    means = sorted(
        sum(sum(rng.choices(block, k=per_task)) for block in blocks) / len(diffs)
        for _ in range(draws)
    )
    tail = (1 - level) / 2
    return Rise(
        samples=len(diffs),
        trained=sum(trained) / len(trained),
        flat=sum(flat) / len(flat),
        difference=sum(diffs) / len(diffs),
        low=means[int(tail * (draws - 1))],
        high=means[int((1 - tail) * (draws - 1))],
        improved=sum(d > 0 for d in diffs),
        worsened=sum(d < 0 for d in diffs),
    )
