"""The library entry point: `run(config)` scores a model and returns the run's outcome.

```python
from cursorbench import api
outcome = api.run({"tasks": ["textkit-*"], "model": {"base_url": URL, "name": "m"}})
print(outcome.summary.resolved_rate)
```

`run` takes a `RunSpec` (or its plain data, or a YAML file's path) and,
optionally, an injected model (any `ChatModel`), result store (any
`ResultStore`) or executor (any `Executor`); what is not injected is built
from the config. `prepare` resolves the spec into one `harness.run.plan.RunPlan`
(what the runner, the executor and any remote worker share) and hands back the
ready `Runner` (the CLI uses it to show progress). This is the only place a run
is wired together: the CLI and the tests come through here.

Order matters and is kept: tasks are built and the endpoint is checked before
anything is written (a bad endpoint leaves no run folder and no database
row); then the store opens, the run folder is locked (by the `ExitStack`
given, its one owner, until the stack closes) and the runner resumes or
starts the run. Every problem a user can fix is a one-line `CursorBenchError`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cursorbench.config import (
    OpenAIModel,
    RayExecutorSpec,
    ReferenceModel,
    ReplayModel,
    RunSpec,
    SqlStoreSpec,
    load_spec,
    validate_spec,
)
from cursorbench.harbor.canary import checked_tasks
from cursorbench.tasks.loader import tasks_from_options
from cursorbench.tasks.reference import REFERENCE_SOLVER, ReferenceSolver
from cursorbench.tasks.suites import build_many
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import BuiltTask
from harness.errors import ConfigError, CursorBenchError
from harness.home import cache_home, harness_dirs
from harness.model.chat import KEY_NOT_GIVEN, ChatModel, OpenAIChatModel, RetryListener, RetryPolicy
from harness.model.openai_server import OpenAIServer, Responder
from harness.model.pricing import Price, load_price_table, price_for, unknown_price_warning
from harness.model.replay import ReplayResponder
from harness.run.executor import Executor, LocalExecutor
from harness.run.plan import ModelEndpoint, RunConfig, RunPlan, SandboxPlan
from harness.run.rundir import RunDir
from harness.run.runner import Listener, RunInterrupted, Runner
from harness.run.runner import RunOutcome as RunOutcome
from harness.run.store import ResultStore
from harness.sandbox import SandboxBackend, SandboxUnavailable, choose_backend
from harness.sandbox.bubblewrap import default_hidden_paths
from harness.sandbox.ready import Ready, open_ready
from harness.spec import PreparedTask

EMBEDDED_BASE_URL = "embedded://reference-solver"


class SetupError(CursorBenchError):
    """This machine cannot run what was asked (e.g. the sandbox backend is missing)."""


def as_spec(config: RunSpec | Mapping[str, Any] | str | Path) -> RunSpec:
    """A `RunSpec` from itself, its plain data, or the path of a YAML file."""
    if isinstance(config, RunSpec):
        return config
    if isinstance(config, str | Path):
        return load_spec(Path(config))
    return validate_spec(dict(config))


def run(
    config: RunSpec | Mapping[str, Any] | str | Path,
    *,
    model: ChatModel | None = None,
    store: ResultStore | None = None,
    executor: Executor | None = None,
    on_result: Listener | None = None,
    on_retry: RetryListener | None = None,
) -> RunOutcome:
    """Runs (or resumes) a whole run and returns its outcome. Raises `CursorBenchError` for
    anything the caller can fix, `RunInterrupted` on Ctrl-C (finished attempts are kept)."""
    spec = as_spec(config)
    with ExitStack() as stack:
        runner = prepare(
            spec, stack, model=model, store=store, executor=executor, on_retry=on_retry
        )
        try:
            outcome = runner.execute(on_result)
        except RunInterrupted:
            stop_local_work()
            raise
    judge(spec, runner.run_dir.path)
    return outcome


def judge(spec: RunSpec, run_dir: Path) -> dict[str, float]:
    """With `judge_base_url`, the LLM judge (evals.judge) judges every eval attempt of the
    finished run: `RUN_DIR/judged.jsonl` (model, prompt, seeds and every vote, replayable
    with `python -m evals.judge RUN_DIR --replay`), never `attempts.jsonl`. The judged
    means per eval, under `NAME:judged`; {} without a judge."""
    if spec.judge_base_url is None or spec.judge_model is None:
        return {}
    from evals.judge import judge_run, means

    try:
        judged = judge_run(
            run_dir,
            spec.judge_base_url,
            spec.judge_model,
            spec.judge_votes,
            spec.eval_seed,
            spec.judge_seed,
        )
    except OSError as error:  # the judge's endpoint failed: the run itself stands
        raise SetupError(f"--judge-base-url {spec.judge_base_url}: {error}") from None
    return means(judged)


def stop_local_work() -> None:
    """Kills sandboxed commands still running and closes open sandboxes (an interrupted run:
    their mounts and cgroups would outlive the process)."""
    from harness.sandbox.local import close_open_sandboxes
    from harness.sandbox.process import kill_running_commands

    kill_running_commands()
    close_open_sandboxes()


def prepare(
    spec: RunSpec,
    stack: ExitStack,
    *,
    model: ChatModel | None = None,
    store: ResultStore | None = None,
    executor: Executor | None = None,
    on_retry: RetryListener | None = None,
) -> Runner:
    """A runner ready to execute; servers, the store, the executor and the run folder's lock
    are released when `stack` closes. Each step below is one function, in this order."""
    replay = ReplayResponder(spec.model.run_dir) if isinstance(spec.model, ReplayModel) else None
    name = _model_name(spec, model, replay)
    out = spec.out_dir(name)
    check_out_dir(out)
    task_options, epochs = _tasks_and_epochs(spec, replay)
    suite = tasks_from_options(task_options) if task_options or not spec.evals else []
    setup = _check_setup(spec, name, check_db=store is None)
    tasks = _build(spec, suite, replay)
    executor = executor if executor is not None else _own_executor(spec, stack)
    _refuse_injected_model_on_remote(model, executor)
    config, connection = _configure(
        spec, name, epochs, setup, tasks, model, replay, stack, executor
    )
    if model is None:
        model = _checked_client(config, connection, on_retry)
    if store is None and setup.db_url is not None:
        store = _open_store(setup.db_url, stack)
    sandbox, hidden_warnings = _sandbox_plan(spec, tasks, out, setup.db_url)
    sandboxes, ready_warnings = _open_sandboxes(setup.backend, sandbox)
    prepared, untrusted = _trusted_tasks(tasks, sandboxes)
    warnings = [*ready_warnings, *setup.warnings, *tasks.warnings, *hidden_warnings, *untrusted]
    plan = _run_plan(spec, config, connection, sandbox, tasks, warnings)
    run_dir = stack.enter_context(RunDir(out).holding())
    return Runner(
        plan,
        tasks=prepared,
        model=model,
        backend=sandboxes,
        run_dir=run_dir,
        executor=executor,
        store=store,
    )


@dataclass(frozen=True)
class _Setup:
    """What `prepare` checks before building (a cold build takes seconds per task): the
    backend, the price and the database, with the price's warnings."""

    backend: str
    price: Price | None
    db_url: str | None
    warnings: list[str]


@dataclass(frozen=True)
class _Tasks:
    """The run's tasks: built ones, eval scenarios with their prepared tasks, and what a
    replay's recording says of them."""

    built: list[BuiltTask]
    scenarios: list[Any]
    evals: list[tuple[PreparedTask, str]]
    warnings: list[str]
    prepared: list[PreparedTask]  # the built tasks' and the evals', in that order


def _model_name(spec: RunSpec, model: ChatModel | None, replay: ReplayResponder | None) -> str:
    name = model.name if model is not None else (replay.run.model if replay else spec.model_name())
    assert name is not None
    return name


def _check_setup(spec: RunSpec, name: str, check_db: bool) -> _Setup:
    """A mistyped backend, price table or database URL, or a database that needs upgrading,
    fails here, at once."""
    try:
        backend = choose_backend(spec.sandbox.kind)
    except SandboxUnavailable as error:
        raise SetupError(str(error)) from None
    price, warnings = _price(spec, name)
    db_url = spec.store.resolved_url() if isinstance(spec.store, SqlStoreSpec) else None
    if check_db and db_url is not None:
        from leaderboard.store import check_store

        check_store(db_url)
    return _Setup(backend, price, db_url, warnings)


def _build(spec: RunSpec, suite: list[Task], replay: ReplayResponder | None) -> _Tasks:
    built = build_many(suite)
    scenarios, eval_tasks = _eval_tasks(spec.evals, spec)
    warnings = [] if replay is None else _replay_warnings(replay.run.config.get("tasks", {}), built)
    prepared = [task.prepared() for task in built] + [task for task, _ in eval_tasks]
    return _Tasks(built, scenarios, eval_tasks, warnings, prepared)


def _own_executor(spec: RunSpec, stack: ExitStack) -> Executor:
    """The configured executor, shut down with `stack`; a cluster is started or joined on
    first use, not here."""
    executor = _executor(spec)
    stack.callback(executor.shutdown)
    return executor


def _refuse_injected_model_on_remote(model: ChatModel | None, executor: Executor) -> None:
    if model is not None and executor.remote:
        raise ConfigError(
            "an injected model stays in this process; a remote executor rebuilds the model "
            "on its workers from the config's endpoint (give model.base_url instead)"
        )


def _configure(
    spec: RunSpec,
    name: str,
    epochs: int,
    setup: _Setup,
    tasks: _Tasks,
    model: ChatModel | None,
    replay: ReplayResponder | None,
    stack: ExitStack,
    executor: Executor,
) -> tuple[RunConfig, ModelEndpoint]:
    """The run's recorded config and the endpoint its model is reached at."""
    label, recorded_url, endpoint = _endpoint(
        spec, tasks.built, tasks.scenarios, replay, stack, executor.remote
    )
    if model is not None:
        label = "injected"
        recorded_url = model.base_url if isinstance(model, OpenAIChatModel) else "injected://"
    config = RunConfig(
        model=name,
        base_url=recorded_url,
        endpoint_label=label,
        suite_version=_suite_version(tasks.built, bool(tasks.scenarios)),
        tasks={task.task.id: task.digest for task in tasks.built}
        | {task.id: digest for task, digest in tasks.evals},
        epochs=epochs,
        temperature=spec.model.temperature,
        sandbox=setup.backend,
    )
    return config, _model_endpoint(spec, endpoint, setup.price, replay is not None)


def _checked_client(
    config: RunConfig, connection: ModelEndpoint, on_retry: RetryListener | None
) -> ChatModel:
    """The model's client, checked before the run folder or the store is touched: a bad
    endpoint leaves nothing behind."""
    client = connection.client(config)
    client.on_retry = on_retry
    client.check()
    return client


def _open_store(db_url: str, stack: ExitStack) -> ResultStore:
    from leaderboard import open_store  # the leaderboard is the run's store, not the harness's

    store = open_store(db_url)
    stack.callback(store.close)
    return store


def _sandbox_plan(
    spec: RunSpec, tasks: _Tasks, out: Path, db_url: str | None
) -> tuple[SandboxPlan, list[str]]:
    """What every sandbox of the run shares, with the warnings of paths left visible."""
    warnings: list[str] = []
    plan = SandboxPlan(
        hidden=_hidden_paths(tasks.prepared, out, db_url, warnings),
        max_commands=spec.sandbox.max_commands,
        keep_workspaces=spec.sandbox.keep_workspaces,
    )
    return plan, warnings


def _open_sandboxes(backend: str, sandbox: SandboxPlan) -> Ready:
    try:
        return open_ready(backend, sandbox.settings())
    except SandboxUnavailable as error:
        raise SetupError(str(error)) from None


def _run_plan(
    spec: RunSpec,
    config: RunConfig,
    connection: ModelEndpoint,
    sandbox: SandboxPlan,
    tasks: _Tasks,
    warnings: list[str],
) -> RunPlan:
    return RunPlan(
        config=config,
        endpoint=connection,
        sandbox=sandbox,
        work_dir=cache_home() / "attempts",
        retry_errors=spec.retry_errors,
        atif=spec.atif,
        task_categories={t.task.id: t.task.category.value for t in tasks.built},
        warnings=tuple(warnings),
    )


def _trusted_tasks(run: _Tasks, sandboxes: SandboxBackend) -> tuple[list[PreparedTask], list[str]]:
    """The tasks to run, with the warnings of those whose files could not be trusted."""
    # each Harbor task's canary run is decided by its import check (no other task has one)
    tasks, warnings = checked_tasks(run.built, run.prepared, sandboxes, cache_home() / "attempts")
    return tasks, warnings


def _tasks_and_epochs(spec: RunSpec, replay: ReplayResponder | None) -> tuple[list[str], int]:
    """The task options and epochs asked for; a replay's default: what the recording ran."""
    task_options, epochs = spec.tasks, spec.epochs
    if replay is not None:
        recorded = replay.run.config.get("tasks", {})
        task_options = task_options or sorted(recorded if isinstance(recorded, dict) else {})
        epochs = epochs or int(str(replay.run.config.get("epochs", 1)))
    return task_options, epochs or 1


def _suite_version(built: list[BuiltTask], evals: bool) -> str:
    return ",".join(
        sorted({task.task.suite_version for task in built} | ({"evals"} if evals else set()))
    )


def _model_endpoint(
    spec: RunSpec, base_url: str, price: Price | None, replay: bool
) -> ModelEndpoint:
    return ModelEndpoint(
        base_url=base_url,
        api_key=_api_key(spec),
        price=price,
        retry=RetryPolicy(max_retries=spec.model.max_retries, backoff_s=spec.model.retry_backoff_s),
        request_timeout_s=spec.model.request_timeout_s,
        max_connections=spec.model.max_connections or spec.executor.concurrency,
        attempt_header=replay,
    )


def _executor(spec: RunSpec) -> Executor:
    if isinstance(spec.executor, RayExecutorSpec):
        from harness.run.ray_executor import RayExecutor

        ray = spec.executor
        return RayExecutor(
            concurrency=ray.concurrency,
            address=ray.address,
            num_cpus=ray.num_cpus,
            cpus_per_attempt=ray.cpus_per_attempt,
            object_store_mb=ray.object_store_mb,
            max_task_retries=ray.max_task_retries,
        )
    return LocalExecutor(spec.executor.concurrency)


def _eval_tasks(
    names: list[str], spec: RunSpec
) -> tuple[list[Any], list[tuple[PreparedTask, str]]]:
    """The scenarios of the named evals ("all": every eval) and their prepared tasks."""
    if not names:
        return [], []
    from evals import EVALS
    from evals.catalogue import load_scenarios
    from evals.scenario import ScenarioError
    from evals.scenario import prepare as prepare_scenario

    wanted = list(EVALS) if names == ["all"] else names
    try:
        scenarios = load_scenarios(
            wanted, split=spec.eval_split, seed=spec.eval_seed, sample=spec.eval_sample
        )
    except ScenarioError as error:
        raise ConfigError(f"--evals: {error}") from None
    return scenarios, [prepare_scenario(scenario) for scenario in scenarios]


def _reference(built: list[BuiltTask], scenarios: list[Any]) -> Responder:
    """The embedded endpoint: the reference solver, and for eval scenarios the
    well-behaved scripted agent (the reference behaviour)."""
    solver = ReferenceSolver(built)
    if not scenarios:
        return solver
    from evals.agents import ScenarioAgent

    return ScenarioAgent(scenarios, "well", or_else=solver)


def _endpoint(
    spec: RunSpec,
    built: list[BuiltTask],
    scenarios: list[Any],
    replay: ReplayResponder | None,
    stack: ExitStack,
    remote: bool,
) -> tuple[str, str, str]:
    """(label, the base URL recorded in the config, the URL requests go to)."""
    if isinstance(spec.model, OpenAIModel):
        return "external", spec.model.base_url, spec.model.base_url
    responder: Responder
    if replay is not None:
        responder = replay
        label, recorded = "replay", f"replay://{spec.model.run_dir.resolve()}"  # type: ignore[union-attr]
    else:
        assert isinstance(spec.model, ReferenceModel)
        responder = _reference(built, scenarios)
        label, recorded = REFERENCE_SOLVER, EMBEDDED_BASE_URL
    host = "127.0.0.1"
    if remote and isinstance(spec.executor, RayExecutorSpec) and spec.executor.address:
        host = _reachable_host()  # workers on other machines must reach it
    server = stack.enter_context(OpenAIServer(responder, host=host))
    return label, recorded, server.base_url


def _reachable_host() -> str:
    try:
        import ray

        return str(ray.util.get_node_ip_address())
    except Exception:
        return "0.0.0.0"


def _api_key(spec: RunSpec) -> str:
    key = spec.model.api_key if isinstance(spec.model, OpenAIModel) else None
    return key or os.environ.get("OPENAI_API_KEY") or KEY_NOT_GIVEN


def check_out_dir(out: Path) -> None:
    """Refuses an `--out` that cannot become a run folder, leaving nothing behind: it must be
    a folder or not exist yet, and the nearest folder that exists must take a new folder."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    nearest = next(path for path in [out, *out.parents] if path.exists())
    if not nearest.is_dir():
        raise ConfigError(f"--out {out}: {nearest} is not a folder")
    try:  # os.access says yes to root even where nothing can be created (/proc, read-only)
        probe = Path(tempfile.mkdtemp(prefix=".cursorbench-probe-", dir=nearest))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigError(f"--out {out}: cannot create a folder in {nearest} ({reason})") from None
    probe.rmdir()


def _price(spec: RunSpec, model: str) -> tuple[Price | None, list[str]]:
    settings = spec.model
    if settings.price_input is not None or settings.price_output is not None:
        return Price(input=settings.price_input or 0, output=settings.price_output or 0), []
    price = price_for(model, load_price_table(settings.prices))
    if price is None:
        return None, [unknown_price_warning(model)]
    return price, []


def _replay_warnings(recorded: Any, built: list[BuiltTask]) -> list[str]:
    recorded = recorded if isinstance(recorded, dict) else {}
    changed = [
        t.task.id for t in built if t.task.id in recorded and recorded[t.task.id] != t.digest
    ]
    missing = [t.task.id for t in built if t.task.id not in recorded]
    warnings = []
    if changed:
        warnings.append(f"tasks changed since the recording: {', '.join(changed)}")
    if missing:
        warnings.append(f"tasks not in the recording (they will diverge): {', '.join(missing)}")
    return warnings


def _hidden_paths(
    tasks: list[PreparedTask], out: Path, db_url: str | None, warnings: list[str]
) -> tuple[Path, ...]:
    hidden = [*default_hidden_paths(), *harness_dirs(), out.resolve()]
    if db_url is not None and db_url.startswith("sqlite:///"):
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
