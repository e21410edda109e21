"""The Ray executor: attempts as Ray tasks on a cluster, results streamed back as they end.

Without an address it starts a small local cluster (`ray.init(num_cpus=...)`,
a small object store, no dashboard) and shuts it down at the end; with one it
joins that cluster and leaves it running. Each attempt is one Ray task that
reserves `cpus_per_attempt` CPUs; at most `concurrency` are in flight. A task
whose worker dies (killed, out of memory) is run again by Ray up to
`max_task_retries` times; the driver yields each attempt once, so it is
counted once. A task that still cannot run becomes the function's `failed`
result (an `infra_error` attempt), never a crash of the run.

What a task needs crosses as plain data (see `harness.remote`); packed task
files go into the object store once (`put`) and are shared by every attempt
of that task. Nothing here writes results: the driver does.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harness.errors import ConfigError


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'cursorbench[ray]'") from None
    return ray


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
        ray = _ray()
        self.concurrency = concurrency
        self.cpus_per_attempt = cpus_per_attempt
        self.max_task_retries = max_task_retries
        self._in_flight: dict[Any, Any] = {}
        self._started_cluster = False
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
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
            self._started_cluster = True
        self._task = ray.remote(_apply).options(
            num_cpus=cpus_per_attempt, max_retries=max_task_retries, retry_exceptions=False
        )

    def put(self, value: bytes) -> Any:
        """One copy of `value` in the object store, for every task that needs it."""
        return _ray().put(value)

    def map_unordered(self, function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        ray = _ray()
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
                failed = getattr(function, "failed", None)
                if failed is None:
                    raise
                result = failed(item, error)
            submit()
            yield result

    def shutdown(self) -> None:
        """Cancels attempts in flight; a local cluster this executor started is stopped."""
        ray = _ray()
        if not ray.is_initialized():
            return
        for ref in list(self._in_flight):
            with contextlib.suppress(Exception):  # already finished or gone
                ray.cancel(ref, force=True)
        self._in_flight = {}
        if self._started_cluster:
            ray.shutdown()
            self._started_cluster = False
