"""Gate every checkpoint: serve it, score it through the harness, compare it, record the verdict.

For each complete checkpoint of a training run (`CheckpointGate.gate`), or Hugging
Face-layout folder named `step-N` / `checkpoint-N`:

1. serve it over real HTTP on a free loopback port: `training.serve` in this process, or
   the config's `serve_command` (any OpenAI-compatible server, `training/serve_command.py`);
2. run the configured harness subset through the public API (`cursorbench.api.run`): suite
   tasks and/or behaviour evals, into a run folder under `runs_dir`, written to the leaderboard;
3. tie the run to the training run and step (`SqlStore.attach_checkpoint`);
4. apply the leaderboard's gate (`leaderboard.gate.gate`) against the latest checkpoint promoted
   before it; the decision is stored on the checkpoint. A pass (or an inconclusive result the
   rules accept) promotes the checkpoint. The first checkpoint evaluated has nothing to compare
   to: it is promoted as the `baseline`. A run whose every attempt ended in `error` (nothing
   judged) or runs the gate cannot compare get decision `error` and are not promoted.

All state is in the leaderboard, so a restarted gate (or another machine) knows what was gated
and which checkpoint is best: the latest promoted one (`leaderboard.queries.best_checkpoint`).
A checkpoint already gated is skipped; one whose run was recorded but not gated (a kill in
between) is gated from that run; an evaluation cut off part-way is started again from scratch
(its run folder and database run removed): the server's port is part of the run's config, so
the old run cannot be resumed.

    python -m training.gate watch DIR --db URL [--config gate.yaml] [--training-run NAME]
    python -m training.gate status --db URL --training-run NAME

`watch` gates every complete checkpoint in DIR (a training job writing elsewhere), then keeps
polling for new ones until `--until-step` is gated, or exits at once with `--once`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cursorbench import api
from cursorbench.config import (
    LocalExecutorSpec,
    OpenAIModel,
    RunSpec,
    SandboxSpec,
    SqlStoreSpec,
)
from cursorbench.tasks.suites import suite_options
from harness.errors import CursorBenchError
from harness.run.runner import RunInterrupted
from leaderboard import SqlStore, open_store, queries
from leaderboard.gate import GateError, GateRules, gate
from training.checkpoint import Checkpoint, servable_checkpoints
from training.serve import ModelServer, ServedModel, ServeError
from training.serve_command import CommandServer, ServeCommandError

Log = Callable[[str], None]


def _print(line: str) -> None:
    print(line, flush=True)


class GateConfigError(Exception):
    """A gate config that cannot be used (one line)."""


class GateConfig(BaseModel):
    """What every checkpoint is scored on, how it is served, and the gate's rules."""

    model_config = ConfigDict(extra="forbid")

    suite: str | None = Field(default="smoke", description="A bundled suite: smoke or v1.")
    tasks: list[str] = Field(
        default_factory=list, description="Task ids/globs (of the suite, if given)."
    )
    evals: list[str] = Field(default_factory=list, description="Behaviour evals to run too.")
    eval_split: Literal["all", "curated", "generated"] = Field(
        default="all", description="Which eval scenarios run (the run config's `eval_split`)."
    )
    epochs: int = Field(default=1, ge=1)
    rules: GateRules = Field(default_factory=GateRules)
    sandbox: str = "auto"
    concurrency: int = Field(default=2, ge=1, description="Attempts in flight.")
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=128, ge=1, description="Reply tokens per model call.")
    context_length: int | None = Field(
        default=None, ge=16, description="Prompt + reply tokens served [the model's max_seq_len]."
    )
    request_timeout_s: float = Field(default=300.0, gt=0)
    serve_command: str | None = Field(
        default=None,
        description=(
            "A command serving {path} over the OpenAI API on {port} (also {model}, {host}, "
            "{max_tokens}), e.g. 'vllm serve {path} --port {port} --served-model-name "
            "{model}'; unset: the project's own server, in this process."
        ),
    )
    serve_ready_timeout_s: float = Field(
        default=300.0, gt=0, description="How long the serve command has to get ready."
    )

    def run_spec(self, base_url: str, model: str, out: Path, db_url: str) -> RunSpec:
        """The harness run for one checkpoint, as `cursorbench.api.run` takes it."""
        tasks = suite_options(self.suite, self.tasks) if (self.tasks or not self.evals) else []
        return RunSpec(
            tasks=tasks,
            evals=self.evals,
            eval_split=self.eval_split,
            epochs=self.epochs,
            out=out,
            model=OpenAIModel(
                base_url=base_url,
                name=model,
                temperature=self.temperature,
                max_retries=1,
                retry_backoff_s=0.5,
                request_timeout_s=self.request_timeout_s,
                price_input=0.0,
                price_output=0.0,
            ),
            sandbox=SandboxSpec(kind=self.sandbox),
            executor=LocalExecutorSpec(concurrency=self.concurrency),
            store=SqlStoreSpec(url=db_url),
        )


def load_gate_config(path: Path | None, data: dict[str, Any] | None = None) -> GateConfig:
    """A gate config from a YAML file (or its data), one `GateConfigError` line if bad."""
    where = str(path) if path is not None else "gate config"
    if path is not None:
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise GateConfigError(f"{path}: cannot read: {' '.join(str(error).split())}") from None
    if not isinstance(data, dict):
        raise GateConfigError(f"{where}: a gate config is a mapping")
    try:
        return GateConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "config"
        raise GateConfigError(f"{where}: {field}: {first['msg']}") from None


@dataclass(frozen=True)
class Verdict:
    """One checkpoint's evaluation and gate decision."""

    step: int
    run_id: str
    resolved_rate: float
    decision: str
    baseline_step: int | None
    promoted: bool
    best_step: int | None
    evaluated_now: bool  # false when the leaderboard already held the run

    def line(self) -> str:
        against = f" vs step {self.baseline_step}" if self.baseline_step is not None else ""
        promoted = ", promoted" if self.promoted else ""
        best = f"; best step {self.best_step}" if self.best_step is not None else ""
        again = "" if self.evaluated_now else " (recorded earlier)"
        return (
            f"gate step {self.step}: run {self.run_id[:12]} resolved {self.resolved_rate:.1%}, "
            f"{self.decision}{against}{promoted}{best}{again}"
        )


class CheckpointGate:
    """Gates a training run's checkpoints into one leaderboard; see the module docstring."""

    def __init__(
        self,
        config: GateConfig,
        training_run: str,
        db_url: str,
        runs_dir: Path,
        log: Log = _print,
    ) -> None:
        self.config = config
        self.training_run = training_run
        self.db_url = db_url
        self.runs_dir = runs_dir
        self.log = log
        self.store: SqlStore = open_store(db_url)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> CheckpointGate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- state, all of it in the leaderboard -----------------------------------------------

    def checkpoints(self) -> list[queries.CheckpointState]:
        with self.store.engine.connect() as conn:
            return queries.training_checkpoints(conn, self.training_run)

    def best(self) -> queries.CheckpointState | None:
        return queries.best_checkpoint(self.checkpoints())

    def _state(self, step: int) -> queries.CheckpointState | None:
        return next((s for s in self.checkpoints() if s.step == step), None)

    # --- gating ---------------------------------------------------------------------------

    def gate(self, checkpoint: Checkpoint, step: int | None = None) -> Verdict:
        """Evaluate and gate one complete checkpoint as training step `step` (default: its
        own); a checkpoint already gated is only read back."""
        step = checkpoint.step if step is None else step
        state = self._state(step)
        if state is not None and state.gate_decision is not None and state.run_id is not None:
            verdict = self._verdict(state, evaluated_now=False)
            self.log(verdict.line())
            return verdict
        evaluated_now = state is None or state.run_id is None
        if evaluated_now:
            run_id = self._evaluate(checkpoint, step)
            tokens = checkpoint.state.get("tokens_seen")
            self.store.attach_checkpoint(
                run_id,
                self.training_run,
                step,
                int(tokens) if tokens is not None else None,
                path=str(checkpoint.path.resolve()),
            )
            state = self._state(step)
        assert state is not None and state.run_id is not None
        self._decide(state)
        verdict = self._verdict(self._state(step) or state, evaluated_now)
        self.log(verdict.line())
        return verdict

    def gate_folder(self, folder: Path, step_offset: int = 0) -> list[Verdict]:
        """Gate every complete checkpoint in `folder` not gated yet, by step (each as training
        step `step_offset + its step`)."""
        return [self.gate(c, step_offset + c.step) for c in servable_checkpoints(folder)]

    def _evaluate(self, checkpoint: Checkpoint, step: int) -> str:
        """Serve the checkpoint and score it; returns the harness run's id."""
        out = self.runs_dir / f"step-{step:08d}"
        self._discard_unfinished(out)
        name = f"{self.training_run}-step{step}"
        started = time.monotonic()
        with self._serve(checkpoint, step, name) as (base_url, served_name):
            spec = self.config.run_spec(base_url, served_name, out, self.db_url)
            outcome = api.run(spec, store=self.store)
        summary = outcome.summary
        self.log(
            f"gate step {step}: {summary.finished} attempts, "
            f"{summary.resolved} resolved, {summary.errors} errors "
            f"in {time.monotonic() - started:.1f}s ({out})"
        )
        return outcome.run.id

    @contextmanager
    def _serve(self, checkpoint: Checkpoint, step: int, name: str) -> Iterator[tuple[str, str]]:
        """The checkpoint served for the block: (base URL, model name)."""
        command = self.config.serve_command
        if command is not None:
            log_file = self.runs_dir / f"serve-step-{step:08d}.log"
            try:
                server = CommandServer(
                    command,
                    checkpoint.path.resolve(),
                    name,
                    log_file,
                    max_tokens=self.config.max_tokens,
                    ready_timeout_s=self.config.serve_ready_timeout_s,
                )
                self.log(f"gate step {step}: serving {checkpoint.path} with {server.argv[0]}")
                with server:
                    yield server.base_url, server.model
            except ServeCommandError as error:
                raise GateConfigError(f"cannot serve step {step}: {error}") from None
            return
        try:
            served = ServedModel.load(
                checkpoint.path, name, self.config.context_length, self.config.max_tokens
            )
        except ServeError as error:
            raise GateConfigError(f"cannot serve step {step}: {error}") from None
        self.log(f"gate step {step}: serving {checkpoint.path} as {name!r}")
        with ModelServer(served) as in_process:
            yield in_process.base_url, name

    def _discard_unfinished(self, out: Path) -> None:
        """An evaluation cut off part-way cannot resume (new port, new config): start again."""
        if not out.exists():
            return
        run_file = out / "run.json"
        if run_file.is_file():
            try:
                run_id = json.loads(run_file.read_text())["id"]
                self.store.delete_run(str(run_id))
            except (ValueError, KeyError, TypeError):
                pass
        shutil.rmtree(out)
        self.log(f"discarded an unfinished evaluation in {out}")

    def _decide(self, state: queries.CheckpointState) -> None:
        """Gate `state`'s run against the latest checkpoint promoted before it; store it."""
        assert state.run_id is not None
        earlier = [s for s in self.checkpoints() if s.step < state.step and s.run_id]
        baseline = queries.best_checkpoint(earlier)
        with self.store.engine.connect() as conn:
            figures = queries.run_detail(conn, state.run_id).figures
        judged = int(figures.get("attempts", 0) or 0) - int(figures.get("errors", 0) or 0)
        if judged <= 0:
            reason = "every attempt ended in error: nothing was judged"
            self._record(state, baseline, "error", {"reason": reason}, promoted=False)
        elif baseline is None:
            reason = "the first checkpoint evaluated: promoted as the baseline"
            self._record(state, None, "baseline", {"reason": reason}, promoted=True)
        else:
            assert baseline.run_id is not None
            try:
                decision = gate(state.run_id, baseline.run_id, self.config.rules, self.store)
            except GateError as error:
                self._record(state, baseline, "error", {"reason": str(error)}, promoted=False)
                return
            detail = json.loads(decision.to_json()) | {"baseline_step": baseline.step}
            self._record(
                state, baseline, decision.decision, detail, promoted=decision.exit_code == 0
            )

    def _record(
        self,
        state: queries.CheckpointState,
        baseline: queries.CheckpointState | None,
        decision: str,
        detail: dict[str, Any],
        promoted: bool,
    ) -> None:
        baseline_run = baseline.run_id if baseline is not None else None
        detail = {"baseline_step": baseline.step if baseline else None} | detail
        self.store.record_gate(state.checkpoint_id, baseline_run, decision, detail)
        self.store.promote_checkpoint(state.checkpoint_id, promoted)

    def _verdict(self, state: queries.CheckpointState, evaluated_now: bool) -> Verdict:
        assert state.run_id is not None
        with self.store.engine.connect() as conn:
            figures = queries.run_detail(conn, state.run_id).figures
        best = self.best()
        return Verdict(
            step=state.step,
            run_id=state.run_id,
            resolved_rate=float(figures.get("resolved_rate", 0.0) or 0.0),
            decision=state.gate_decision or "",
            baseline_step=(state.gate_detail or {}).get("baseline_step"),
            promoted=state.promoted,
            best_step=best.step if best else None,
            evaluated_now=evaluated_now,
        )


# --- watching a folder ----------------------------------------------------------------------


def watch(
    gate_: CheckpointGate,
    folder: Path,
    *,
    once: bool = False,
    until_step: int | None = None,
    poll_s: float = 10.0,
    step_offset: int = 0,
) -> list[Verdict]:
    """Gate the complete checkpoints in `folder` as they appear (see the module docstring)."""
    verdicts: list[Verdict] = []
    gated: set[int] = set()
    while True:
        for checkpoint in servable_checkpoints(folder):
            step = step_offset + checkpoint.step
            if step not in gated:
                verdicts.append(gate_.gate(checkpoint, step))
                gated.add(step)
        if once or (until_step is not None and any(step >= until_step for step in gated)):
            return verdicts
        time.sleep(poll_s)


# --- command line -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m training.gate", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    watching = commands.add_parser("watch", help="gate the checkpoints of a folder")
    watching.add_argument("folder", type=Path, help="where a training job writes checkpoints")
    watching.add_argument("--db", required=True, help="the leaderboard's SQLAlchemy URL")
    watching.add_argument("--config", type=Path, help="a gate config (YAML)")
    watching.add_argument("--training-run", help="its name [default: the folder's name]")
    watching.add_argument("--runs-dir", type=Path, help="run folders [default: FOLDER.gate]")
    watching.add_argument("--suite", help="overrides the config's suite")
    watching.add_argument("--tasks", action="append", help="task ids/globs (repeatable)")
    watching.add_argument("--evals", help="behaviour evals, comma-separated")
    watching.add_argument("--sandbox", help="overrides the config's sandbox backend")
    watching.add_argument(
        "--serve-command",
        help="serve each checkpoint with this command: '... {path} ... {port}' "
        "(also {model}, {host}, {max_tokens}) [default: the project's own server]",
    )
    watching.add_argument("--once", action="store_true", help="gate what is there, then exit")
    watching.add_argument("--until-step", type=int, help="exit once this step is gated")
    watching.add_argument("--poll", type=float, default=10.0, help="seconds between looks")
    status = commands.add_parser("status", help="a training run's checkpoints and best one")
    status.add_argument("--db", required=True)
    status.add_argument("--training-run", required=True)
    status.add_argument("--json", action="store_true", dest="as_json")
    return parser


def _watch_command(args: argparse.Namespace) -> int:
    folder: Path = args.folder
    if not folder.is_dir():
        raise GateConfigError(f"{folder}: not a folder")
    config = load_gate_config(args.config, None if args.config else {})
    overrides: dict[str, Any] = {}
    if args.suite is not None:
        overrides["suite"] = args.suite
    if args.tasks:
        overrides["tasks"] = args.tasks
    if args.evals is not None:
        overrides["evals"] = [name for name in args.evals.split(",") if name]
    if args.sandbox is not None:
        overrides["sandbox"] = args.sandbox
    if args.serve_command is not None:
        overrides["serve_command"] = args.serve_command
    if overrides:
        config = load_gate_config(None, config.model_dump() | overrides)
    training_run = args.training_run or folder.resolve().name
    runs_dir = args.runs_dir or folder.resolve().with_name(folder.resolve().name + ".gate")
    with CheckpointGate(config, training_run, args.db, runs_dir) as gate_:
        watch(gate_, folder, once=args.once, until_step=args.until_step, poll_s=args.poll)
        best = gate_.best()
    _print(f"best checkpoint: step {best.step} ({best.path})" if best else "nothing promoted")
    return 0


def _status_command(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    try:
        with store.engine.connect() as conn:
            states = queries.training_checkpoints(conn, args.training_run)
    finally:
        store.close()
    if not states:
        raise GateConfigError(f"no training run {args.training_run!r} in the leaderboard")
    best = queries.best_checkpoint(states)
    if args.as_json:
        data = {
            "training_run": args.training_run,
            "best_step": best.step if best else None,
            "checkpoints": [state.model_dump(mode="json") for state in states],
        }
        _print(json.dumps(data, indent=2))
        return 0
    for state in states:
        mark = " (best)" if best is not None and state.step == best.step else ""
        promoted = "promoted" if state.promoted else "not promoted"
        _print(f"step {state.step}: {state.gate_decision or 'not gated'}, {promoted}{mark}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "watch":
            return _watch_command(args)
        return _status_command(args)
    except (GateConfigError, CursorBenchError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, RunInterrupted):
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
