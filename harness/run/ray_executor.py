"""The Ray executor: attempts as Ray tasks on a cluster, results streamed back as they end.

Without an address it starts a small local cluster (`ray.init(num_cpus=...)`,
a small object store, no dashboard) and shuts it down at the end; with one it
joins that cluster and leaves it running. Either happens on first use, so a
resumed run with nothing left to do starts no cluster. Each attempt is one Ray task that
reserves `cpus_per_attempt` CPUs; at most `concurrency` are in flight. A task
whose worker dies (killed, out of memory) is run again by Ray up to
`max_task_retries` times; the driver yields each attempt once, so it is
counted once. A task that still cannot run becomes what `lost` makes of it
(the runner's: an `infra_error` attempt), never a crash of the run.

What a task needs crosses as plain data (see `harness.run.remote`); packed task
files go into the object store once (`put`) and are shared by every attempt
of that task. Nothing here writes results: the driver does.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from harness.errors import ConfigError


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'cursorbench[ray]'") from None
    return ray


def start_or_join(
    address: str | None,
    num_cpus: int | None = None,
    object_store_mb: int = 128,
    env: dict[str, str] | None = None,
) -> bool:
    """Ray, connected: the cluster at `address`, else a small local one started now (no
    dashboard, quiet). Whether this call started or joined it (False: already connected)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "configure_logging": True,
    }
    if env:  # e.g. CURSORBENCH_HOME for workers of a local cluster
        options["runtime_env"] = {"env_vars": env}
    if address is None:
        options["num_cpus"] = num_cpus or os.cpu_count() or 2
        options["object_store_memory"] = object_store_mb * 1024 * 1024
    else:
        options["address"] = address
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = address or "a local cluster"
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ConfigError(f"cannot start Ray on {where}: {first}") from None
    return True


def _apply(function: Callable[[Any], Any], item: Any) -> Any:
    return function(item)


class RayExecutor:
    remote = True

    def __init__(
        self,
        *,
        concurrency: int = 4,
        address: str | None = None,
        num_cpus: int | None = None,
        cpus_per_attempt: float = 1.0,
        object_store_mb: int = 128,
        max_task_retries: int = 3,
        env: dict[str, str] | None = None,
    ) -> None:
        _ray()  # says at once when Ray is not installed
        self.concurrency = concurrency
        self.cpus_per_attempt = cpus_per_attempt
        self.max_task_retries = max_task_retries
        self.address = address
        self.num_cpus = num_cpus
        self.object_store_mb = object_store_mb
        self.env = env
        self._in_flight: dict[Any, Any] = {}
        self._started_cluster = False
        self._task: Any = None

    def _connect(self) -> Any:
        """Ray, started or joined, with this executor's task function declared."""
        ray = _ray()
        if self._task is not None:
            return ray
        if start_or_join(self.address, self.num_cpus, self.object_store_mb, self.env):
            self._started_cluster = True
        self._task = ray.remote(_apply).options(
            num_cpus=self.cpus_per_attempt,
            max_retries=self.max_task_retries,
            retry_exceptions=False,
        )
        return ray

    def submit(self, function: Callable[[Any], Any], item: Any) -> Future[Any]:
        """`function(item)` as one Ray task, as a `concurrent.futures.Future` (for callers
        that schedule work themselves, such as the task factory's `Scheduler`)."""
        self._connect()
        future: Future[Any] = self._task.remote(function, item).future()
        return future

    def put(self, value: bytes) -> Any:
        """One copy of `value` in the object store, for every task that needs it."""
        return self._connect().put(value)

    def map_unordered(
        self,
        function: Callable[[Any], Any],
        items: Iterable[Any],
        lost: Callable[[Any, BaseException], Any] | None = None,
    ) -> Iterator[Any]:
        items = list(items)
        if not items:
            return
        ray = self._connect()
        shipped = ray.put(function)
        waiting = iter(items)
        self._in_flight = {}

        def submit() -> None:
            for item in waiting:
                self._in_flight[self._task.remote(shipped, item)] = item
                if len(self._in_flight) >= self.concurrency:
                    return

        submit()
        while self._in_flight:
            ready, _ = ray.wait(list(self._in_flight), num_returns=1)
            item = self._in_flight.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except (ray.exceptions.RayError, OSError) as error:
                if lost is None:
                    raise
                result = lost(item, error)
            submit()
            yield result

    def shutdown(self) -> None:
        """Cancels attempts in flight; a local cluster this executor started is stopped."""
        ray = _ray()
        if self._task is None or not ray.is_initialized():
            return
        for ref in list(self._in_flight):
            with contextlib.suppress(Exception):  # already finished or gone
                ray.cancel(ref, force=True)
        self._in_flight = {}
        if self._started_cluster:
            ray.shutdown()
            self._started_cluster = False
        self._task = None
