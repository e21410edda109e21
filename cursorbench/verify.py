"""Checking a run folder someone else made (`cursorbench runs verify RUN_DIR`).

A run folder is plain files: whoever hands one over could have edited its
`attempts.jsonl` or `summary.json`. Verification trusts neither. It recomputes the summary
from the recorded attempts, then replays the run offline (`harness/model/replay.py`: the
recorded model replies served back over HTTP through the same agent loop, sandboxes and
grading on this machine's build of each task) into a folder of its own, and compares every
attempt's verdict with the recorded one. A replay whose tool results differ from the
recording diverges, so a trajectory edited to hide what really happened fails too.

Before replaying, the folder must be one sealed record (`provenance`): run.json's plan
(`RunConfig`: tasks with their digests, epochs, sandbox) matches its config hash and its own
identity fields; the attempts recorded are exactly the (task, epoch) pairs planned; every
attempt ran on the sandbox run.json names (each result says which backend ran it, from the
harness, `AttemptResult.sandbox`); summary.json adds up and names the same run; and the seal
(`harness.run.seal`) matches the files. The replay then runs on the recorded backend and must
give back exactly the planned attempts, on tasks whose digests here are the recorded ones;
a replay that diverges or cannot run at all is a mismatch, never a pass.

What it cannot tell: a trajectory that is wholly made up but self-consistent, e.g. replies
written by a person who knew the answer, replays to the same verdicts. It shows that the
verdicts follow from the recorded replies, not who wrote them. A folder rewritten wholesale
and consistently (plan, attempts, trajectories, seal) into a smaller run is a run of fewer
tasks: the gate and the leaderboard compare it only with runs of the same tasks.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import CursorBenchError
from harness.model.replay import DIVERGED_MESSAGE
from harness.results import AttemptResult, RunInfo, Status, is_confined, tamper_evident
from harness.run.plan import RunConfig
from harness.run.rundir import ATTEMPTS_FILE, RUN_FILE, RunDir, RunDirError
from harness.run.seal import seal_problems
from harness.run.summary import RunSummary, summarize

# What the grading on this machine must reproduce. Wall times and costs (prices change)
# are left out; token counts are the recorded ones in a replay, so they must match too.
SUMMARY_FIGURES = (
    "planned",
    "finished",
    "complete",
    "attempts",
    "resolved",
    "failed",
    "errors",
    "failures",
    "per_task",
    "turns",
)


class Mismatch(BaseModel):
    """One figure that the files or the replay do not bear out."""

    where: str  # "summary" or "TASK#EPOCH"
    field: str
    recorded: str
    found: str


class Verification(BaseModel):
    run_dir: str
    replay_dir: str
    attempts: int
    replayed: int
    mismatches: list[Mismatch]
    warnings: list[str] = []

    @property
    def verified(self) -> bool:
        return not self.mismatches and self.replayed == self.attempts


def _shown(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mismatch(where: str, field: str, recorded: Any, found: Any) -> Mismatch:
    return Mismatch(where=where, field=field, recorded=_shown(recorded), found=_shown(found))


def verdict(result: AttemptResult) -> dict[str, Any]:
    """What a replay must give again for an attempt."""
    return {
        "status": result.status.value,
        "failure": result.failure.value if result.failure else None,
        "tests": {name: outcome.value for name, outcome in sorted(result.tests.items())},
        "scores": {name: round(score.value, 6) for name, score in sorted(result.scores.items())},
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "diff_lines": (result.diff_lines_added, result.diff_lines_removed),
        "tokens": (result.usage.tokens_in, result.usage.tokens_out),
    }


def compare_attempts(
    recorded: dict[str, AttemptResult], replayed: dict[str, AttemptResult]
) -> list[Mismatch]:
    """Per attempt of the recording: each field of its verdict the replay gives otherwise,
    or that the replay did not give it at all."""
    mismatches = []
    for key, result in sorted(recorded.items()):
        again = replayed.get(key)
        if again is None:
            mismatches.append(_mismatch(key, "attempt", "finished", "not replayed"))
            continue
        if DIVERGED_MESSAGE in (again.error or ""):  # even where the recording errored too
            mismatches.append(_mismatch(key, "replay", "replayed", again.error))
        before, after = verdict(result), verdict(again)
        mismatches += [
            _mismatch(key, field, value, after[field])
            for field, value in before.items()
            if after[field] != value
        ]
    return mismatches


def compare_summary(
    summary: RunSummary | None, results: list[AttemptResult], planned: int
) -> list[Mismatch]:
    """The figures of summary.json that the recorded attempts do not add up to."""
    if summary is None:
        return [_mismatch("summary", "summary.json", "missing or unreadable", "-")]
    counted = summarize(results, planned).model_dump(mode="json")
    stated = summary.model_dump(mode="json")
    mismatches = [
        _mismatch("summary", name, stated[name], counted[name])
        for name in SUMMARY_FIGURES
        if stated[name] != counted[name]
    ]
    if abs(stated["resolved_rate"] - counted["resolved_rate"]) > 1e-9:
        rates = stated["resolved_rate"], counted["resolved_rate"]
        mismatches.append(_mismatch("summary", "resolved_rate", *rates))
    return mismatches


def current_digests(task_ids: Iterable[str]) -> dict[str, set[str]]:
    """Task id -> the digests of this machine's bundled tasks of that id (only the ids given:
    a suite's task file is named by its task's id, so only those files are read)."""
    from cursorbench.tasks.loader import TaskFileError, bundled_suites, load_task, task_files
    from cursorbench.tasks.workspace import task_digest

    wanted = set(task_ids)
    found: dict[str, set[str]] = {}
    for suite in bundled_suites().values():
        for path in task_files(suite):
            if path.stem not in wanted:
                continue
            try:
                task = load_task(path)
            except TaskFileError:
                continue  # a broken task file is no task to compare with
            found.setdefault(task.id, set()).add(task_digest(task))
    return found


def recorded_attempts(run_dir: Path) -> dict[str, AttemptResult]:
    """The run folder's finished attempts; a folder with none cannot be verified."""
    found = RunDir(run_dir).finished()
    if not found:
        raise RunDirError(f"{run_dir}: no finished attempts to verify")
    return found


def recorded_run(run_dir: Path) -> RunInfo:
    """The folder's run.json (a folder without one is bad input, exit 2)."""
    run = RunDir(run_dir).existing_run()
    if run is None:
        raise RunDirError(f"{run_dir}: not a run folder (no {RUN_FILE})")
    return run


def recorded_plan(run: RunInfo) -> RunConfig | None:
    """The plan run.json holds, or None when it holds none this code reads."""
    try:
        return RunConfig.model_validate(run.config)
    except ValidationError:
        return None


def planned_keys(config: RunConfig) -> set[str]:
    """Every (task, epoch) the plan is made of, as attempt keys."""
    return {f"{task}#{epoch}" for task in config.tasks for epoch in range(config.epochs)}


def compare_run(run: RunInfo, config: RunConfig | None) -> list[Mismatch]:
    """What in run.json does not agree with the plan it holds (edited by hand)."""
    if config is None:
        return [_mismatch("run", "config", "a run plan", "not readable as one")]
    facts = {
        "config_hash": (run.config_hash, config.digest()),
        "sandbox": (run.sandbox, config.sandbox),
        "confined": (run.confined, is_confined(config.sandbox)),
        "model": (run.model, config.model),
        "suite_version": (run.suite_version, config.suite_version),
    }
    return [
        _mismatch("run", name, stated, implied)
        for name, (stated, implied) in facts.items()
        if stated != implied
    ]


def compare_keys(planned: set[str], found: set[str], what: str) -> list[Mismatch]:
    """Each planned attempt `what` (recorded, replayed) lacks, and each it has unplanned."""
    return [
        *(_mismatch(key, "attempt", "planned", f"not {what}") for key in sorted(planned - found)),
        *(_mismatch(key, "attempt", what, "not planned") for key in sorted(found - planned)),
    ]


def compare_sandboxes(
    run: RunInfo, results: dict[str, AttemptResult], what: str = "recorded"
) -> list[Mismatch]:
    """Attempts that did not run on the backend run.json names. An attempt that errored
    before any sandbox (a lost remote job) names none; it resolved nothing."""
    return [
        _mismatch(key, "sandbox", run.sandbox, f"{result.sandbox or 'none'} ({what})")
        for key, result in sorted(results.items())
        if result.sandbox != run.sandbox
        and not (result.sandbox is None and result.status is Status.ERROR)
    ]


def compare_identity(run: RunInfo, summary: RunSummary | None) -> list[Mismatch]:
    """summary.json's identity fields that name another run than run.json."""
    if summary is None:
        return []
    facts = {
        "run_id": (summary.run_id, run.id),
        "model": (summary.model, run.model),
        "sandbox": (summary.sandbox, run.sandbox),
        "confined": (summary.confined, run.confined),
    }
    return [
        _mismatch("summary", name, stated, of_run)
        for name, (stated, of_run) in facts.items()
        if stated is not None and stated != of_run
    ]


def compare_digests(recorded: dict[str, str], current: dict[str, str]) -> list[Mismatch]:
    """Tasks whose content here differs from what the run ran (same id, other digest)."""
    return [
        _mismatch(task, "digest", digest, current.get(task, "no such task here"))
        for task, digest in sorted(recorded.items())
        if current.get(task) != digest
    ]


def compare_tamper_evidence(recorded: list[str], replayed: list[str]) -> list[Mismatch]:
    """run.json's warnings must still say what the replay's say of its verdicts: a run whose
    tasks give no tamper-evident verdicts here (`NOT_TAMPER_EVIDENT`) cannot have lost that
    warning, which the leaderboard and the gate read."""
    if tamper_evident(recorded) and not tamper_evident(replayed):
        return [_mismatch("run", "warnings", "tamper-evident", "not tamper-evident (replayed)")]
    return []


def provenance(run_dir: Path) -> tuple[RunInfo, dict[str, AttemptResult], list[Mismatch]]:
    """run.json, the attempts and what in the folder does not agree, before any replay."""
    recorded = recorded_attempts(run_dir)
    run = recorded_run(run_dir)
    config = recorded_plan(run)
    summary = RunDir(run_dir).summary()
    planned = planned_keys(config) if config else set(recorded)
    mismatches = [
        *(_mismatch(where, "seal", "sealed", what) for where, what in
          seal_problems(run_dir, RUN_FILE, ATTEMPTS_FILE)),
        *compare_run(run, config),
        *compare_keys(planned, set(recorded), "recorded"),
        *compare_sandboxes(run, recorded),
        *compare_identity(run, summary),
        *compare_summary(summary, list(recorded.values()), len(planned)),
    ]  # fmt: skip
    return run, recorded, mismatches


def replay_mismatches(
    run: RunInfo,
    recorded: dict[str, AttemptResult],
    replay_dir: Path,
    sandbox: str,
    concurrency: int,
    run_dir: Path,
) -> tuple[dict[str, AttemptResult], list[Mismatch], list[str]]:
    """The replay's attempts, what it does not bear out, and its warnings."""
    from cursorbench import api
    from cursorbench.config import validate_spec

    spec = validate_spec(
        {
            "out": str(replay_dir),
            "sandbox": {"kind": run.sandbox if sandbox == "auto" else sandbox},
            "executor": {"kind": "local", "concurrency": concurrency},
            "model": {"kind": "replay", "run_dir": str(run_dir)},
            "store": {"kind": "none"},  # a check, not a run for the leaderboard
        }
    )
    try:
        outcome = api.run(spec)
    except CursorBenchError as error:  # the replay could not run: nothing is borne out
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        return {}, [_mismatch("replay", "run", "replayed", reason)], []
    replayed = {result.key: result for result in outcome.results}
    config = recorded_plan(run)
    planned = planned_keys(config) if config else set(recorded)
    current = outcome.run.config.get("tasks")
    digests = current if isinstance(current, dict) else {}
    mismatches = [
        *compare_keys(planned, set(replayed), "replayed"),
        *compare_digests(config.tasks if config else {}, digests),
        *compare_sandboxes(run, replayed, "replayed"),
        *compare_tamper_evidence(run.warnings, outcome.run.warnings),
        *compare_attempts(recorded, replayed),
    ]  # fmt: skip
    return replayed, mismatches, [*outcome.run.warnings, *outcome.store_warnings]


def verify_run(
    run_dir: Path, replay_dir: Path, sandbox: str = "auto", concurrency: int = 2
) -> Verification:
    """Checks `run_dir` is one sealed record, replays it into `replay_dir` on its recorded
    backend [or `sandbox`] and compares (see the module docstring). The replay folder must
    be new or empty: a replay folder that came with the run could hold forged results that
    the replay would resume instead of grading anew."""
    if replay_dir.exists() and (not replay_dir.is_dir() or any(replay_dir.iterdir())):
        raise RunDirError(f"{replay_dir}: the replay needs a new or empty folder (--out)")
    replay_dir.mkdir(parents=True, exist_ok=True)  # verification.json goes there, replayed or not
    run, recorded, mismatches = provenance(run_dir)
    replayed, found, warnings = replay_mismatches(
        run, recorded, replay_dir, sandbox, concurrency, run_dir
    )
    return Verification(
        run_dir=str(run_dir),
        replay_dir=str(replay_dir),
        attempts=len(recorded),
        replayed=sum(key in replayed for key in recorded),
        mismatches=[*mismatches, *found],
        warnings=warnings,
    )
