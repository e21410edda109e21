"""One attempt, start to finish: sandbox, agent loop, clean-state grading, result.

Whatever goes wrong inside an attempt ends as an `AttemptResult` with a typed
failure; nothing here raises into the runner, so one bad attempt never stops
a run. Blame goes to the right party: what the agent's own actions cause
(a resource limit, a change that cannot be taken or applied, tampering) is
`failed` with its type; `error` is kept for the endpoint and the harness. Once the
agent has stopped, judging what it left runs under one rule (`harness.grading.blame.judging`):
an exception there is the agent's `failed/unjudgeable` unless a step of the harness's
own (the sandbox, a trusted file, the trajectory) raised it.
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from harness.agent.loop import run_agent
from harness.agent.trajectory import Trajectory, read_trajectory
from harness.grading.blame import GuardedSandbox, harness_step, judging
from harness.grading.flags import scan
from harness.grading.grade import GradeReport, grade
from harness.grading.memo import GradeMemo
from harness.grading.scoring import (
    MAX_STATE_FILE_CHARS,
    FinalState,
    Records,
    get_grader,
    run_check,
    touched_paths,
)
from harness.kinds.behaviour import low_scores
from harness.model.chat import CURRENT_ATTEMPT, ChatModel
from harness.results import (
    Attempt,
    AttemptResult,
    AttemptTally,
    Failure,
    Score,
    Status,
    TestOutcome,
    Verdict,
)
from harness.run.plan import SandboxPlan
from harness.sandbox import (
    PatchRejected,
    ResourceLimitExceeded,
    Sandbox,
    SandboxBackend,
    SandboxError,
)
from harness.sandbox.baseline import diff_stats
from harness.sandbox.local import remove_tree
from harness.spec import BehaviourVerification, PreparedTask, behaviour_part, graded_by_run


@dataclass
class AttemptEnvironment:
    """What every attempt of a run shares on one machine: the live model client and sandbox
    backend, where scratch folders and trajectories go, and the run's sandbox plan."""

    model: ChatModel
    backend: SandboxBackend
    work_dir: Path  # attempts' scratch folders (hidden from agents)
    run_dir: Path  # trajectories are written under it
    sandbox: SandboxPlan
    grade_memo: GradeMemo | None = None  # an RL environment's, never an evaluation's

    def open_sandbox(self, task: PreparedTask, scratch: Path) -> Sandbox:
        return self.backend.open(task.workspace, scratch / "sandbox", python_env=task.python_env)


def trajectory_path(attempt: Attempt) -> str:
    return f"trajectories/{attempt.task_id}__{attempt.epoch}.jsonl"


def run_attempt(task: PreparedTask, attempt: Attempt, env: AttemptEnvironment) -> AttemptResult:
    started = datetime.now(UTC)
    scratch = env.work_dir / f"{attempt.task_id}__{attempt.epoch}"
    relative = trajectory_path(attempt)
    header = {"task_id": task.id, "epoch": attempt.epoch, "model": env.model.name}
    token = CURRENT_ATTEMPT.set(attempt.key)  # model calls say which attempt made them
    try:
        with Trajectory(env.run_dir / relative, header) as trajectory:
            tally = AttemptTally()
            verdict = _attempt(task, env, scratch, trajectory, tally)
            result = AttemptResult.of(attempt, tally, verdict, started, datetime.now(UTC), relative)
            result.sandbox = env.backend.name  # the backend this attempt really ran on
            trajectory.write("result", result=result.model_dump(mode="json"))
        return result
    finally:
        CURRENT_ATTEMPT.reset(token)


def _attempt(
    task: PreparedTask,
    env: AttemptEnvironment,
    scratch: Path,
    trajectory: Trajectory,
    tally: AttemptTally,
) -> Verdict:
    """How the attempt ended; what it did goes into `tally` as it happens."""
    sandbox: Sandbox | None = None
    try:
        sandbox = env.open_sandbox(task, scratch)
        outcome = run_agent(
            env.model,
            sandbox,
            task.prompt,
            task.limits,
            trajectory,
            system_prompt=task.system_prompt,
            tools=task.tools,
            interruptions=task.interruptions,
            earlier_turns=task.earlier_turns,
        )
        tally.turns, tally.tool_calls, tally.usage = (
            outcome.turns,
            outcome.tool_calls,
            outcome.usage,
        )
        if outcome.failure is not None:
            return _failed(outcome.failure, outcome.message)
        agent_sandbox = GuardedSandbox(sandbox)
        return judging(
            lambda: _judge(task, env, scratch, trajectory, tally, agent_sandbox),
            lambda failure, message: _judge_failed(trajectory, failure, message),
        )
    except ResourceLimitExceeded as limit:
        trajectory.write("limit", message=str(limit))
        return _failed(Failure.RESOURCE_LIMIT, str(limit))
    except PatchRejected as rejected:
        trajectory.write("rejected", message=str(rejected))
        return _failed(Failure.PATCH_REJECTED, str(rejected))
    except Exception as error:  # one broken attempt must not stop the run
        trajectory.write("exception", traceback=traceback.format_exc())
        return _failed(Failure.INFRA_ERROR, f"{type(error).__name__}: {error}")
    finally:
        if sandbox is not None:
            sandbox.close()
        if not env.sandbox.keep_workspaces:
            remove_tree(scratch)


def _judge(
    task: PreparedTask,
    env: AttemptEnvironment,
    scratch: Path,
    trajectory: Trajectory,
    tally: AttemptTally,
    sandbox: Sandbox,
) -> Verdict:
    """The verdict on what the agent left (run under `harness.grading.blame.judging`): its change,
    taken and graded in a clean state, and its behaviour checks' scores."""
    patch = sandbox.diff()
    behaviour = behaviour_part(task.verification)
    files = _final_files(task, sandbox, patch) if behaviour else None
    sandbox.close()  # before grading: its memory and processes are freed
    tally.diff_lines_added, tally.diff_lines_removed = diff_stats(patch)
    tally.flags = scan(patch, task.verification.protected_paths)
    _record(trajectory, "diff", patch=patch, flags=tally.flags)
    verdict = _pytest_verdict(task, patch, env, scratch, trajectory)
    if behaviour is None or files is None:
        assert verdict is not None
        return verdict
    resolved = None if verdict is None else verdict.status is Status.RESOLVED
    state = FinalState(patch=patch, before=files[0], after=files[1], resolved=resolved)
    with harness_step("the trajectory could not be read"):
        records = read_trajectory(trajectory.path)
    scores = _scores(task, behaviour, state, records)
    _record(trajectory, "scores", scores={k: v.model_dump() for k, v in scores.items()})
    final = verdict or _behaviour_verdict(behaviour, scores)
    return final.model_copy(update={"scores": final.scores or scores})  # grading's first


def _scores(
    task: PreparedTask, behaviour: BehaviourVerification, state: FinalState, records: Records
) -> dict[str, Score]:
    """Each behaviour check's score (as `harness.grading.scoring.score_checks`), one check at a time
    under the blame rule: a grader that raises on what the agent left scores 0 with the
    exception as its reason, and the other checks still count."""
    scores: dict[str, Score] = {}
    for check in behaviour.checks:
        with harness_step(f"behaviour grader {check.grader}"):
            get_grader(check.grader)
        score = judging(partial(run_check, task, check, state, records), _zero_score)
        if score is not None:  # None: the check does not apply to this attempt
            scores[check.score_key] = score
    return scores


def _zero_score(failure: Failure, message: str) -> Score | None:
    return Score(value=0.0, reasons=[message])


def _judge_failed(trajectory: Trajectory, failure: Failure, message: str) -> Verdict:
    """The agent's failure found while judging, recorded with its traceback."""
    _record(trajectory, "judging", failure=failure.value, message=message,
            traceback=traceback.format_exc())  # fmt: skip
    return _failed(failure, message)


def _record(trajectory: Trajectory, kind: str, **fields: object) -> None:
    """A trajectory record written while judging: a failure to write is the harness's."""
    with harness_step("the trajectory could not be written"):
        trajectory.write(kind, **fields)


def _pytest_verdict(
    task: PreparedTask, patch: str, env: AttemptEnvironment, scratch: Path, trajectory: Trajectory
) -> Verdict | None:
    """The result fields grading decides, or None for a behaviour-only task."""
    if not graded_by_run(task.verification):
        return None
    if not patch.strip():
        return _failed(Failure.EMPTY_DIFF, "the agent changed nothing")
    fresh = partial(grade, task, patch, env.backend, scratch / "grade", random.Random())
    report = fresh() if env.grade_memo is None else env.grade_memo.grade(task, patch, fresh)
    _record(
        trajectory,
        "grade",
        tests=report.tests,
        canaries_passed=report.canaries_passed,
        dropped=report.dropped,
        output=report.output[-4000:],
    )
    return _graded(report)


def _final_files(
    task: PreparedTask, sandbox: Sandbox, patch: str
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """The touched files before (from the prepared, trusted workspace) and after (read
    through the sandbox, which is still open). None: absent, or not text of a sane size."""
    before: dict[str, str | None] = {}
    after: dict[str, str | None] = {}
    for path in touched_paths(patch):
        original = task.workspace / path
        before[path] = _text(original.read_bytes()) if original.is_file() else None
        try:
            text = sandbox.read(path)
            after[path] = text if len(text) <= MAX_STATE_FILE_CHARS else None
        except SandboxError:  # deleted, or not a plain file
            after[path] = None
    return before, after


def _text(data: bytes) -> str | None:
    if len(data) > MAX_STATE_FILE_CHARS:
        return None
    return data.decode("utf-8", errors="replace")


def _behaviour_verdict(behaviour: BehaviourVerification, scores: dict[str, Score]) -> Verdict:
    """A behaviour-only task is resolved when every check scored at or above its bar."""
    low = low_scores(behaviour, scores)
    if not low:
        return Verdict(status=Status.RESOLVED)
    return _failed(Failure.BEHAVIOUR_FAILED, "; ".join(low))


def _failed(failure: Failure, message: str) -> Verdict:
    return Verdict.failed(failure, message)


def _graded(report: GradeReport) -> Verdict:
    if report.resolved:
        return Verdict(status=Status.RESOLVED, tests=report.tests, scores=report.scores)
    assert report.failure is not None
    failing = sum(outcome is not TestOutcome.PASSED for outcome in report.tests.values())
    message = report.error or f"{failing} of {len(report.tests)} tests did not pass"
    failed = _failed(report.failure, message)
    return failed.model_copy(update={"tests": report.tests, "scores": report.scores})
