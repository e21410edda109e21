"""The runner: (model, suite, config) x tasks x epochs, streamed to disk and to a store.

Each finished attempt is appended to the run folder at once, then recorded in
the result store. Starting the same run again resumes it: attempts already in
the folder are not repeated, and any the store missed (a kill between the two
writes, a database that was down) are copied over first. A store that fails
mid-run costs a warning, never a result: the run folder still has it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from harness.attempt import AttemptEnvironment, run_attempt
from harness.executor import Executor, LocalExecutor
from harness.model import ChatModel
from harness.results import Attempt, AttemptResult, RunInfo, Status, in_order
from harness.rundir import RunDir
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


class ResultStore(Protocol):
    """Where results land besides the run folder (see `leaderboard.Store`)."""

    def start_run(self, run: RunInfo) -> None: ...
    def record(self, run_id: str, result: AttemptResult) -> None: ...
    def attempt_keys(self, run_id: str) -> set[str]: ...
    def finish_run(self, run_id: str, summary: dict) -> None: ...
    def delete_attempts(self, run_id: str, keys: set[str]) -> None: ...


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
    run: RunInfo
    results: list[AttemptResult]
    summary: dict
    store_warnings: list[str]


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
    ) -> None:
        self.tasks = {task.id: task for task in tasks}
        self.config = config
        self.options = options
        self.run_dir = run_dir
        self.store = store
        self.executor = executor or LocalExecutor(options.concurrency)
        self.store_warnings: list[str] = []
        run_dir.lock()
        self.run = run_dir.open(self._fresh_run_info(backend))
        self.finished = run_dir.finished()
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
        try:
            return self._execute(on_result)
        finally:
            self.run_dir.unlock()

    def _execute(self, on_result: Listener | None) -> RunOutcome:
        self._sync_store()
        try:
            for result in self.executor.map_unordered(self._run_one, self.pending()):
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
        return RunOutcome(self.run, self.results(), summary, self.store_warnings)

    def _run_one(self, attempt: Attempt) -> AttemptResult:
        return run_attempt(self.tasks[attempt.task_id], attempt, self.environment)

    def results(self) -> list[AttemptResult]:
        return in_order(self.finished.values())

    def summary(self) -> dict:
        identity = {"run_id": self.run.id, "model": self.run.model}
        identity |= {"endpoint": self.run.endpoint_label, "sandbox": self.run.sandbox}
        return identity | summarize(self.results(), self.config.planned)

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
