"""The runner: (model, suite, config) x tasks x epochs, streamed to disk and to a store.

Each finished attempt is appended to the run folder at once, then recorded in
the result store. Starting the same run again resumes it: attempts already in
the folder are not repeated, and any the store missed (a kill between the two
writes, a database that was down) are copied over first. A store that fails
mid-run costs a warning, never a result: the run folder still has it.

Attempts run through an `Executor`: in this process's threads, or remotely
(`executor.remote`), where each attempt is an `AttemptJob` run by a
`RemoteAttempt` and its trajectory comes back as text. Either way this
process is the only writer of the run folder and the store. The run folder
must be locked by whoever opened the run (its one owner) before a `Runner`
is made; the runner neither takes nor releases the lock.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from harness.attempt import AttemptEnvironment, run_attempt, trajectory_path
from harness.executor import Executor, LocalExecutor
from harness.model import ChatModel
from harness.remote import AttemptJob, FinishedAttempt, RemoteAttempt, pack_task
from harness.results import Attempt, AttemptResult, RunInfo, Status, in_order
from harness.rundir import RunDir, RunDirError
from harness.sandbox import SandboxBackend
from harness.sandbox.local import remove_tree
from harness.spec import PreparedTask
from harness.summary import summarize


class RunConfig(BaseModel):
    """What makes two runs comparable; a resume must match it exactly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    base_url: str
    endpoint_label: str
    suite_version: str
    tasks: dict[str, str]  # task id -> digest of its prepared content
    epochs: int
    temperature: float | None = None
    sandbox: str

    def digest(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def planned(self) -> int:
        """Attempts the run is made of: tasks x epochs."""
        return len(self.tasks) * self.epochs


@runtime_checkable
class ResultStore(Protocol):
    """Where results land besides the run folder: the one store protocol of the project
    (`leaderboard.SqlStore` implements it). Writes must be idempotent: a resumed run
    records again what a store may already hold."""

    def start_run(self, run: RunInfo) -> None:
        """Registers the run; again with the same config hash does nothing."""
        ...

    def record(self, run_id: str, result: AttemptResult) -> None:
        """Stores one attempt, replacing an earlier record of the same (task, epoch)."""
        ...

    def attempt_keys(self, run_id: str) -> set[str]:
        """Keys (`task_id#epoch`) of the attempts already recorded for the run."""
        ...

    def finish_run(self, run_id: str, summary: dict) -> None: ...

    def delete_attempts(self, run_id: str, keys: set[str]) -> None:
        """Forgets attempts (to run them again); unknown keys are ignored."""
        ...

    def close(self) -> None: ...


@dataclass
class RunOptions:
    """How to run; none of it changes what is measured, so none of it is in the config."""

    work_dir: Path
    concurrency: int = 4
    retry_errors: bool = False  # attempts that ended in `error` are run again on resume
    keep_workspaces: bool = False
    warnings: list[str] = field(default_factory=list)


class RunInterrupted(Exception):
    pass


@dataclass
class RunOutcome:
    """What a run gives back: its identity, every finished attempt, the summary."""

    run: RunInfo
    results: list[AttemptResult]
    summary: dict
    store_warnings: list[str]
    already_complete: bool = False  # nothing was left to run when it started

    @property
    def all_errors(self) -> bool:
        """Every attempt ended in `error`: nothing was judged."""
        return bool(self.results) and all(r.status is Status.ERROR for r in self.results)


Listener = Callable[[AttemptResult], None]


class Runner:
    def __init__(
        self,
        tasks: list[PreparedTask],
        config: RunConfig,
        options: RunOptions,
        model: ChatModel,
        backend: SandboxBackend,
        run_dir: RunDir,
        store: ResultStore | None = None,
        executor: Executor | None = None,
        remote: RemoteAttempt | None = None,
    ) -> None:
        if not run_dir.locked:
            raise RunDirError(f"{run_dir.path}: lock the run folder before running in it")
        self.tasks = {task.id: task for task in tasks}
        self.config = config
        self.options = options
        self.run_dir = run_dir
        self.store = store
        self.executor = executor or LocalExecutor(options.concurrency)
        if getattr(self.executor, "remote", False) and remote is None:
            raise ValueError("a remote executor needs the attempts' `RemoteAttempt`")
        self.remote = remote
        self.store_warnings: list[str] = []
        self.run = run_dir.open(self._fresh_run_info(backend))
        self.finished = run_dir.finished()
        self.earlier_wall_time_s = run_dir.wall_time_s()  # of earlier sessions of this run
        self.started = time.monotonic()
        if options.retry_errors:
            self._forget_errors()
        self.environment = AttemptEnvironment(
            model=model,
            backend=backend,
            work_dir=options.work_dir / self.run.id,
            run_dir=run_dir.path,
            keep_workspaces=options.keep_workspaces,
        )
        if not options.keep_workspaces:  # what a killed earlier process of this run left
            remove_tree(self.environment.work_dir)

    def _fresh_run_info(self, backend: SandboxBackend) -> RunInfo:
        return RunInfo(
            id=uuid.uuid4().hex,  # a full UUID: runs made on different machines merge
            created_at=datetime.now(UTC),
            model=self.config.model,
            base_url=self.config.base_url,
            endpoint_label=self.config.endpoint_label,
            suite_version=self.config.suite_version,
            config_hash=self.config.digest(),
            config=self.config.model_dump(mode="json"),
            sandbox=backend.name,
            warnings=self.options.warnings,
            out_dir=str(self.run_dir.path),
        )

    def pending(self) -> list[Attempt]:
        return [
            Attempt(task_id=task_id, epoch=epoch)
            for epoch in range(self.config.epochs)
            for task_id in self.tasks
            if Attempt(task_id=task_id, epoch=epoch).key not in self.finished
        ]

    def execute(self, on_result: Listener | None = None) -> RunOutcome:
        self.started = time.monotonic()
        self._sync_store()
        already_complete = not self.pending()
        try:
            for finished in self._finished_attempts():
                result = finished.result
                if result.key in self.finished:  # a job run twice (a worker died late)
                    continue
                if finished.trajectory is not None:  # written away from the run folder
                    where = trajectory_path(Attempt(task_id=result.task_id, epoch=result.epoch))
                    self.run_dir.write_text(where, finished.trajectory)
                self.finished[result.key] = result
                self.run_dir.append(result)
                self._store("record", self.run.id, result)
                self.run_dir.write_summary(self.summary())
                if on_result:
                    on_result(result)
        except KeyboardInterrupt:
            self.executor.shutdown()
            self.run_dir.write_summary(self.summary() | {"interrupted": True})
            raise RunInterrupted(f"interrupted; {len(self.pending())} attempts left") from None
        summary = self.summary()
        self.run_dir.write_summary(summary)
        self._store("finish_run", self.run.id, summary)
        self.executor.shutdown()
        return RunOutcome(self.run, self.results(), summary, self.store_warnings, already_complete)

    def _finished_attempts(self) -> Iterator[FinishedAttempt]:
        pending = self.pending()
        if self.remote is None:
            return self.executor.map_unordered(self._run_here, pending)
        packed = {}
        for task_id in {attempt.task_id for attempt in pending}:
            blob = pack_task(self.tasks[task_id])
            put = getattr(self.executor, "put", None)
            packed[task_id] = put(blob) if put is not None else blob
        jobs = [
            AttemptJob(
                task=self.tasks[attempt.task_id],
                attempt=attempt,
                digest=self.config.tasks.get(attempt.task_id, ""),
                packed=packed[attempt.task_id],
            )
            for attempt in pending
        ]
        return self.executor.map_unordered(self.remote, jobs)

    def _run_here(self, attempt: Attempt) -> FinishedAttempt:
        return FinishedAttempt(run_attempt(self.tasks[attempt.task_id], attempt, self.environment))

    def wall_time_s(self) -> float:
        """The run's wall time: earlier sessions (a resumed run) plus this one so far."""
        return self.earlier_wall_time_s + (time.monotonic() - self.started)

    def results(self) -> list[AttemptResult]:
        return in_order(self.finished.values())

    def summary(self) -> dict:
        identity = {"run_id": self.run.id, "model": self.run.model}
        identity |= {"endpoint": self.run.endpoint_label, "sandbox": self.run.sandbox}
        figures = summarize(self.results(), self.config.planned, wall_time_s=self.wall_time_s())
        return identity | figures

    def _forget_errors(self) -> None:
        """Drops errored attempts from the folder and the store, so they run again."""
        errored = {key for key, r in self.finished.items() if r.status is Status.ERROR}
        if not errored:
            return
        self.finished = {k: r for k, r in self.finished.items() if k not in errored}
        self.run_dir.rewrite(self.results())
        self._store("delete_attempts", self.run.id, errored)

    def _sync_store(self) -> None:
        if self.store is None:
            return
        self._store("start_run", self.run)
        try:
            known = self.store.attempt_keys(self.run.id)
        except Exception as error:
            self.store_warnings.append(f"result store unreadable: {error}")
            return
        for key, result in self.finished.items():
            if key not in known:
                self._store("record", self.run.id, result)

    def _store(self, method: str, *args: object) -> None:
        if self.store is None:
            return
        try:
            getattr(self.store, method)(*args)
        except Exception as error:  # the run folder keeps every result; a rerun syncs the store
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            self.store_warnings.append(f"result store: {method} failed: {message}")
