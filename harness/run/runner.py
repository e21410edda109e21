"""The runner: (model, suite, config) x tasks x epochs, streamed to disk and to a store.

Each finished attempt is appended to the run folder at once, then recorded in
the result store (`harness.run.store.ResultStore`). Starting the same run again
resumes it: attempts already in the folder are not repeated, and any the store
missed (a kill between the two writes, a database that was down) are copied
over first. A store that fails mid-run costs a warning, never a result: the run
folder still has it.

Everything the runner needs to know is in its `RunPlan`; what it is given
besides are the live parts: the model client, the sandbox backend, the locked
run folder, the executor and the store. Attempts run through the `Executor`:
in this process's threads, or remotely (`executor.remote`), where each attempt
is an `AttemptJob` run by a `RemoteAttempt` and its trajectory comes back as
text. Either way this process is the only writer of the run folder and the
store. The run folder must be locked by whoever opened the run (its one owner)
before a `Runner` is made; the runner neither takes nor releases the lock.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from harness.agent.atif import atif_path, write_atif
from harness.model.chat import ChatModel
from harness.results import Attempt, AttemptResult, RunInfo, Status, in_order
from harness.run.attempt import AttemptEnvironment, run_attempt, trajectory_path
from harness.run.executor import Executor
from harness.run.plan import RunConfig, RunPlan
from harness.run.remote import AttemptJob, FinishedAttempt, RemoteAttempt, pack_task
from harness.run.rundir import RunDir, RunDirError
from harness.run.store import ResultStore
from harness.run.summary import RunSummary, summarize
from harness.sandbox import SandboxBackend
from harness.sandbox.local import remove_tree
from harness.spec import PreparedTask

__all__ = ["Listener", "ResultStore", "RunConfig", "RunInterrupted", "RunOutcome", "Runner"]


class RunInterrupted(Exception):
    pass


@dataclass
class RunOutcome:
    """What a run gives back: its identity, every finished attempt, the summary."""

    run: RunInfo
    results: list[AttemptResult]
    summary: RunSummary
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
        plan: RunPlan,
        *,
        tasks: list[PreparedTask],
        model: ChatModel,
        backend: SandboxBackend,
        run_dir: RunDir,
        executor: Executor,
        store: ResultStore | None = None,
    ) -> None:
        if not run_dir.locked:
            raise RunDirError(f"{run_dir.path}: lock the run folder before running in it")
        self.plan = plan
        self.config = plan.config
        self.tasks = {task.id: task for task in tasks}
        self.run_dir = run_dir
        self.store = store
        self.executor = executor
        self.store_warnings: list[str] = []
        self.run = run_dir.open(self._fresh_run_info(backend))
        self.finished = run_dir.finished()
        self.earlier_wall_time_s = run_dir.wall_time_s()  # of earlier sessions of this run
        self.started = time.monotonic()
        if plan.retry_errors:
            self._forget_errors()
        self.environment = AttemptEnvironment(
            model=model,
            backend=backend,
            work_dir=plan.work_dir / self.run.id,
            run_dir=run_dir.path,
            sandbox=plan.sandbox,
        )
        if not plan.sandbox.keep_workspaces:  # what a killed earlier process of this run left
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
            confined=backend.confined,
            warnings=list(self.plan.warnings),
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
        run_id = self.run.id
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
                if self.plan.atif:
                    self._write_atif(result)
                self._record(result)
                self.run_dir.write_summary(self.summary())
                if on_result:
                    on_result(result)
        except KeyboardInterrupt:
            self.executor.shutdown()
            interrupted = self.summary().model_copy(update={"interrupted": True})
            self.run_dir.write_summary(interrupted)
            raise RunInterrupted(f"interrupted; {len(self.pending())} attempts left") from None
        summary = self.summary()
        self.run_dir.write_summary(summary)
        self._store("finish_run", lambda store: store.finish_run(run_id, summary))
        self.executor.shutdown()
        return RunOutcome(self.run, self.results(), summary, self.store_warnings, already_complete)

    def _write_atif(self, result: AttemptResult) -> None:
        where = trajectory_path(Attempt(task_id=result.task_id, epoch=result.epoch))
        trajectory = self.run_dir.path / where
        if trajectory.exists():
            write_atif(trajectory, self.run_dir.path / atif_path(where), self.run.id)

    def _finished_attempts(self) -> Iterator[FinishedAttempt]:
        pending = self.pending()
        if not self.executor.remote:
            return self.executor.map_unordered(self._run_here, pending)
        packed = {
            task_id: self.executor.put(pack_task(self.tasks[task_id]))
            for task_id in {attempt.task_id for attempt in pending}
        }
        jobs = [
            AttemptJob(
                task=self.tasks[attempt.task_id],
                attempt=attempt,
                digest=self.config.tasks.get(attempt.task_id, ""),
                packed=packed[attempt.task_id],
            )
            for attempt in pending
        ]
        remote = RemoteAttempt(self.plan)
        return self.executor.map_unordered(remote, jobs, lost=remote.failed)

    def _run_here(self, attempt: Attempt) -> FinishedAttempt:
        return FinishedAttempt(run_attempt(self.tasks[attempt.task_id], attempt, self.environment))

    def wall_time_s(self) -> float:
        """The run's wall time: earlier sessions (a resumed run) plus this one so far."""
        return self.earlier_wall_time_s + (time.monotonic() - self.started)

    def results(self) -> list[AttemptResult]:
        return in_order(self.finished.values())

    def summary(self) -> RunSummary:
        figures = summarize(self.results(), self.config.planned, wall_time_s=self.wall_time_s())
        run = self.run
        return figures.with_identity(
            run.id, run.model, run.endpoint_label, run.sandbox, run.confined
        )

    def _forget_errors(self) -> None:
        """Drops errored attempts from the folder and the store, so they run again."""
        errored = {key for key, r in self.finished.items() if r.status is Status.ERROR}
        if not errored:
            return
        self.finished = {k: r for k, r in self.finished.items() if k not in errored}
        self.run_dir.rewrite(self.results())
        run_id = self.run.id
        self._store("delete_attempts", lambda store: store.delete_attempts(run_id, errored))

    def _sync_store(self) -> None:
        if self.store is None:
            return
        run, categories = self.run, self.plan.task_categories
        self._store("start_run", lambda store: store.start_run(run))
        if categories:
            suite = run.suite_version
            self._store("describe_tasks", lambda store: store.describe_tasks(suite, categories))
        try:
            known = self.store.attempt_keys(run.id)
        except Exception as error:
            self.store_warnings.append(f"result store unreadable: {error}")
            return
        for key, result in self.finished.items():
            if key not in known:
                self._record(result)

    def _record(self, result: AttemptResult) -> None:
        run_id = self.run.id
        self._store("record", lambda store: store.record(run_id, result))

    def _store(self, action: str, write: Callable[[ResultStore], None]) -> None:
        """`write` to the store, if there is one; a failure becomes a warning."""
        if self.store is None:
            return
        try:
            write(self.store)
        except Exception as error:  # the run folder keeps every result; a rerun syncs the store
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            self.store_warnings.append(f"result store: {action} failed: {message}")
