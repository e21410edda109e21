"""Putting a run together: tasks, endpoint, model client, sandbox, store, runner.

`RunRequest` is what a user asks for (the CLI's options); `start_run` turns it
into a ready `Runner`. With no base URL, the embedded reference solver is
served on loopback and the run goes through it over HTTP like any endpoint.
The endpoint is checked once (reachable, key accepted, model served) before
anything is written to the run folder or the store.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator

from cursorbench.loader import tasks_from_options
from cursorbench.reference import REFERENCE_SOLVER, ReferenceSolver
from cursorbench.suites import build_many
from cursorbench.workspace import cache_home
from harness.model import DEFAULT_REQUEST_TIMEOUT_S, OpenAIChatModel, RetryPolicy
from harness.openai_server import OpenAIServer
from harness.pricing import Price, load_price_table, price_for
from harness.rundir import RunDir
from harness.runner import RunConfig, Runner, RunOptions
from harness.sandbox import UNCONFINED_WARNING, SandboxSettings, choose_backend, open_backend
from harness.sandbox.bubblewrap import default_hidden_paths
from harness.sandbox.limits import (
    cgroups_available,
    cgroups_unavailable_reason,
    protect_harness,
    sweep_stale_cgroups,
)
from harness.spec import PreparedTask

EMBEDDED_BASE_URL = "embedded://reference-solver"


class UsageError(ValueError):
    """Options that do not make a run (one line, exit status 2)."""


class RunRequest(BaseModel):
    """A run as the user asked for it. Build it with `run_request` to have a bad value
    refused as a `UsageError` naming the option."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    tasks: list[str] = Field(default_factory=list)
    epochs: int = Field(default=1, ge=1)
    concurrency: int = Field(default=4, ge=1)
    max_connections: int | None = Field(default=None, ge=1)
    max_sandbox_commands: int | None = Field(default=None, ge=1)
    out: Path | None = None
    db: str | None = None
    sandbox: str = "auto"
    temperature: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    max_retries: int = Field(default=4, ge=0)
    retry_backoff_s: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    request_timeout_s: float = Field(default=DEFAULT_REQUEST_TIMEOUT_S, gt=0, allow_inf_nan=False)
    prices: Path | None = None
    price_input: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    price_output: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    keep_workspaces: bool = False
    retry_errors: bool = False

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @field_validator("out", "prices", mode="before")
    @classmethod
    def _not_empty(cls, value: object) -> object:
        if value == "":
            raise ValueError("an empty path")
        return value

    @property
    def embedded(self) -> bool:
        return self.base_url is None

    def model_name(self) -> str:
        if self.embedded:
            if self.model not in (None, REFERENCE_SOLVER):
                raise UsageError("--model needs --base-url (without it the reference solver runs)")
            return REFERENCE_SOLVER
        if not self.model:
            raise UsageError("--base-url needs --model")
        return self.model

    def out_dir(self) -> Path:
        if self.out is not None:
            return self.out
        return Path("runs") / re.sub(r"[^A-Za-z0-9._-]+", "_", self.model_name())


def run_request(**options: Any) -> RunRequest:
    """A `RunRequest` from the CLI's options; a bad value is a `UsageError` naming the option."""
    try:
        return RunRequest(**options)
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "options"
        option = "--" + field.removesuffix("_s").replace("_", "-")
        message = first["msg"].removeprefix("Value error, ")
        raise UsageError(f"Invalid value for '{option}': {message}") from None


def check_out_dir(out: Path) -> None:
    """Refuses an `--out` that cannot become a run folder, leaving nothing behind: it must be
    a folder or not exist yet, and the nearest folder that exists must take a new folder."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    nearest = next(path for path in [out, *out.parents] if path.exists())
    if not nearest.is_dir():
        raise UsageError(f"--out {out}: {nearest} is not a folder")
    try:  # os.access says yes to root even where nothing can be created (/proc, read-only)
        probe = Path(tempfile.mkdtemp(prefix=".cursorbench-probe-", dir=nearest))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UsageError(f"--out {out}: cannot create a folder in {nearest} ({reason})") from None
    probe.rmdir()


def default_db_url() -> str:
    default = Path.home() / ".local" / "share" / "cursorbench" / "leaderboard.sqlite"
    return os.environ.get("CURSORBENCH_DB", f"sqlite:///{default}")


def _price(request: RunRequest, model: str) -> tuple[Price | None, list[str]]:
    if request.price_input is not None or request.price_output is not None:
        return Price(input=request.price_input or 0, output=request.price_output or 0), []
    price = price_for(model, load_price_table(request.prices))
    if price is None:
        return None, [f"no price known for {model!r}; cost is reported as $0 (see --prices)"]
    return price, []


def _hidden_paths(
    tasks: list[PreparedTask], out: Path, db_url: str, warnings: list[str]
) -> tuple[Path, ...]:
    hidden = [*default_hidden_paths(), cache_home(), out.resolve()]
    if db_url.startswith("sqlite:///"):
        hidden.append(Path(db_url.removeprefix("sqlite:///")).resolve())
    for task in tasks:
        hidden.extend(task.secret_paths)
    # Hiding a folder that holds the interpreter would leave sandboxed commands without Python.
    python = Path(sys.prefix).resolve()
    kept = [path for path in hidden if not python.is_relative_to(path.resolve())]
    warnings.extend(
        f"{path} holds the Python environment, so it stays visible to the agent"
        for path in hidden
        if path not in kept
    )
    return tuple(dict.fromkeys(kept))


def start_run(request: RunRequest, stack: ExitStack) -> Runner:
    """A runner ready to execute; servers and the store close with `stack`."""
    from leaderboard import open_store  # the leaderboard is the run's store, not the harness's

    model = request.model_name()
    out = request.out_dir()
    check_out_dir(out)
    built = build_many(tasks_from_options(request.tasks))
    backend = choose_backend(request.sandbox)
    warnings = [] if backend == "bubblewrap" else [UNCONFINED_WARNING]
    price, price_warnings = _price(request, model)
    warnings += price_warnings
    base_url = request.base_url or EMBEDDED_BASE_URL
    endpoint = base_url
    if request.embedded:
        server = stack.enter_context(OpenAIServer(ReferenceSolver(built)))
        endpoint = server.base_url
    config = RunConfig(
        model=model,
        base_url=base_url,
        endpoint_label=REFERENCE_SOLVER if request.embedded else "external",
        suite_version=",".join(sorted({task.task.suite_version for task in built})),
        tasks={task.task.id: task.digest for task in built},
        epochs=request.epochs,
        temperature=request.temperature,
        sandbox=backend,
    )
    client = OpenAIChatModel(
        name=model,
        base_url=endpoint,
        api_key=request.api_key or os.environ.get("OPENAI_API_KEY") or "unused",
        price=price,
        retry=RetryPolicy(max_retries=request.max_retries, backoff_s=request.retry_backoff_s),
        temperature=request.temperature,
        connection_slots=threading.Semaphore(request.max_connections or request.concurrency),
        request_timeout_s=request.request_timeout_s,
    )
    client.check()  # before the run folder or the store is touched: a bad endpoint leaves nothing
    db_url = request.db or default_db_url()
    store = open_store(db_url)
    stack.callback(store.close)
    tasks = [task.prepared() for task in built]
    hidden = _hidden_paths(tasks, out, db_url, warnings)
    options = RunOptions(
        work_dir=cache_home() / "attempts",
        concurrency=request.concurrency,
        keep_workspaces=request.keep_workspaces,
        retry_errors=request.retry_errors,
        warnings=warnings,
    )
    slots = threading.Semaphore(request.max_sandbox_commands or (os.cpu_count() or 2))
    settings = SandboxSettings(
        hidden=hidden, command_slots=slots, keep_files=request.keep_workspaces
    )
    sandboxes = open_backend(backend, settings)
    protect_harness()  # the OOM killer takes a sandbox's processes first, never the harness
    sweep_stale_cgroups()  # left by runs killed before they could close their sandboxes
    if sandboxes.confined and not cgroups_available():
        reason = cgroups_unavailable_reason() or "cgroups are not writable here"
        warnings.append(f"no memory, process or disk limits per attempt: {reason}")
    sandboxes.self_test(cache_home() / "self-test")
    runner = Runner(tasks, config, options, client, sandboxes, RunDir(out), store)
    stack.callback(runner.run_dir.unlock)
    return runner
