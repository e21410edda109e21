"""Task validation: a task is published only if its tests tell solved from unsolved.

For a built task: the reference solution passes every FAIL_TO_PASS and
PASS_TO_PASS test; the mutated workspace fails every FAIL_TO_PASS test and
passes every PASS_TO_PASS test; and each check gives the same answer every
time it is repeated, the repeats alternating every canary before its original and
every one after it. Grading runs exactly as it does for an attempt.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from cursorbench.tasks import answer
from cursorbench.tasks.workspace import BuiltTask
from harness.grading.canaries import Placement
from harness.grading.grade import grade
from harness.home import cache_home
from harness.kinds.registry import kind_of
from harness.results import TestOutcome
from harness.sandbox import SandboxSettings, open_ready


def _draw(run: int) -> Placement:
    """Run 1 grades with every canary before its original, run 2 with every one after it,
    and so on: grading may draw either (`cursorbench.validation.canary_order`)."""
    return Placement(before=run % 2 == 0, seed=run)


def validate_task(built: BuiltTask, backend: str, repeat: int = 2) -> list[str]:
    """Problems found; an empty list means the task is valid."""
    prepared = built.prepared()
    sandboxes, _ = open_ready(backend, SandboxSettings(hidden=tuple(prepared.secret_paths)))
    check = kind_of(built.task.verification).listed_tests(built.task.verification)
    problems: list[str] = []
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    if check is None:  # graded without FAIL_TO_PASS lists
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            reference = answer.reference_patch(built, Path(scratch) / "ref-tree")
            for run in range(repeat):
                solved = grade(prepared, reference, sandboxes, Path(scratch) / "ref", _draw(run))
                unsolved = grade(prepared, "", sandboxes, Path(scratch) / "base")
                if not solved.resolved:
                    problems.append(f"run {run + 1}: reference solution: {solved.error}")
                if unsolved.resolved:
                    problems.append(f"run {run + 1}: the untouched workspace resolves the task")
        return problems
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        for run in range(repeat):
            ref = Path(scratch) / "ref"
            solved = grade(prepared, built.reference_patch, sandboxes, ref, _draw(run))
            unsolved = grade(prepared, "", sandboxes, Path(scratch) / "base")
            label = f"run {run + 1}:"
            for test, outcome in solved.tests.items():
                if outcome is not TestOutcome.PASSED:
                    problems.append(f"{label} reference solution: {test} {outcome.value}")
            for test in check.fail_to_pass:
                if unsolved.tests[test] is TestOutcome.PASSED:
                    problems.append(f"{label} unsolved workspace passes FAIL_TO_PASS {test}")
            for test in check.pass_to_pass:
                if unsolved.tests[test] is not TestOutcome.PASSED:
                    value = unsolved.tests[test].value
                    problems.append(f"{label} unsolved workspace: PASS_TO_PASS {test} {value}")
            if solved.failure is not None and solved.error:
                problems.append(f"{label} reference solution: {solved.error}")
    return problems
