"""Held-out scores without sampling noise: a policy's mean reward and best-of-k as exact sums
over the distinct trajectories seen, each graded by the harness.

A trajectory is what the policy wrote in each model call of an attempt and what it saw
before each (the tool results come from the harness, fixed by the replies before them),
so its probability under any policy is the product of its segments' teacher-forced
probabilities. Its reward is the harness's verdict on the attempt that produced it. Over a
pool of trajectories per task, a policy's expected reward is `sum p_i * r_i`, and its
best-of-k is the expected maximum of k draws from that distribution, with the mass on
trajectories never seen (`1 - sum p_i`) counted at reward 0. Rewards are never negative,
so both are lower bounds, and `covered` (the mass the pool holds) says how tight they are.

Two policies scored on one pool (a checkpoint and its step-0 weights, the pool being the
trajectories both wrote on the held-out tasks) differ only where their weights differ: the
comparison has no sampling noise, where sampled scores at the sample counts a test can
afford swing by more than the rise they are meant to show (`benchmarks/RESULTS.md`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from training.model import Transformer
from training.rl.learner import Rollout
from training.rl.policy import Segment, segment_logprobs

Steps = tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]  # per segment: (context, tokens)


@dataclass(frozen=True)
class Trajectory:
    task_id: str
    steps: Steps
    reward: float


@dataclass(frozen=True)
class ExactScore:
    mean_reward: float  # lower bounds, averaged over tasks
    best_of_k: float
    covered: float  # the probability mass the pool holds, averaged over tasks
    trajectories: int


def distinct(found: Iterable[Trajectory]) -> list[Trajectory]:
    """Each trajectory once (a task's same steps), with the reward first seen, in order."""
    seen: dict[tuple[str, Steps], Trajectory] = {}
    for trajectory in found:
        seen.setdefault((trajectory.task_id, trajectory.steps), trajectory)
    return list(seen.values())


def trajectories(rollouts: Iterable[Rollout]) -> list[Trajectory]:
    """The distinct trajectories of `rollouts`, in the order first seen."""
    return distinct(
        Trajectory(
            r.task_id, tuple((tuple(s.context), tuple(s.tokens)) for s in r.segments), r.reward
        )
        for r in rollouts
    )


@torch.no_grad()
def log_probability(model: Transformer, trajectory: Trajectory) -> float:
    segments = [
        Segment(context=list(context), tokens=list(tokens), logprobs=[], versions=[])
        for context, tokens in trajectory.steps
    ]
    logp, mask = segment_logprobs(model.eval(), segments, replay_routes=False)
    return float((logp * mask).sum())


def best_of_k(probabilities: list[float], rewards: list[float], k: int) -> float:
    """The expected best of `k` independent draws from the distribution that puts
    `probabilities` on `rewards` and the rest of the mass on reward 0."""
    mass: dict[float, float] = {0.0: max(0.0, 1.0 - sum(probabilities))}
    for p, r in zip(probabilities, rewards, strict=True):
        mass[r] = mass.get(r, 0.0) + p
    expected, below = 0.0, 0.0
    for reward in sorted(mass):
        upto = min(1.0, below + mass[reward])
        expected += reward * (upto**k - below**k)
        below = upto
    return expected


def exact_score(model: Transformer, pool: list[Trajectory], k: int) -> ExactScore:
    by_task: dict[str, list[Trajectory]] = {}
    for trajectory in pool:
        by_task.setdefault(trajectory.task_id, []).append(trajectory)
    if not by_task:
        raise ValueError("no trajectories to score")
    means, bests, covered = [], [], []
    for found in by_task.values():
        probabilities = [math.exp(log_probability(model, t)) for t in found]
        rewards = [t.reward for t in found]
        means.append(sum(p * r for p, r in zip(probabilities, rewards, strict=True)))
        bests.append(best_of_k(probabilities, rewards, k))
        covered.append(sum(probabilities))
    tasks = len(by_task)
    return ExactScore(sum(means) / tasks, sum(bests) / tasks, sum(covered) / tasks, len(pool))


def save_pool(path: Path, pool: list[Trajectory]) -> None:
    """Appends `pool` to a JSON-lines file (trajectories already there are kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        for t in pool:
            steps = [[list(context), list(tokens)] for context, tokens in t.steps]
            handle.write(json.dumps({"task_id": t.task_id, "steps": steps, "reward": t.reward}))
            handle.write("\n")


def load_pool(path: Path) -> list[Trajectory]:
    """The distinct trajectories saved in `path` (the first reward of each kept)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return distinct(
        Trajectory(
            row["task_id"], tuple((tuple(c), tuple(t)) for c, t in row["steps"]), row["reward"]
        )
        for row in rows
    )
