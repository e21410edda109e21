"""The run plan: everything a run was resolved to, in one typed, frozen value.

`cursorbench.api.prepare` resolves a `RunSpec` (what the user asked for) into a
`RunPlan` (what will happen), once; the runner, the executors and the remote
workers all read the same plan. Each setting lives in one place in it:

- `config` (`RunConfig`): what makes two runs comparable; it is hashed, stored in
  run.json, and a resume must match it exactly.
- `endpoint` (`ModelEndpoint`): how to reach the model (the model's name and
  temperature are the config's); `RunPlan.model_client` builds a client from both,
  on this machine or on a worker.
- `sandbox` (`SandboxPlan`): what is hidden from agents, the command slots, and
  whether workspaces are kept (the backend is the config's `sandbox`, already
  chosen, never "auto").
- where attempts' scratch folders go on this machine (`work_dir`), whether errored
  attempts run again (`retry_errors`), the tasks' categories (for the result
  store) and the warnings the run carries.

How many attempts are in flight, and where, is the executor's (`harness.run.executor`).

A plan is plain data, so it crosses to remote workers as it is (pickled).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.model.chat import OpenAIChatModel, RetryPolicy
from harness.model.pricing import Price
from harness.sandbox import SandboxSettings


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


class ModelEndpoint(BaseModel):
    """How requests reach the model: plain data, so it can cross to workers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str  # where requests go (the config's base_url is what the run records)
    api_key: str
    price: Price | None = None
    retry: RetryPolicy = RetryPolicy()
    request_timeout_s: float
    max_connections: int
    attempt_header: bool = False  # say which attempt asks (for replays)

    def client(self, config: RunConfig) -> OpenAIChatModel:
        """A client of this endpoint for the config's model, at its temperature."""
        return OpenAIChatModel(
            name=config.model,
            base_url=self.base_url,
            api_key=self.api_key,
            price=self.price,
            retry=self.retry,
            temperature=config.temperature,
            connection_slots=threading.Semaphore(self.max_connections),
            request_timeout_s=self.request_timeout_s,
            attempt_header=self.attempt_header,
        )


class SandboxPlan(BaseModel):
    """How attempts are sandboxed, on this machine and on every worker."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hidden: tuple[Path, ...] = ()  # a worker hides those that exist there, and its own cache
    max_commands: int | None = None  # sandboxed commands at once; None: one per CPU
    keep_workspaces: bool = False  # debugging: attempts' folders stay on disk

    def settings(self, hidden: tuple[Path, ...] | None = None) -> SandboxSettings:
        """The settings a backend of this plan is opened with (`hidden`: instead of the plan's)."""
        return SandboxSettings(
            hidden=self.hidden if hidden is None else hidden,
            command_slots=threading.Semaphore(self.max_commands or (os.cpu_count() or 2)),
            keep_files=self.keep_workspaces,
        )


class RunPlan(BaseModel):
    """One run, resolved: shared by the runner, the executors and the workers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: RunConfig
    endpoint: ModelEndpoint
    sandbox: SandboxPlan
    work_dir: Path  # attempts' scratch folders on this machine (hidden from agents)
    retry_errors: bool = False  # attempts that ended in `error` are run again on resume
    atif: bool = False  # also write each attempt's trajectory as ATIF (harness.agent.atif)
    task_categories: dict[str, str | None] = {}  # task id -> category, for the result store
    warnings: tuple[str, ...] = ()

    def model_client(self) -> OpenAIChatModel:
        return self.endpoint.client(self.config)

    def worker_key(self) -> str:
        """What a worker's model client and sandbox backend are built from, as a digest."""
        parts = self.model_dump_json(include={"config", "endpoint", "sandbox"})
        return hashlib.sha256(parts.encode()).hexdigest()[:16]
