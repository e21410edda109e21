"""Executors run attempts concurrently and hand back results as they finish.

`LocalExecutor` uses threads: an attempt spends its time waiting on the model
endpoint or on a sandboxed subprocess, so threads are enough on one machine.
A cluster executor (`harness.run.ray_executor.RayExecutor`) implements the same
protocol with `remote = True`: the function it is given must then be
picklable (the runner hands it a `harness.run.remote.RemoteAttempt`), and `put`
shares one copy of a task's files among its workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Executor(Protocol):
    remote: bool  # whether work runs away from this process (see the module docstring)

    def map_unordered(
        self,
        function: Callable[[Item], Result],
        items: Iterable[Item],
        lost: Callable[[Item, BaseException], Result] | None = None,
    ) -> Iterator[Result]:
        """`function` of each item, in the order they finish. `lost`: what an item whose
        worker could not run it becomes (a remote executor's); None: the error is raised."""
        ...

    def put(self, data: bytes) -> Any:
        """`data` as the function's items should carry it: itself, or a handle to one
        shared copy (a remote executor's object store)."""
        ...

    def shutdown(self) -> None:
        """Stops starting new work; work in flight is abandoned."""
        ...


class LocalExecutor:
    remote = False

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="attempt")

    def map_unordered(
        self,
        function: Callable[[Item], Result],
        items: Iterable[Item],
        lost: Callable[[Item, BaseException], Result] | None = None,
    ) -> Iterator[Result]:
        """Threads of this process are never lost: `lost` is not used."""
        pending: set[Future[Result]] = {self._pool.submit(function, item) for item in items}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()

    def put(self, data: bytes) -> bytes:
        return data  # one process: the items share it already

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
