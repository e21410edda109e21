"""Suite health: does each task still give the verdicts it gave when it was validated?

`check_task` grades, exactly as an attempt is graded, the reference solution (it must
resolve) and the two floors, the untouched workspace and a stub raising
`NotImplementedError` (neither may resolve), under a perturbation (`perturb.py`: a
shifted clock, another time zone) or as the machine is today. A task whose verdict
differs from validation's is `changed`, with the tests responsible: the reference's
tests that did not pass, or the FAIL_TO_PASS tests a floor passed.

Rot shows here first: a test whose id embeds today's date, a time zone the tests
assume, a dependency on the order tests run in. Validation drops such tests when it
sees them (`checks.derive_tests`); this check finds what it could not see.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from cursorbench.tasks import answer
from cursorbench.tasks.workspace import BuiltTask
from cursorbench.validation.checks import TaskValidation, backend_for, stub_changes
from cursorbench.validation.perturb import Perturbation, PerturbedBackend
from harness.grading.grade import grade
from harness.home import cache_home
from harness.kinds.registry import kind_of
from harness.results import TestOutcome
from harness.sandbox.protocol import SandboxBackend

AS_IS = Perturbation(name="today")
MAX_TESTS_SHOWN = 20


class Verdict(BaseModel):
    """One graded change: who, whether it resolved, and the tests that decided it."""

    who: str  # reference, untouched, stub
    resolved: bool
    expected: bool
    tests: dict[str, str] = Field(default_factory=dict)  # the tests responsible, if changed
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.resolved != self.expected


class TaskHealth(BaseModel):
    id: str
    perturbation: str
    checked_at: str
    validated_at: str | None = None
    verdicts: list[Verdict] = Field(default_factory=list)
    problem: str | None = None  # the task could not be checked (not built, not valid)

    @property
    def changed(self) -> bool:
        return self.problem is not None or any(v.changed for v in self.verdicts)

    def lines(self) -> list[str]:
        if self.problem is not None:
            return [self.problem]
        out = []
        for verdict in self.verdicts:
            if not verdict.changed:
                continue
            was = "resolved" if verdict.expected else "did not resolve"
            now = "resolves" if verdict.resolved else "does not resolve"
            why = f" ({verdict.error})" if verdict.error else ""
            out.append(f"{verdict.who}: {was} at validation, {now} now{why}")
            out += [f"  {test} {outcome}" for test, outcome in verdict.tests.items()]
        return out


def _patches(built: BuiltTask, scratch: Path) -> dict[str, str]:
    """The reference and the floors as patch text, as validation grades them."""
    listed = kind_of(built.task.verification).listed_tests(built.task.verification)
    if listed is None:  # graded without lists (answer, mutants): as `graded_only_problems`
        reference = answer.reference_patch(built, scratch / "ref-tree")
        stub = answer.patch_for(built.workspace, answer.stub_tree(built), scratch / "stub-tree")
    else:
        reference = built.reference_patch
        stub = answer.patch_for(built.workspace, stub_changes(built), scratch / "stub-tree")
    return {"reference": reference, "untouched": "", "stub": stub}


def _verdict(who: str, resolved: bool, tests: dict[str, TestOutcome], error: str | None,
             fail_to_pass: list[str]) -> Verdict:  # fmt: skip
    expected = who == "reference"
    verdict = Verdict(who=who, resolved=resolved, expected=expected, error=error)
    if verdict.changed:
        if expected:  # the reference: the tests that did not pass
            bad = {t: o.value for t, o in tests.items() if o is not TestOutcome.PASSED}
        else:  # a floor: the FAIL_TO_PASS tests it passed
            bad = {t: "passed" for t in fail_to_pass if tests.get(t) is TestOutcome.PASSED}
        verdict.tests = dict(sorted(bad.items())[:MAX_TESTS_SHOWN])
    return verdict


def check_task(
    built: BuiltTask,
    backend: str,
    perturbation: Perturbation = AS_IS,
    record: TaskValidation | None = None,
) -> TaskHealth:
    """The reference and the floors graded under `perturbation`, against validation."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    health = TaskHealth(
        id=built.task.id, perturbation=perturbation.describe(), checked_at=now,
        validated_at=record.checked_at if record else None,
    )  # fmt: skip
    if record is not None and not record.valid:
        health.problem = "not valid at its validation: nothing to compare"
        return health
    sandboxes: SandboxBackend = backend_for(built, backend)
    if perturbation != AS_IS:
        sandboxes = PerturbedBackend(sandboxes, perturbation)
    listed = kind_of(built.task.verification).listed_tests(built.task.verification)
    fail_to_pass = listed.fail_to_pass if listed is not None else []
    prepared = built.prepared()
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as folder:
        scratch = Path(folder)
        for who, patch in _patches(built, scratch).items():
            graded = grade(prepared, patch, sandboxes, scratch / who)
            verdict = _verdict(who, graded.resolved, graded.tests, graded.error, fail_to_pass)
            health.verdicts.append(verdict)
    return health


def load_health(folder: Path) -> list[TaskHealth]:
    path = folder / "health.json"
    if not path.is_file():
        return []
    return [TaskHealth.model_validate(item) for item in json.loads(path.read_text("utf-8"))]


def write_health_report(folder: Path, checks: list[TaskHealth]) -> list[TaskHealth]:
    """`health.json` and `HEALTH.md` in `folder`: `checks` replace the earlier checks of the
    same task under the same perturbation; the others stay. Returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    fresh = {(check.id, check.perturbation) for check in checks}
    kept = [c for c in load_health(folder) if (c.id, c.perturbation) not in fresh]
    merged = sorted([*kept, *checks], key=lambda c: (c.id, c.perturbation))
    document = [{**check.model_dump(), "changed": check.changed} for check in merged]
    (folder / "health.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    changed = sum(check.changed for check in merged)
    lines = [
        "# Suite health",
        "",
        f"{len(merged)} checks, {changed} changed since validation. Each check grades the "
        "reference solution (must resolve) and the floors, the untouched workspace and a "
        "stub raising `NotImplementedError` (must not), as an attempt is graded, under the "
        "perturbation named; `cursorbench tasks health --report` writes this page.",
        "",
        "| task | perturbation | checked | validated | reference | untouched | stub | changed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for check in merged:
        marks = {v.who: "resolves" if v.resolved else "no" for v in check.verdicts}
        verdict = "CHANGED: " + "; ".join(check.lines())[:300] if check.changed else "no"
        lines.append(
            f"| {check.id} | {check.perturbation} | {check.checked_at} "
            f"| {check.validated_at or '-'} | {marks.get('reference', '-')} "
            f"| {marks.get('untouched', '-')} | {marks.get('stub', '-')} | {verdict} |"
        )
    (folder / "HEALTH.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return merged
