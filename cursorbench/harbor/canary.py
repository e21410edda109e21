"""The import check of an imported Harbor task's canary run (harness/kinds/harbor_kind.py).

A Harbor verifier runs the code under test in its own processes, so that code can force the
reward (write the reward file, make the test runner report success). Where the task's tests
are Python test files, grading runs the verifier a second time on the same tree with
those tests turned into canaries in place (`canary_files`: each test that can carry one
gets an expected value changed, under its own name, so any honest tree fails it); a
canary run that still reaches `min_reward` is tampering. That holds only if the canary
run really fails on honest trees: test.sh may not run those files, or its reward may not
depend on them. So before a run, each Harbor task
is checked once on its own solution (`solution/solve.sh`), per backend, cached in its
build folder:

- the verifier must resolve on the solution, and the canary run must not;
- then the task gets its canary run (`canary = True`); else none, with the reason
  (`canary_note`), and the run carries a `NOT_TAMPER_EVIDENT` warning, so the leaderboard
  and the gate treat it as they treat an unconfined run.

So an honest solution is never punished: grading plants the very canaries (one draw per
task, seeded by its id) that the check tried on the solution.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from cursorbench.tasks.sources.harbor import SOLUTION_HOME, solve_command
from cursorbench.tasks.workspace import BuiltTask
from harness.kinds.harbor_kind import (
    HarborVerification,
    VerifierRun,
    canary_files,
    reward_of,
    run_verifier,
)
from harness.results import NOT_TAMPER_EVIDENT
from harness.sandbox.protocol import SandboxBackend, SandboxError
from harness.spec import PreparedTask

CHECK_VERSION = 1
CHECK_FILE = "canary-check-{backend}.json"


def canary_finding(built: BuiltTask, backend: SandboxBackend, scratch: Path) -> tuple[bool, str]:
    """(whether the task gets a canary run, why): the import check, cached per backend."""
    cache = built.root / CHECK_FILE.format(backend=backend.name)
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("version") == CHECK_VERSION and data.get("digest") == built.digest:
            return bool(data["canary"]), str(data["note"])
    except (OSError, ValueError, KeyError):
        pass
    canary, note = _check(built, backend, scratch / f"canary-check-{uuid.uuid4().hex[:8]}")
    record = {"version": CHECK_VERSION, "digest": built.digest, "canary": canary, "note": note}
    staging = cache.with_name(f"{cache.name}.{uuid.uuid4().hex[:8]}.tmp")
    staging.write_text(json.dumps(record), encoding="utf-8")
    os.replace(staging, cache)
    return canary, note


def _check(built: BuiltTask, backend: SandboxBackend, scratch: Path) -> tuple[bool, str]:
    task = built.prepared()
    check = task.verification
    assert isinstance(check, HarborVerification)
    planted = canary_files(task.hidden_dir, task.id)
    if not planted:
        return False, "its tests hold no Python test a canary can be planted in"
    if not (built.root / "solution" / "solve.sh").is_file():
        return False, "it has no solution/solve.sh to check its canary run on"
    try:
        patch = _solution_patch(built, task, backend, scratch)
        real = run_verifier(task, check, patch, backend, scratch / "sandbox")
        canary = run_verifier(task, check, patch, backend, scratch / "sandbox", planted)
    except SandboxError as error:
        return False, f"its canary run could not be checked: {error}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    reward = _reward(real)
    if reward is None or reward < check.min_reward:
        shown = "none" if reward is None else f"{reward:g}"
        return False, f"its solution does not resolve (reward {shown}): no canary check"
    canary_reward = _reward(canary)
    if canary.done.timed_out:
        return False, "its canary run ran over the verifier's timeout on its solution"
    if canary_reward is not None and canary_reward >= check.min_reward:
        return False, (
            f"its canary run resolves on its own solution (reward {canary_reward:g}): "
            "test.sh does not decide by the Python tests canaries were planted in"
        )
    return True, f"checked on its solution: canaries in {', '.join(sorted(planted))}"


def _reward(run: VerifierRun) -> float | None:
    return None if run.done.timed_out else reward_of(run.logs)[0]


def _solution_patch(
    built: BuiltTask, task: PreparedTask, backend: SandboxBackend, scratch: Path
) -> str:
    """The change the task's solve.sh makes to the workspace, as the agent's would be."""
    check = task.verification
    assert isinstance(check, HarborVerification)
    command = solve_command(
        built.root / "solution", check.workdir, f"{SOLUTION_HOME}-{uuid.uuid4().hex[:12]}"
    )
    sandbox = backend.open(task.workspace, scratch / "solve")
    try:
        sandbox.run(command, timeout=task.limits.wall_time_s)
        return sandbox.diff()
    finally:
        sandbox.close()


def checked_tasks(
    built: Sequence[BuiltTask],
    tasks: list[PreparedTask],
    backend: SandboxBackend,
    scratch: Path,
) -> tuple[list[PreparedTask], list[str]]:
    """`tasks` with each Harbor task's canary run decided by the import check, and the run
    warning (one, `NOT_TAMPER_EVIDENT`) naming those without one."""
    findings = {
        b.task.id: canary_finding(b, backend, scratch)
        for b in built
        if isinstance(b.task.verification, HarborVerification)
    }
    checked = []
    for task in tasks:
        if task.id in findings and isinstance(task.verification, HarborVerification):
            canary, note = findings[task.id]
            update = {"canary": canary, "canary_note": note}
            decided = task.verification.model_copy(update=update)
            task = task.model_copy(update={"verification": decided})
        checked.append(task)
    without = sorted(f"{task_id} ({note})" for task_id, (c, note) in findings.items() if not c)
    if not without:
        return checked, []
    shown = "; ".join(without[:5]) + (f"; and {len(without) - 5} more" if len(without) > 5 else "")
    warning = (
        f"{NOT_TAMPER_EVIDENT}: {len(without)} Harbor task(s) get no canary run, so the "
        f"agent's code could force their reward unseen; the run is ranked and gated as an "
        f"unconfined one: {shown}"
    )
    return checked, [warning]
