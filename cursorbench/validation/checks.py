"""Full task validation, the issue's five steps, for a built task; publish only what passes.

1. Pristine tree (the original, hidden tests included): the test suite runs
   `tree_runs.PRISTINE_RUNS` times in the sandbox, then once under each perturbation of
   `perturb.VALIDATION_PERTURBATIONS` (clock a day, a month and a year ahead, far time
   zones, another locale, fixed hash seeds, reversed and shuffled order, a loaded CPU),
   and, where grading splits the tests in two runs (a twin run applies), once so.
   Only tests that pass in every run count (stable); every other test that passed
   somewhere is in the flake record (`dropped`, test id -> reason), e.g. a parametrize
   id that embeds today's date. The runs are cached by the tree's digest and the test
   arguments, so the tasks of one package share them. Tests failing there with network
   errors (the sandbox has no network) refuse the task: "tests need the network".
2. Broken tree (the workspace with the hidden tests laid over it): FAIL_TO_PASS =
   stable tests *inside the hidden files* that now fail or are missing; at least
   `MIN_FAIL_TO_PASS`. Stable tests outside the hidden files that fail are named
   (`visible_failing`), never graded; more than min(`MAX_SPILL`, `MAX_SPILL_SHARE`) of
   the visible stable tests refuses the task (the deletion breaks more than its
   feature). PASS_TO_PASS = the stable tests that still pass.
3. Grading as an attempt is graded (canaries included): the reference solution
   resolves with every canary before its original and with every one after it
   (`canary_order`); the untouched workspace and a stub raising `NotImplementedError`
   (`answer.stub_tree`) do not.
4. Coverage: the share of the removed executable lines that the hidden tests alone
   execute on the reference solution (measured with `coverage` inside the sandbox); for
   a `rewrite` (nothing deleted: refactor, migration, optimize) the whole suite's.
5. Leaks: the build's leak scan again (the environment may have changed since the
   build), the package not importable without the workspace, and imported from it.

`derive_tests` does steps 1-2 only and gives the lists a task file should carry.

Tasks graded without FAIL_TO_PASS lists (`mutants`, `answer`) skip steps 1, 2 and 4:
their reference (for `answer`, the file made from the facts) must resolve twice, the
untouched workspace and the stub must not (`graded_only_problems`); for `mutants`,
every mutant must be killed by the reference tests. A `docs` task's doctest items
count as inside the hidden files, and its removed lines are docstrings, which
coverage does not count.

A new check joins by a function `(built, sandboxes, scratch, record) -> problems`
in `EXTRA_CHECKS` (run after grading, for tasks that list tests).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from cursorbench.tasks import answer
from cursorbench.tasks.sources.registry import source_of
from cursorbench.tasks.workspace import BuiltTask, scan_hidden_paths
from cursorbench.validation import leaks
from cursorbench.validation.canary_order import (
    PLACEMENTS,
    exempt_problems,
    grade_both_placements,
    placement,
)
from cursorbench.validation.coverage_check import MIN_COVERAGE, coverage_share, python_lines_removed
from cursorbench.validation.perturb import (
    compare,
)
from cursorbench.validation.pins import find_pins
from cursorbench.validation.testruns import SuiteRun
from cursorbench.validation.tree_runs import (
    ALONE,
    broken_run,
    listed_tests,
    network_signature,
    perturbed_runs,
    pristine_runs,
    split_run,
)
from harness.grading.grade import grade
from harness.home import cache_home
from harness.kinds.docs import DocsVerification
from harness.kinds.registry import kind_of
from harness.results import TestOutcome
from harness.sandbox import SandboxSettings
from harness.sandbox.command import Command
from harness.sandbox.protocol import SandboxBackend
from harness.sandbox.ready import open_ready
from harness.spec import Verification

MIN_FAIL_TO_PASS = 5
MAX_SPILL_SHARE = 0.10  # of the stable tests outside the hidden files
MAX_SPILL = 25


class TaskValidation(BaseModel):
    """One task's validation record (a row of the validation report)."""

    id: str
    category: str
    package: str
    valid: bool = False
    problems: list[str] = Field(default_factory=list)
    stable_tests: int = 0
    fail_to_pass: int = 0
    pass_to_pass: int = 0
    spilled: int = 0
    changed_lines: int = 0
    changed_lines_digest: str | None = None  # the build (`task_digest`) they were counted on
    changed_code_lines: int | None = None  # the same, without blank or comment lines; None:
    # counted before the figure existed
    code_lines_rule: int | None = None  # `answer.CODE_LINES_RULE` they were counted by
    prompt_chars: int = 0
    coverage: float | None = None
    reference_resolved: bool = False
    untouched_resolved: bool = True
    stub_resolved: bool = True
    stub_fail_to_pass_passed: int = 0
    test_runtime_s: float = 0.0
    duration_s: float = 0.0
    # When the checks ran (ISO, UTC); the perturbations they ran under; the flake record
    # (test id -> why it is in neither list); visible tests the broken tree fails.
    checked_at: str | None = None
    perturbations: list[str] = Field(default_factory=list)
    dropped: dict[str, str] = Field(default_factory=dict)
    visible_failing: list[str] = Field(default_factory=list)
    # Notes for the review step that do not make a task invalid (`cursorbench/validation/pins.py`),
    # and how many FAIL_TO_PASS tests compare with an exact string.
    review: list[str] = Field(default_factory=list)
    pinned_tests: int = 0


class Derived(BaseModel):
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    spilled: list[str]
    stable: int
    problems: list[str]
    runtime_s: float
    dropped: dict[str, str] = Field(default_factory=dict)
    perturbations: list[str] = Field(default_factory=list)


def package_label(built: BuiltTask) -> str:
    return source_of(built.task.source).label(built.task.source)


def backend_for(built: BuiltTask, backend: str) -> SandboxBackend:
    """A ready backend for `built`'s runs: its secrets hidden, its environment shown."""
    settings = SandboxSettings(hidden=tuple(scan_hidden_paths(built.task)))
    return open_ready(backend, settings, python_env=built.python_env).backend


def network_problem(runs: list[SuiteRun]) -> str | None:
    """Tests that fail on the pristine tree with network errors need the network, which
    the sandbox (and so grading) never has: such a task cannot be validated."""
    failing = sorted(
        {
            t
            for run in runs
            for t, o in run.outcomes.items()
            if o in (TestOutcome.FAILED, TestOutcome.ERROR)
        }
    )
    signature = next((s for s in map(network_signature, (r.output for r in runs)) if s), "")
    if not failing or not signature:
        return None
    return (
        f"tests need the network: {len(failing)} fail on the pristine tree in the sandbox "
        f"(no network) with {signature!r}, e.g. {failing[0]}"
    )


def asked(check: Verification, test: str) -> bool:
    """Whether a failing test is one the task asks for: a docs task's doctest items are
    only its documented names' (`factory/docs_tasks.py` removes other examples too)."""
    if not isinstance(check, DocsVerification) or not test.startswith(f"{check.documented_file}::"):
        return True
    dotted = test.split("::", 1)[1]
    return any(dotted.endswith(f".{name}") for name in check.documented)


def derive_tests(
    built: BuiltTask, sandboxes: SandboxBackend, scratch: Path, perturb: bool = True
) -> Derived:
    task = built.task
    check = task.verification
    tests = kind_of(check).listed_tests(check)
    if tests is None:
        kind = check.kind
        return Derived(
            fail_to_pass=[], pass_to_pass=[], spilled=[], stable=0, runtime_s=0.0,
            problems=[f"a {kind} task lists no FAIL_TO_PASS tests: nothing to derive"],
        )  # fmt: skip
    problems: list[str] = []
    runs = pristine_runs(built, sandboxes, scratch)
    for number, run in enumerate(runs, start=1):
        if run.timed_out:
            problems.append(f"pristine run {number} ran past {task.limits.test_timeout_s}s")
        if run.error and not run.outcomes:
            problems.append(f"pristine run {number}: {run.error}")
    needs_network = network_problem(runs)
    if needs_network:
        problems.append(needs_network)
    perturbed: dict[str, SuiteRun] = {}
    if perturb:
        perturbed, not_applied = perturbed_runs(built, sandboxes, scratch)
        problems += not_applied
    compared = {label: run.outcomes for label, run in perturbed.items()}
    split = split_run(built, sandboxes, scratch)
    if split is not None:
        compared[ALONE] = split.outcomes
    stable, dropped = compare([run.outcomes for run in runs], compared)
    broken = broken_run(built, sandboxes, scratch)
    if broken.timed_out:
        problems.append("the broken tree's tests ran past the time limit")
    failing = [t for t in stable if broken.outcomes.get(t) is not TestOutcome.PASSED]
    passing = [t for t in stable if broken.outcomes.get(t) is TestOutcome.PASSED]
    hidden = kind_of(check).failing_by_design(check)  # e.g. a docs task's doctests too
    inside = [t for t in failing if t.split("::")[0] in hidden and asked(tests, t)]
    spilled = [t for t in failing if t.split("::")[0] not in hidden]
    visible_stable = [t for t in stable if t.split("::")[0] not in hidden]
    if len(inside) < MIN_FAIL_TO_PASS:
        problems.append(
            f"only {len(inside)} stable tests inside the hidden files fail on the broken tree "
            f"(need {MIN_FAIL_TO_PASS})"
        )
    if len(spilled) > min(MAX_SPILL, MAX_SPILL_SHARE * max(len(visible_stable), 1)):
        problems.append(
            f"the breakage spills into {len(spilled)} of {len(visible_stable)} stable tests "
            f"outside the hidden files, e.g. {spilled[0]}"
        )
    if not passing:
        problems.append("no stable test passes on the broken tree: the package does not import")
    runtime = sum(run.duration_s for run in runs) / max(len(runs), 1)
    return Derived(
        fail_to_pass=inside, pass_to_pass=passing, spilled=spilled, stable=len(stable),
        problems=problems, runtime_s=runtime, dropped=dropped, perturbations=list(perturbed),
    )  # fmt: skip


# Checks a later slice adds: each gives the problems it finds with a task that lists tests.
ExtraCheck = Callable[[BuiltTask, SandboxBackend, Path, "TaskValidation"], list[str]]
EXTRA_CHECKS: list[ExtraCheck] = []


def validate_full(built: BuiltTask, backend: str, perturb: bool = True) -> TaskValidation:
    """Every check of the module docstring; `perturb=False` skips the perturbed runs (a
    quick look, never what publishes a task)."""
    started = time.monotonic()
    task = built.task
    record = TaskValidation(
        id=task.id, category=task.category.value, package=package_label(built),
        changed_lines=answer.reference_changed_lines(built), changed_lines_digest=built.digest,
        changed_code_lines=answer.reference_code_lines(built), prompt_chars=len(task.prompt),
        code_lines_rule=answer.CODE_LINES_RULE,
        checked_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )  # fmt: skip
    sandboxes = backend_for(built, backend)
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    kind = kind_of(task.verification)
    if kind.listed_tests(task.verification) is None:
        with tempfile.TemporaryDirectory(dir=root) as folder:
            problems = _leak_problems(built)
            problems += graded_only_problems(built, sandboxes, Path(folder), record)
        record.problems, record.valid = problems, not problems
        record.duration_s = round(time.monotonic() - started, 1)
        return record
    with tempfile.TemporaryDirectory(dir=root) as folder:
        scratch = Path(folder)
        problems = _leak_problems(built) + _import_problems(built, sandboxes, scratch)
        problems += kind.workspace_problems(task.verification, built.workspace)
        problems += exempt_problems(built)
        derived = derive_tests(built, sandboxes, scratch, perturb)
        problems += derived.problems
        problems += _spec_problems(built, derived)
        record.stable_tests, record.spilled = derived.stable, len(derived.spilled)
        record.visible_failing, record.dropped = derived.spilled, derived.dropped
        record.perturbations = derived.perturbations
        record.fail_to_pass, record.pass_to_pass = kind.test_counts(task.verification)
        record.test_runtime_s = round(derived.runtime_s, 2)
        _review_pins(built, record)
        problems += _grading_problems(built, sandboxes, scratch, record)
        for extra in EXTRA_CHECKS:
            problems += extra(built, sandboxes, scratch, record)
        record.coverage = coverage_share(built, sandboxes, scratch, listed_tests(built).test_args)
        if record.coverage is None and not python_lines_removed(built):
            pass  # the answer is configuration only (a devops task): nothing to cover
        elif record.coverage is None:
            if kind.needs_coverage(task.verification):  # not docs: docstrings are no statements
                problems.append("coverage of the removed lines could not be measured")
        elif record.coverage < MIN_COVERAGE:
            problems.append(f"the hidden tests execute only {record.coverage:.0%} of removed lines")
    record.problems = problems
    record.valid = not problems
    record.duration_s = round(time.monotonic() - started, 1)
    return record


def _review_pins(built: BuiltTask, record: TaskValidation) -> None:
    """Flags a task whose FAIL_TO_PASS tests mostly pin exact strings (`pins.py`)."""
    pins = find_pins(built.hidden, listed_tests(built).fail_to_pass)
    record.pinned_tests = len(pins.pinned)
    if pins.flagged:
        record.review.append(pins.note())


def _spec_problems(built: BuiltTask, derived: Derived) -> list[str]:
    check = listed_tests(built)
    problems = []
    fail, passing = set(derived.fail_to_pass), set(derived.pass_to_pass)
    wrong_f2p = [t for t in check.fail_to_pass if t not in fail]  # visible, dropped or passing
    wrong_p2p = [t for t in check.pass_to_pass if t not in passing]
    if wrong_f2p:
        problems.append(f"{len(wrong_f2p)} listed FAIL_TO_PASS tests are not, e.g. {wrong_f2p[0]}")
    if wrong_p2p:
        problems.append(f"{len(wrong_p2p)} listed PASS_TO_PASS tests are not, e.g. {wrong_p2p[0]}")
    return problems


def _grading_problems(
    built: BuiltTask, sandboxes: SandboxBackend, scratch: Path, record: TaskValidation
) -> list[str]:
    prepared = built.prepared()
    problems = []
    solved = grade_both_placements(prepared, built.reference_patch, sandboxes, scratch)
    record.reference_resolved = solved.resolved
    problems += solved.problems()
    untouched = grade(prepared, "", sandboxes, scratch / "base")
    record.untouched_resolved = untouched.resolved
    if untouched.resolved:
        problems.append("the untouched workspace resolves the task")
    stub_patch = answer.patch_for(built.workspace, stub_changes(built), scratch / "stub-tree")
    stub = grade(prepared, stub_patch, sandboxes, scratch / "stub")
    record.stub_resolved = stub.resolved
    record.stub_fail_to_pass_passed = sum(
        stub.tests.get(t) is TestOutcome.PASSED for t in listed_tests(built).fail_to_pass
    )
    if stub.resolved:
        problems.append("a stub raising NotImplementedError resolves the task")
    return problems


def graded_only_problems(
    built: BuiltTask, sandboxes: SandboxBackend, scratch: Path, record: TaskValidation
) -> list[str]:
    """Reference resolves (twice, the same way), untouched and stub do not."""
    check = built.task.verification
    prepared = built.prepared()
    problems = kind_of(check).workspace_problems(check, built.workspace)
    if problems:
        return problems
    reference = answer.reference_patch(built, scratch / "ref-tree")
    runs = [  # any canaries all before their originals, then all after (`canary_order`)
        grade(prepared, reference, sandboxes, scratch / "ref", placement(where))
        for where in PLACEMENTS
    ]
    record.reference_resolved = all(run.resolved for run in runs)
    for number, run in enumerate(runs, start=1):
        if not run.resolved:
            problems.append(f"run {number}: reference solution not resolved: {run.error}")
        problems += [f"run {number}: {p}" for p in kind_of(check).reference_problems(check, run)]
    if runs[0].tests != runs[1].tests:
        problems.append("the reference's outcomes differ between two runs")
    record.fail_to_pass = len(runs[0].tests)
    record.test_runtime_s = round(sum(run.duration_s for run in runs) / 2, 2)
    untouched = grade(prepared, "", sandboxes, scratch / "base")
    record.untouched_resolved = untouched.resolved
    if untouched.resolved:
        problems.append("the untouched workspace resolves the task")
    stub_patch = answer.patch_for(built.workspace, answer.stub_tree(built), scratch / "stub-tree")
    stub = grade(prepared, stub_patch, sandboxes, scratch / "stub")
    record.stub_resolved = stub.resolved
    if stub.resolved:
        problems.append("a stub (no knowledge) resolves the task")
    return problems


def stub_changes(built: BuiltTask) -> dict[str, str | None]:
    """The stub's files: Python stubbed (`answer.stub_tree`); other files the reference
    writes (configuration, a makefile) are left as the workspace has them, since a stub of
    them would be the answer itself."""
    changes = {}
    for path, text in answer.stub_tree(built).items():
        if path.endswith(".py"):
            changes[path] = text
        elif (built.workspace / path).is_file():
            changes[path] = (built.workspace / path).read_text(encoding="utf-8")
    return changes


def _leak_problems(built: BuiltTask) -> list[str]:
    found = leaks.scan(
        built.workspace,
        built.reference_patch,
        built.hidden,
        scan_hidden_paths(built.task),
        allow=built.task.leak_allow,
        python_env=built.python_env,  # what the task's sandboxes show, not the harness's
    )
    return [f"leak: {leak}" for leak in found[:5]]


def top_level_names(built: BuiltTask) -> tuple[str, list[str]]:
    """The import root from the task's pytest.ini and the packages the reference touches."""
    config = built.workspace / "pytest.ini"
    text = config.read_text(encoding="utf-8") if config.is_file() else ""
    roots = [
        line.split("=", 1)[1].split()
        for line in text.splitlines()
        if line.split("=", 1)[0].strip() == "pythonpath"
    ]
    root = roots[0][0] if roots and roots[0] else "."
    prefix = "" if root == "." else root.rstrip("/") + "/"
    names = set()
    for path in built.solution_tree():
        if path.startswith(prefix) and path.endswith(".py"):
            first = path[len(prefix) :].split("/")[0].removesuffix(".py")
            if first not in ("tests", "test", "conftest", "setup", "docs"):
                names.add(first)
    return root, sorted(names)


def _import_problems(built: BuiltTask, sandboxes: SandboxBackend, scratch: Path) -> list[str]:
    """The package must not be importable without the workspace, and must import from it."""
    if source_of(built.task.source).distribution(built.task.source) is None:
        return []
    root, names = top_level_names(built)
    if not names:
        return []
    sandbox = sandboxes.open(built.workspace, scratch / "imports", track_changes=False)
    try:
        script = (
            "import importlib.util as u, json, sys\n"
            f"names = {names!r}\n"
            "outside = [n for n in names if u.find_spec(n) is not None]\n"
            f"sys.path.insert(0, {sandbox.root + '/' + root!r})\n"
            "inside = {n: getattr(__import__(n), '__file__', '') for n in names}\n"
            "print('IMPORTS ' + json.dumps([outside, inside]))\n"
        )
        done = sandbox.execute(
            Command([sys.executable, "-P", "-c", script], timeout=60, read_only=True)
        )
    finally:
        sandbox.close()
    line = next((x for x in done.output.splitlines() if x.startswith("IMPORTS ")), None)
    if line is None:
        return [f"the package does not import: {done.output[-200:]!r}"]
    outside, inside = json.loads(line.removeprefix("IMPORTS "))
    problems = [f"{name} is importable without the workspace (installed)" for name in outside]
    problems += [
        f"{name} imports from {where}, not the workspace"
        for name, where in inside.items()
        if not str(where).startswith(sandbox.root)
    ]
    return problems
