"""A sandbox-free environment for the pipeline's own checks and throughput figures: the task
is a prompt of token ids and a target id; the reward is the share of generated tokens equal
to the target. Fast enough that the loop, not the sandbox, is what a test or benchmark
measures; the harness environment (`training.rl.env.HarnessEnv`) is the real one.
"""

from __future__ import annotations

from dataclasses import dataclass

from training.rl.learner import Rollout
from training.rl.policy import Sampler


@dataclass(frozen=True)
class TargetTask:
    id: str
    prompt: list[int]
    target: int


@dataclass(frozen=True)
class TargetTokenEnv:
    max_tokens: int = 16

    def rollout(self, task: TargetTask, sampler: Sampler, group: int, seed: int) -> Rollout:
        segment = sampler.sample(task.prompt, self.max_tokens, stop_ids=set(), seed=seed)
        hits = sum(token == task.target for token in segment.tokens)
        reward = hits / len(segment.tokens)
        return Rollout(task.id, group, [segment], reward, {"hits": float(hits)})
