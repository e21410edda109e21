"""Canaries and the reference: every hidden module gets some, and none of them fails it.

A canary (`harness.grading.canaries`) runs its original's straight-line prefix in the same pytest
process, before or after the original at random. A prefix that changes state outside the
test (funcy's `@monkey(module)` replaces a module's function) can then fail the original
of an honest solution whenever the canary ran first: about half of all gradings, so two
random gradings of the reference let a quarter of such tasks through, with flaky verdicts
after. Validation therefore grades the reference under both placements, every canary
before its original and every one after (`canaries.Placement`), and names the tests that
fail under one only; such a test is listed in the task's `canary_exempt` (it gets no
canary, its module's other tests still do) or the task is refused.

A canary can also pass where honest code runs: the nudged literal means the same to the
code's own `==` (bitstring parses `'hex=0Xabc,oct=0'` as `'hex=0Xabc, oct=0'`), so any
grading that draws it calls an honest solution tampered with; its original is exempt too.
A canary can also fail another test: one whose copy runs before that test under either
placement, or whose failing assert skips the cleanup at the end of its body (the copy
stops there), leaving state changed for every later test. `tasks derive` fills
`canary_exempt` itself (`exempt_for_order`): a test failing under one placement only is
exempt; for one failing under both, the test whose canary is to blame is found by
halving the tests that carry one; then the reference is graded again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cursorbench.tasks.workspace import BuiltTask
from harness.grading import canaries
from harness.grading.grade import grade
from harness.kinds.registry import pytest_part
from harness.kinds.testrun import GradeReport
from harness.results import TestOutcome
from harness.sandbox.protocol import SandboxBackend
from harness.spec import PreparedTask

PLACEMENTS = {"before": True, "after": False}  # where every canary runs, against its original


def placement(where: str) -> canaries.Placement:
    """The draw of one placement. Each has its own seed, so the two gradings nudge each
    test's literal differently: twice the chance to meet a nudge the code's own `==`
    ignores (a canary honest code passes)."""
    return canaries.Placement(PLACEMENTS[where], seed=1 if PLACEMENTS[where] else 2)


MAX_EXEMPT_ROUNDS = 4


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
                hint = (
                    " (if it passes without canaries, another test's canary changed state it "
                    "reads: `tasks derive` finds which)"
                    if any("::" in t for t in failing)  # a test, not a kind's verdict
                    else ""
                )
                found.append(
                    f"reference solution not resolved (canaries {where} their originals): "
                    f"{report.error or failing[:3]}{hint}"
                )
        return found


def grade_both_placements(
    prepared: PreparedTask, patch: str, sandboxes: SandboxBackend, scratch: Path
) -> OrderedGrades:
    """`patch` graded once with every canary before its original and once after it."""
    reports = {}
    for where in PLACEMENTS:
        draw = placement(where)
        reports[where] = grade(prepared, patch, sandboxes, scratch / f"ref-{where}", draw)
    return OrderedGrades(reports)


def _base_id(test_id: str) -> str:
    """A test's id without its parametrize suffix ("path::test_x[1-2]" -> "path::test_x")."""
    return test_id.split("[", 1)[0]


@dataclass
class _Reference:
    """The reference graded again and again with other exemptions (`exempt_for_order`)."""

    built: BuiltTask
    sandboxes: SandboxBackend
    scratch: Path
    runs: int = 0

    def task(self, exempt: set[str]) -> PreparedTask:
        prepared = self.built.prepared()
        verification = _with_exempt(prepared.verification, sorted(exempt))
        return prepared.model_copy(update={"verification": verification})

    def both(self, exempt: set[str]) -> OrderedGrades:
        self.runs += 2
        folder = self.scratch / f"both-{self.runs}"
        return grade_both_placements(self.task(exempt), self.built.reference_patch,
                                     self.sandboxes, folder)  # fmt: skip

    def fails(self, exempt: set[str], where: str, tests: set[str]) -> bool:
        """Whether any of `tests` fails with every canary `where` its original."""
        self.runs += 1
        draw = placement(where)
        folder = self.scratch / f"one-{self.runs}"
        report = grade(self.task(exempt), self.built.reference_patch, self.sandboxes, folder, draw)
        return any(report.tests.get(t) is not TestOutcome.PASSED for t in tests)


def carriers(built: BuiltTask, exempt: set[str]) -> list[str]:
    """The hidden tests that carry a canary under a `Placement` draw (every one that can,
    but the exempt), as ids without parameters."""
    planted = canaries.plant(hidden_sources(built), canaries.Placement(True), frozenset(exempt))
    return sorted(set(planted.originals.values()))


def sprung_originals(built: BuiltTask, exempt: set[str], grades: OrderedGrades) -> set[str]:
    """The originals of canaries the reference passed: a canary one literal from its
    original that honest code passes (bitstring's `==` parses `'hex=0Xabc,oct=0'` as it
    parses `'hex=0Xabc, oct=0'`) is no canary, and any grading that draws it calls an honest
    solution tampered with."""
    sources = hidden_sources(built)
    found: set[str] = set()
    for where, report in grades.reports.items():
        planted = canaries.plant(sources, placement(where), frozenset(exempt))
        for entry in report.canaries_passed:
            original = planted.originals.get(_base_id(entry.rsplit(" ", 1)[0]))
            if original is not None:
                found.add(original)
    return found


def culprit(reference: _Reference, exempt: set[str], where: str, failing: set[str]) -> str:
    """The test whose canary makes `failing` fail with every canary `where` its original,
    by halving the tests that carry one ('' when no single one does: it takes two)."""
    suspects = carriers(reference.built, exempt)
    while len(suspects) > 1:
        half = len(suspects) // 2
        first, second = suspects[:half], suspects[half:]
        if reference.fails(exempt | set(second), where, failing):  # canaries on `first` only
            suspects = first
        elif reference.fails(exempt | set(first), where, failing):
            suspects = second
        else:
            return ""
    return suspects[0] if suspects else ""


def exempt_for_order(
    built: BuiltTask, sandboxes: SandboxBackend, scratch: Path
) -> tuple[list[str], list[str]]:
    """(canary_exempt, problems): the task's own exemptions plus the hidden tests whose
    canaries fail the reference, until it resolves under both placements (or
    `MAX_EXEMPT_ROUNDS` rounds pass, or no one test's canary is to blame). A test that
    fails under one placement only is exempt itself (if it carries a canary); else it is failed
    by another test's canary (one that runs before it either way, or whose failure skips
    the cleanup at the end of its copy), found by halving the suspects, once the failure is
    seen to go when no test carries a canary (a failure that stays, or a kind's own verdict
    such as the docs kind's, is no canary's: the problems say it)."""
    check = pytest_part(built.task.verification)
    if check is None:
        return [], []
    exempt = set(check.canary_exempt)
    hidden = tuple(f"{h}::" for h in check.hidden_tests)
    listed = set(check.fail_to_pass) | set(check.pass_to_pass)  # not a kind's own verdicts
    reference = _Reference(built, sandboxes, scratch)
    if hidden and not carriers(built, exempt):
        return sorted(exempt), []  # nothing carries a canary: `exempt_problems` says so
    for _ in range(MAX_EXEMPT_ROUNDS):
        grades = reference.both(exempt)
        if grades.resolved:
            return sorted(exempt), []
        carrying = set(carriers(built, exempt))  # a test without a canary is not to blame
        order = grades.order_dependent()
        found = {_base_id(t) for t in order if t.startswith(hidden) and t in listed} & carrying
        found |= sprung_originals(built, exempt, grades)
        if not found:
            where = next(w for w, r in grades.reports.items() if not r.resolved)
            failing = grades.failing(where) & listed
            if not failing or reference.fails(exempt | carrying, where, failing):
                return sorted(exempt), grades.problems()  # they fail without canaries too
            blamed = culprit(reference, exempt, where, failing)
            found = {blamed} if blamed else set()
        if not found - exempt:
            return sorted(exempt), grades.problems()
        exempt |= found
    return sorted(exempt), reference.both(exempt).problems()


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
