"""Attempts that run away from the driver: what crosses to a worker, and what comes back.

A worker gets plain data only: the run's `RunPlan` (how to reach the model, which
sandbox backend to build, what to hide from agents) and one `AttemptJob` per
attempt, whose prepared task travels as a tar archive (`pack_task`), so no
shared filesystem is needed. The worker rebuilds its model client and
sandbox backend from the plan (once per worker process), unpacks the task
into its own cache, runs the attempt with the trajectory in a private
folder, and sends back a `FinishedAttempt`: the result and the trajectory's
text. The driver writes both into the run folder; it is the only writer.

How jobs are scheduled (Ray, ...) is the executor's business, not this module's.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.envs import EnvironmentFailed
from harness.home import READY_MARKER, build_once, cache_home
from harness.model.chat import OpenAIChatModel
from harness.results import Attempt, AttemptResult, Failure, Status
from harness.run.attempt import AttemptEnvironment, run_attempt, trajectory_path
from harness.run.plan import RunPlan
from harness.sandbox import SandboxBackend, open_ready
from harness.sandbox.local import remove_tree
from harness.spec import PreparedTask

READY = "READY"


@dataclass(frozen=True)
class AttemptJob:
    """One attempt to run: the task, which epoch, and (remotely) the task's packed files."""

    task: PreparedTask
    attempt: Attempt
    digest: str = ""
    packed: Any = None  # bytes from `pack_task`, or the executor's handle to them


@dataclass(frozen=True)
class FinishedAttempt:
    result: AttemptResult
    trajectory: str | None = None  # its text, when it was written away from the run folder


def pack_task(task: PreparedTask) -> bytes:
    """The task's prepared workspace and hidden tests as one gzipped tar archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(task.workspace, arcname="workspace")
        archive.add(task.hidden_dir, arcname="hidden")
    return buffer.getvalue()


def unpack_task(job: AttemptJob, packed: bytes, cache: Path) -> PreparedTask:
    """The job's task with its files unpacked under `cache` (once per digest)."""
    root = cache / "shipped" / f"{job.task.id}-{job.digest}"

    def unpack(staging: Path) -> None:
        staging.mkdir()
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as archive:
            archive.extractall(staging, filter="tar")

    build_once(root, job.digest, unpack, marker=READY)
    env = job.task.python_env
    if env is not None and not (env / READY_MARKER).is_file():  # a path on the building machine
        raise EnvironmentFailed(
            f"task {job.task.id}: its environment {env} is not on this worker (workers on "
            "other machines do not make task environments yet)"
        )
    secret = [path for path in job.task.secret_paths if path.exists()]
    return job.task.model_copy(
        update={
            "workspace": root / "workspace",
            "hidden_dir": root / "hidden",
            "secret_paths": secret,
        }
    )


_environments: dict[str, tuple[OpenAIChatModel, SandboxBackend]] = {}
_environments_lock = threading.Lock()


def _worker_parts(plan: RunPlan, cache: Path) -> tuple[OpenAIChatModel, SandboxBackend]:
    """The model client and sandbox backend of this worker process, built once per plan."""
    from harness.sandbox.bubblewrap import default_hidden_paths

    with _environments_lock:
        key = plan.worker_key()
        if key not in _environments:
            hidden = [*default_hidden_paths(), cache, *plan.sandbox.hidden]
            existing = tuple(dict.fromkeys(path for path in hidden if path.exists()))
            settings = plan.sandbox.settings(hidden=existing)
            scratch = cache / "self-test" / uuid.uuid4().hex[:8]
            backend, _ = open_ready(plan.config.sandbox, settings, self_test_in=scratch)
            _environments[key] = (plan.model_client(), backend)
        return _environments[key]


class RemoteAttempt:
    """Runs one `AttemptJob` on a worker; picklable, so executors can ship it."""

    def __init__(self, plan: RunPlan, cache: Path | None = None) -> None:
        self.plan = plan
        self.cache = cache  # None: the worker's own cache home

    def __call__(self, job: AttemptJob) -> FinishedAttempt:
        cache = self.cache or cache_home()  # the worker's own cache
        packed = job.packed
        if packed is not None and not isinstance(packed, bytes):
            import ray  # a handle into Ray's object store

            packed = ray.get(packed)
        task = unpack_task(job, packed, cache) if packed is not None else job.task
        model, backend = _worker_parts(self.plan, cache)
        sweep_dead_workers(cache / "attempts")
        with tempfile.TemporaryDirectory(prefix="cursorbench-attempt-") as folder:
            environment = AttemptEnvironment(
                model=model,
                backend=backend,
                work_dir=cache / "attempts" / f"remote-{os.getpid()}-{uuid.uuid4().hex[:12]}",
                run_dir=Path(folder),
                sandbox=self.plan.sandbox,
            )
            result = run_attempt(task, job.attempt, environment)
            text = (Path(folder) / trajectory_path(job.attempt)).read_text(encoding="utf-8")
        return FinishedAttempt(result=result, trajectory=text)

    def failed(self, job: AttemptJob, error: BaseException) -> FinishedAttempt:
        """The result of a job the executor could not run (its worker kept dying)."""
        return FinishedAttempt(result=infra_error(job.attempt, error))


def sweep_dead_workers(attempts: Path) -> None:
    """Removes the scratch folders (mounts included) of worker processes that died mid-attempt
    (killed, out of memory); their cgroups are swept as any dead harness process's are."""
    from harness.sandbox.cmdgroups import sweep_stale_cgroups

    swept = False
    for folder in attempts.glob("remote-*-*"):
        pid = folder.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            remove_tree(folder)
            swept = True
    if swept:
        sweep_stale_cgroups()


def infra_error(attempt: Attempt, error: BaseException) -> AttemptResult:
    now = datetime.now(UTC)
    line = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return AttemptResult(
        task_id=attempt.task_id,
        epoch=attempt.epoch,
        status=Status.ERROR,
        failure=Failure.INFRA_ERROR,
        error=f"{type(error).__name__}: {line}"[:500],
        started_at=now,
        finished_at=now,
    )
