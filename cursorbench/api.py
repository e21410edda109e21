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
from cursorbench.tasks.loader import tasks_from_options
from cursorbench.tasks.reference import REFERENCE_SOLVER, ReferenceSolver
from cursorbench.tasks.suites import build_many
from cursorbench.tasks.task import HarborSource
from cursorbench.tasks.workspace import BuiltTask
from harness.errors import ConfigError, CursorBenchError
from harness.home import cache_home, harness_dirs, self_test_folder
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
from harness.sandbox import (
    UNCONFINED_WARNING,
    SandboxBackend,
    SandboxUnavailable,
    choose_backend,
    open_backend,
)
from harness.sandbox.bubblewrap import default_hidden_paths
from harness.sandbox.cmdgroups import KILL_FALLBACK_WARNING
from harness.sandbox.cmdgroups import unavailable_reason as command_groups_unavailable_reason
from harness.sandbox.limits import (
    cgroups_available,
    cgroups_unavailable_reason,
    protect_harness,
    sweep_stale_cgroups,
)
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
    are released when `stack` closes."""
    replay = ReplayResponder(spec.model.run_dir) if isinstance(spec.model, ReplayModel) else None
    name = model.name if model is not None else (replay.run.model if replay else spec.model_name())
    assert name is not None
    out = spec.out_dir(name)
    check_out_dir(out)
    task_options, epochs = _tasks_and_epochs(spec, replay)
    suite = tasks_from_options(task_options) if task_options or not spec.evals else []
    # Checked before building (a cold build takes seconds per task): a mistyped backend,
    # price table or database URL, or a database that needs upgrading, fails at once.
    try:
        backend_name = choose_backend(spec.sandbox.kind)
    except SandboxUnavailable as error:
        raise SetupError(str(error)) from None
    warnings = [] if backend_name != "subprocess" else [UNCONFINED_WARNING]
    price, price_warnings = _price(spec, name)
    warnings += price_warnings
    db_url = spec.store.resolved_url() if isinstance(spec.store, SqlStoreSpec) else None
    if store is None and db_url is not None:
        from leaderboard.store import check_store

        check_store(db_url)
    built = build_many(suite)
    scenarios, eval_tasks = _eval_tasks(spec.evals, spec)
    if replay is not None:
        warnings += _replay_warnings(replay.run.config.get("tasks", {}), built)
    if executor is None:  # a cluster is started or joined on first use, not here
        executor = _executor(spec)
        stack.callback(executor.shutdown)
    if model is not None and executor.remote:
        raise ConfigError(
            "an injected model stays in this process; a remote executor rebuilds the model "
            "on its workers from the config's endpoint (give model.base_url instead)"
        )
    label, recorded_url, endpoint = _endpoint(
        spec, built, scenarios, replay, stack, executor.remote
    )
    if model is not None:
        label = "injected"
        recorded_url = model.base_url if isinstance(model, OpenAIChatModel) else "injected://"
    config = RunConfig(
        model=name,
        base_url=recorded_url,
        endpoint_label=label,
        suite_version=_suite_version(built, bool(scenarios)),
        tasks={task.task.id: task.digest for task in built}
        | {task.id: digest for task, digest in eval_tasks},
        epochs=epochs,
        temperature=spec.model.temperature,
        sandbox=backend_name,
    )
    connection = _model_endpoint(spec, endpoint, price, replay is not None)
    if model is None:
        client = connection.client(config)
        client.on_retry = on_retry
        client.check()  # before the run folder or the store is touched: a bad one leaves nothing
        model = client
    if store is None and db_url is not None:
        from leaderboard import open_store  # the leaderboard is the run's store, not the harness's

        store = open_store(db_url)
        stack.callback(store.close)
    tasks = [task.prepared() for task in built] + [task for task, _ in eval_tasks]
    sandbox = SandboxPlan(
        hidden=_hidden_paths(tasks, out, db_url, warnings),
        max_commands=spec.sandbox.max_commands,
        keep_workspaces=spec.sandbox.keep_workspaces,
    )
    sandboxes = _open_sandboxes(backend_name, sandbox, warnings)
    if any(isinstance(b.task.source, HarborSource) for b in built):
        from cursorbench.harbor.canary import checked_tasks  # Harbor tasks only

        tasks, untrusted = checked_tasks(built, tasks, sandboxes, cache_home() / "attempts")
        warnings += untrusted
    plan = RunPlan(
        config=config,
        endpoint=connection,
        sandbox=sandbox,
        work_dir=cache_home() / "attempts",
        retry_errors=spec.retry_errors,
        atif=spec.atif,
        task_categories={t.task.id: t.task.category.value for t in built},
        warnings=tuple(warnings),
    )
    run_dir = stack.enter_context(RunDir(out).holding())
    return Runner(
        plan,
        tasks=tasks,
        model=model,
        backend=sandboxes,
        run_dir=run_dir,
        executor=executor,
        store=store,
    )


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
    from evals.scenario import ScenarioError, load_scenarios
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


def _open_sandboxes(backend: str, sandbox: SandboxPlan, warnings: list[str]) -> SandboxBackend:
    try:
        sandboxes = open_backend(backend, sandbox.settings())
        protect_harness()  # the OOM killer takes a sandbox's processes first, never the harness
        sweep_stale_cgroups()  # left by runs killed before they could close their sandboxes
        if sandboxes.confined and not cgroups_available():
            reason = cgroups_unavailable_reason() or "cgroups are not writable here"
            warnings.append(f"no memory, process or disk limits per attempt: {reason}")
        if sandboxes.confined and (kill_reason := command_groups_unavailable_reason()):
            warnings.append(f"{KILL_FALLBACK_WARNING}: {kill_reason}")
        sandboxes.self_test(self_test_folder())
    except SandboxUnavailable as error:
        raise SetupError(str(error)) from None
    return sandboxes


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
