"""Rollout workers as Ray actors behind the `RolloutWorker` protocol, on a local cluster:
synchronous RL through them trains the very weights process workers train (a job that
overtook the delta sent before it would sample at an older version, and the weights would
differ), and with in-flight updates the observed lag stays within the bound."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch

from training.model import Transformer
from training.rl.learner import Learner, LearnerConfig
from training.rl.orchestrator import LoopStats, Orchestrator
from training.rl.toy_env import TargetTokenEnv
from training.rl.workers import ProcessWorker, RolloutWorker, WorkerSpec

from .test_async_pipeline import TASKS, moe_policy

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a local Ray cluster: ~35 s here, with the exclusive phase's tests


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    from harness.run.ray_executor import start_or_join

    start_or_join(None, num_cpus=2)
    yield
    ray.shutdown()


def _train(kind: str, inflight: bool, steps: int) -> tuple[Transformer, LoopStats]:
    from training.rl.ray_workers import RayWorker

    model = moe_policy()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    spec = WorkerSpec(model.config.to_dict(), state, 0, TargetTokenEnv(12), inflight)
    make: Any = RayWorker if kind == "ray" else ProcessWorker
    workers: list[RolloutWorker] = [make(spec) for _ in range(2)]
    config = LearnerConfig(group_size=4, max_tokens=12, lr=1e-2)
    try:
        loop = Orchestrator(Learner(model, config), workers, TASKS, 2, 1, inflight)
        stats = loop.run(steps)
    finally:
        for worker in workers:
            worker.close()
    return model, stats


def test_synchronous_rl_on_ray_actors_trains_what_processes_train(local_cluster: None) -> None:
    on_ray, ray_stats = _train("ray", inflight=False, steps=3)
    on_processes, process_stats = _train("processes", inflight=False, steps=3)
    assert set(ray_stats.lags) == {0} and ray_stats.rollouts == process_stats.rollouts == 24
    for name, value in on_processes.state_dict().items():
        assert torch.equal(on_ray.state_dict()[name], value), name


def test_inflight_rl_on_ray_actors_keeps_the_lag_bound(local_cluster: None) -> None:
    _, stats = _train("ray", inflight=True, steps=6)
    assert max(stats.lags) <= 1 and len(stats.steps) == 6
    assert stats.rollouts + 4 * stats.dropped_groups >= 6 * 8
