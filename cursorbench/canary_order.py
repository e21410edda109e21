"""Canaries and the reference: every hidden module gets some, and none of them fails it.

A canary (`harness.canaries`) runs its original's straight-line prefix in the same pytest
process, before or after the original at random. A prefix that changes state outside the
test (funcy's `@monkey(module)` replaces a module's function) can then fail the original
of an honest solution whenever the canary ran first: about half of all gradings, so two
random gradings of the reference let a quarter of such tasks through, with flaky verdicts
after. Validation therefore grades the reference under both placements, every canary
before its original and every one after (`canaries.Placement`), and names the tests that
fail under one only; such a test is listed in the task's `canary_exempt` (it gets no
canary, its module's other tests still do) or the task is refused.

`tasks derive` fills `canary_exempt` itself (`exempt_for_order`): the tests that fail
under one placement only, checked again with them exempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cursorbench.workspace import BuiltTask
from harness import canaries
from harness.grading import grade
from harness.kinds.registry import pytest_part
from harness.kinds.testrun import GradeReport
from harness.results import TestOutcome
from harness.sandbox.protocol import SandboxBackend
from harness.spec import PreparedTask

PLACEMENTS = {"before": True, "after": False}  # where every canary runs, against its original
MAX_EXEMPT_ROUNDS = 3


def hidden_sources(built: BuiltTask) -> dict[str, str]:
    """The hidden test files a grading plants canaries in, as {relative path: text}."""
    check = pytest_part(built.task.verification)
    names = check.hidden_tests if check is not None else []
    return {
        name: (built.hidden / name).read_text(encoding="utf-8", errors="replace")
        for name in names
        if (built.hidden / name).is_file()
    }


def exempt_problems(built: BuiltTask) -> list[str]:
    """Hidden tests that get no canaries at grading, and `canary_exempt` entries that name
    no test of a hidden module."""
    check = pytest_part(built.task.verification)
    if check is None:
        return []
    sources = hidden_sources(built)
    modules = sorted(p for p in sources if p.endswith(".py"))
    problems = [
        f"canary_exempt names {entry}, which is in no hidden test module"
        for entry in check.canary_exempt
        if not any(entry.startswith(f"{m}::") for m in modules)
    ]
    if modules:
        problems += canaries.canary_problems(sources, frozenset(check.canary_exempt))
    return problems


@dataclass(frozen=True)
class OrderedGrades:
    """The reference graded with every canary before its original, and after it."""

    reports: dict[str, GradeReport]

    @property
    def resolved(self) -> bool:
        return all(r.resolved for r in self.reports.values())

    def failing(self, where: str) -> set[str]:
        return {t for t, o in self.reports[where].tests.items() if o is not TestOutcome.PASSED}

    def order_dependent(self) -> list[str]:
        """Tests that fail under one placement and pass under the other."""
        before, after = self.failing("before"), self.failing("after")
        return sorted(before ^ after)

    def problems(self) -> list[str]:
        found = []
        for where, report in self.reports.items():
            if report.resolved:
                continue
            other = next(w for w in self.reports if w != where)
            only = sorted(self.failing(where) - self.failing(other))
            if only:
                found.append(
                    f"the reference fails {', '.join(only[:3])} only when every canary runs "
                    f"{where} its original (its canary changes state the test reads: list it "
                    "in canary_exempt, which `tasks derive` does)"
                )
            else:
                failing = sorted(self.failing(where))
                found.append(
                    f"reference solution not resolved (canaries {where} their originals): "
                    f"{report.error or failing[:3]}"
                )
        return found


def grade_both_placements(
    prepared: PreparedTask, patch: str, sandboxes: SandboxBackend, scratch: Path
) -> OrderedGrades:
    """`patch` graded once with every canary before its original and once after it."""
    reports = {}
    for where, before in PLACEMENTS.items():
        draw = canaries.Placement(before)
        reports[where] = grade(prepared, patch, sandboxes, scratch / f"ref-{where}", draw)
    return OrderedGrades(reports)


def _base_id(test_id: str) -> str:
    """A test's id without its parametrize suffix ("path::test_x[1-2]" -> "path::test_x")."""
    return test_id.split("[", 1)[0]


def exempt_for_order(
    built: BuiltTask, sandboxes: SandboxBackend, scratch: Path
) -> tuple[list[str], list[str]]:
    """(canary_exempt, problems): the task's own exemptions plus the hidden tests whose
    canaries fail the reference under one placement, until it resolves under both (or
    `MAX_EXEMPT_ROUNDS` rounds pass, or a failure is not one of placement)."""
    check = pytest_part(built.task.verification)
    if check is None:
        return [], []
    exempt = set(check.canary_exempt)
    hidden = tuple(f"{h}::" for h in check.hidden_tests)
    prepared = built.prepared()
    for round_number in range(MAX_EXEMPT_ROUNDS):
        task = prepared.model_copy(
            update={"verification": _with_exempt(prepared.verification, sorted(exempt))}
        )
        folder = scratch / f"exempt-{round_number}"
        grades = grade_both_placements(task, built.reference_patch, sandboxes, folder)
        if grades.resolved:
            return sorted(exempt), []
        found = {_base_id(t) for t in grades.order_dependent() if t.startswith(hidden)}
        if not found - exempt:
            return sorted(exempt), grades.problems()
        exempt |= found
    return sorted(exempt), grades.problems()


def _with_exempt(verification: Any, exempt: list[str]) -> Any:
    """The verification with `canary_exempt` set on its pytest part (a `both` task's too)."""
    if "canary_exempt" in type(verification).model_fields:
        return verification.model_copy(update={"canary_exempt": exempt})
    for name in type(verification).model_fields:
        part = getattr(verification, name)
        if isinstance(part, BaseModel) and "canary_exempt" in type(part).model_fields:
            changed = part.model_copy(update={"canary_exempt": exempt})
            return verification.model_copy(update={name: changed})
    return verification
