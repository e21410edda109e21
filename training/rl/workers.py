"""Rollout workers behind a small protocol, so processes here and Ray actors on a cluster
stand behind the same calls: `submit` a job, `push` a weight delta, `poll` finished rollouts.

`ProcessWorker` runs a sampler and an environment in a child process. Jobs and deltas share
one inbox, so their order is kept: a job submitted after the delta to version v is sampled
at version v or later. With `inflight`, the child applies every delta that has arrived
between two tokens (generation never stops for an update); without, only between rollouts.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from training.model import ModelConfig, Transformer
from training.rl.env import Environment
from training.rl.learner import Rollout
from training.rl.policy import Sampler
from training.weight_sync import Delta, apply_delta


@dataclass(frozen=True)
class Job:
    id: int
    task: Any  # what the environment attempts (a `PreparedTask` for the harness)
    group: int
    seed: int


@dataclass(frozen=True)
class Finished:
    job: Job
    rollout: Rollout
    busy_s: float  # time the worker spent on it


class RolloutWorker(Protocol):
    def submit(self, job: Job) -> None: ...
    def push(self, delta: Delta) -> None: ...
    def poll(self, timeout: float) -> list[Finished]: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class WorkerSpec:
    config: dict[str, Any]
    state: dict[str, torch.Tensor]
    version: int
    env: Environment
    inflight: bool = True
    threads: int = 1


class _Child:
    """The worker's side: its weights, version, pending jobs."""

    def __init__(self, spec: WorkerSpec, inbox: Any) -> None:
        torch.set_num_threads(spec.threads)
        self.model = Transformer(ModelConfig.from_dict(spec.config))
        self.model.load_state_dict(spec.state)
        self.weights = {k: v.clone() for k, v in spec.state.items()}
        self.inbox = inbox
        self.jobs: deque[Job] = deque()
        self.stopping = False
        sync = self.drain if spec.inflight else None
        self.sampler = Sampler(self.model, spec.version, sync)

    def handle(self, message: tuple[str, Any]) -> None:
        kind, payload = message
        if kind == "delta":
            self.weights = apply_delta(self.weights, payload, self.sampler.version)
            with torch.no_grad():
                self.model.load_state_dict(self.weights)
            self.sampler.version = payload.to_version
        elif kind == "job":
            self.jobs.append(payload)
        else:
            self.stopping = True

    def drain(self) -> None:
        while True:
            try:
                message = self.inbox.get_nowait()
            except queue.Empty:
                return
            self.handle(message)


def child_main(spec: WorkerSpec, inbox: Any, outbox: Any) -> None:
    """The worker's loop (a child process's, or a Ray actor's thread's): jobs and deltas in,
    finished rollouts out, until a stop message."""
    child = _Child(spec, inbox)
    while not child.stopping:
        child.drain()
        if not child.jobs:
            child.handle(inbox.get())
            continue
        job = child.jobs.popleft()
        started = time.perf_counter()
        try:
            rollout = spec.env.rollout(job.task, child.sampler, job.group, job.seed)
        except Exception as error:  # reported, the worker goes on
            outbox.put(pickle.dumps(("error", job, f"{type(error).__name__}: {error}")))
            continue
        busy = time.perf_counter() - started
        outbox.put(pickle.dumps(("done", job, rollout, busy)))


class WorkerError(RuntimeError):
    """A rollout failed in a worker."""


def take(outbox: Any, timeout: float) -> list[bytes]:
    """What the child has put out: waits up to `timeout` for the first, then takes the rest."""
    items: list[bytes] = []
    try:
        items.append(outbox.get(timeout=timeout))
    except queue.Empty:
        return items
    while True:
        try:
            items.append(outbox.get_nowait())
        except queue.Empty:
            return items


def finished(item: bytes) -> Finished:
    """One message of the child's, a finished rollout; a failed one raises `WorkerError`."""
    message = pickle.loads(item)
    if message[0] == "error":
        raise WorkerError(f"job {message[1].id}: {message[2]}")
    return Finished(message[1], message[2], message[3])


class ProcessWorker:
    def __init__(self, spec: WorkerSpec) -> None:
        context = mp.get_context("spawn")
        self.inbox: Any = context.Queue()
        self.outbox: Any = context.Queue()
        self.process = context.Process(
            target=child_main, args=(spec, self.inbox, self.outbox), daemon=True
        )
        self.process.start()

    def submit(self, job: Job) -> None:
        self.inbox.put(("job", job))

    def push(self, delta: Delta) -> None:
        self.inbox.put(("delta", delta))

    def poll(self, timeout: float) -> list[Finished]:
        return [finished(item) for item in take(self.outbox, timeout)]

    def close(self) -> None:
        self.inbox.put(("stop", None))
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
