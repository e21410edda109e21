"""The asynchronous loop: workers generate while the learner trains.

With `inflight`, up to `max_lag + 1` steps' worth of groups are kept submitted, so workers
never wait for the learner; after each step the delta goes to every worker and applies
mid-rollout. A group whose oldest token is more than `max_lag` versions behind the learner
when its step comes is dropped (counted in `dropped_groups`), so the observed lag never
exceeds the bound. Without `inflight` the loop is synchronous: submit a step's groups, wait
for all of them, train, push (lag 0, and generation stops while the learner works).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from training.rl.learner import Learner, Rollout, StepMetrics
from training.rl.workers import Finished, Job, RolloutWorker

OnStep = Callable[[StepMetrics, list[Rollout]], None]


@dataclass
class LoopStats:
    steps: list[StepMetrics] = field(default_factory=list)
    rollouts: int = 0
    dropped_groups: int = 0
    lags: list[int] = field(default_factory=list)  # per trained token: learner - token version
    mixed_version_segments: int = 0  # segments whose tokens span an in-flight update
    learner_busy_s: float = 0.0
    wall_s: float = 0.0
    sync_bytes: int = 0
    full_bytes: int = 0

    @property
    def learner_idle_share(self) -> float:
        return 1.0 - self.learner_busy_s / self.wall_s if self.wall_s else 0.0


class Orchestrator:
    def __init__(
        self,
        learner: Learner,
        workers: Sequence[RolloutWorker],
        tasks: Sequence[Any],
        groups_per_step: int,
        max_lag: int = 1,
        inflight: bool = True,
        seed: int = 0,
    ) -> None:
        self.learner = learner
        self.workers = list(workers)
        self.tasks = list(tasks)
        self.groups_per_step = groups_per_step
        self.max_lag = max_lag
        self.inflight = inflight
        self.group_size = learner.config.group_size
        self._ids = itertools.count()
        self._groups = itertools.count(seed * 10**6)
        self._next_task = itertools.cycle(range(len(self.tasks)))
        self._round_robin = itertools.cycle(range(len(self.workers)))
        self._pending: dict[int, list[Finished]] = {}
        self._order: list[int] = []  # groups in submission order
        self.stats = LoopStats()

    def _submit_group(self) -> None:
        group = next(self._groups)
        task = self.tasks[next(self._next_task)]
        self._pending[group] = []
        self._order.append(group)
        for member in range(self.group_size):
            job = Job(next(self._ids), task, group, seed=group * 100 + member)
            self.workers[next(self._round_robin)].submit(job)

    def _ready(self) -> list[int]:
        return [g for g in self._order if len(self._pending[g]) == self.group_size]

    def _collect(self, needed: int) -> list[int]:
        while len(self._ready()) < needed:
            for worker in self.workers:
                for finished in worker.poll(timeout=0.01):
                    self._pending[finished.job.group].append(finished)
        return self._ready()[:needed]

    def _take(self, groups: list[int]) -> list[Rollout]:
        rollouts: list[Rollout] = []
        for group in groups:
            self._order.remove(group)
            members = sorted(self._pending.pop(group), key=lambda f: f.job.id)
            batch = [f.rollout for f in members]
            oldest = min(v for r in batch for v in r.versions)
            if self.learner.version - oldest > self.max_lag:
                self.stats.dropped_groups += 1
                continue
            rollouts.extend(batch)
        return rollouts

    def run(self, steps: int, on_step: OnStep | None = None) -> LoopStats:
        started = time.perf_counter()
        ahead = self.max_lag + 1 if self.inflight else 1
        for _ in range(self.groups_per_step * ahead):
            self._submit_group()
        done = 0
        while done < steps:
            rollouts = self._take(self._collect(self.groups_per_step))
            if self.inflight:  # refill at once: workers keep generating during the step
                while len(self._order) < self.groups_per_step * ahead:
                    self._submit_group()
            if not rollouts:
                continue
            self._record(rollouts)
            busy = time.perf_counter()
            metrics = self.learner.step(rollouts)
            delta = self.learner.delta()
            metrics.sync_bytes, metrics.sync_ratio = delta.nbytes, delta.byte_ratio
            self.stats.learner_busy_s += time.perf_counter() - busy
            self.stats.sync_bytes += delta.nbytes
            self.stats.full_bytes += delta.full_bytes
            for worker in self.workers:
                worker.push(delta)
            if not self.inflight and done + 1 < steps:  # the next step's groups, at the new version
                for _ in range(self.groups_per_step):
                    self._submit_group()
            self.stats.steps.append(metrics)
            if on_step is not None:
                on_step(metrics, rollouts)
            done += 1
        self.stats.wall_s = time.perf_counter() - started
        return self.stats

    def _record(self, rollouts: list[Rollout]) -> None:
        self.stats.rollouts += len(rollouts)
        for rollout in rollouts:
            for segment in rollout.segments:
                self.stats.lags.extend(self.learner.version - v for v in segment.versions)
                self.stats.mixed_version_segments += len(set(segment.versions)) > 1
