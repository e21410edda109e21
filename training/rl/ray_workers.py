"""Rollout workers as Ray actors, behind the same protocol as `ProcessWorker` (`submit`,
`push`, `poll`, `close`), so the orchestrator runs unchanged on a cluster.

An actor runs the worker's loop (`workers.child_main`) on a thread of its own and takes
messages through two methods that run beside it (a threaded actor). Ray does not keep the
order of calls to a threaded actor, and a job must not overtake the delta sent before it
(it would sample at an older version than the learner expects), so every message carries a
sequence number and the actor hands them to the loop in that order.

Without an address a small local cluster is started (`harness.run.ray_executor.start_or_join`);
with one, the actors are placed on that cluster, one CPU each.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import Any

from harness.run.ray_executor import start_or_join
from training.rl.workers import Finished, Job, WorkerSpec, child_main, finished, take
from training.weight_sync import Delta


class _RolloutActor:
    def __init__(self, spec: WorkerSpec) -> None:
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.outbox: queue.Queue[bytes] = queue.Queue()
        self.expected = 0
        self.early: dict[int, Any] = {}  # messages that arrived before their turn
        self.lock = threading.Lock()
        loop = threading.Thread(target=child_main, args=(spec, self.inbox, self.outbox))
        loop.daemon = True
        loop.start()

    def put(self, sequence: int, message: Any) -> None:
        with self.lock:
            self.early[sequence] = message
            while self.expected in self.early:
                self.inbox.put(self.early.pop(self.expected))
                self.expected += 1

    def take(self, timeout: float) -> list[bytes]:
        return take(self.outbox, timeout)


class RayWorker:
    def __init__(self, spec: WorkerSpec, address: str | None = None) -> None:
        import ray

        start_or_join(address)
        actor = ray.remote(_RolloutActor).options(num_cpus=1, max_concurrency=4)
        self.ray = ray
        self.actor: Any = actor.remote(spec)  # a handle: its methods are called with .remote
        self.sequence = itertools.count()

    def _send(self, message: tuple[str, Any]) -> None:
        self.actor.put.remote(next(self.sequence), message)

    def submit(self, job: Job) -> None:
        self._send(("job", job))

    def push(self, delta: Delta) -> None:
        self._send(("delta", delta))

    def poll(self, timeout: float) -> list[Finished]:
        return [finished(item) for item in self.ray.get(self.actor.take.remote(timeout))]

    def close(self) -> None:
        self._send(("stop", None))
        self.ray.kill(self.actor)
