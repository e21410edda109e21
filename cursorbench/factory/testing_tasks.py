"""Testing tasks (`--kind testing`): one of the package's test files deleted, the agent
asked for tests of the module that file tested, graded by the hidden mutants its tests
kill (the `mutants` kind, `harness/kinds/mutants.py`; v1's `*-tests` tasks).

A candidate is a test file of the suite with at least `MIN_FILE_TESTS` passing tests and
none failing, and its *module*: the package file of which its passing tests execute the
most statements. Its candidate mutants are single changes of that module at the sites
`bugs` finds (a comparison flipped, an off-by-one, `and`/`or` swapped, a `not` dropped,
two arguments swapped, another local returned) on lines the file's passing tests run and
nothing runs at import, none in a `while` loop (a mutant there can loop forever, costing
every grading its whole timeout, or grow memory until the sandbox's limit ends the whole
grading, as one in sqlparse's grouping did), one per line, each an exactly-once
replacement of whole lines (`bugs.unique_block`) whose result compiles. Up to
`MAX_MUTANTS` are taken in turn from the module's functions, kinds alternating within
each, in an order a hash of the candidate's key picks.

Measured (`measure_testing`), on real sandboxed runs through the validator's own code: the
draft (every candidate mutant) is built with the leak scan and its reference, the deleted
file restored, graded by the mutants kind; the mutants it kills stay (at least
`MIN_KILLED`), and the task with only those must pass what `tasks validate` checks of a
mutants task (`checks.graded_only_problems`: the reference resolves twice alike, killing
every mutant; the untouched workspace and the stub do not).

The prompt is offline: which module lacks tests, where they go (the deleted file's path),
what matters (the module's docstring, its main entry points, phrases from the deleted
tests' names), and that the library code stays as it is.
"""

from __future__ import annotations

import ast
import hashlib
import json
import posixpath
import random
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cursorbench.factory.bugs import Offsets, Site, functions_of, sites_in, unique_block
from cursorbench.factory.candidates import test_file, top_level_symbols
from cursorbench.factory.coverage_map import CoverageMap, is_test_file
from cursorbench.factory.filters import Proposal, hidden_lines_failure
from cursorbench.factory.job import Entry, Job, Measured, write_spec
from cursorbench.factory.measure import in_draft
from cursorbench.factory.prompts import behaviours, first_sentence, listed
from cursorbench.factory.release import Release, base_spec
from cursorbench.tasks import answer
from cursorbench.tasks.loader import TaskFileError, load_task
from cursorbench.tasks.task import RemoveFile
from cursorbench.tasks.workspace import BuildError, BuiltTask, build
from cursorbench.validation.checks import (
    TaskValidation,
    backend_for,
    graded_only_problems,
    package_label,
)
from harness.grading.grade import grade
from harness.home import cache_home
from harness.kinds.mutants import Mutant, MutantsVerification, apply_mutant
from harness.pyast import parse_module
from harness.results import TestOutcome
from harness.sandbox.protocol import SandboxBackend

MIN_FILE_TESTS = 5  # passing tests the deleted file must have
MIN_FOCUS = 0.5  # share of the statements the file's tests run that lie in its module
MAX_MUTANTS = 20
MIN_KILLED = 5  # mutants the deleted file's own tests must kill
MIN_KILL_SHARE = 0.8  # v1's
TEST_TIMEOUT_S = 120.0  # a grading run (per mutant): v1 testing tasks' limit
MIN_TESTS = 5  # the agent's tests that must pass on the original code (at most)
MAX_PROMPT_NAMES = 2  # entry points named (the module and the path take two backticks)


@dataclass
class TestingCandidate:
    __test__ = False  # a candidate, not a test class for pytest to collect

    file: str  # the test file deleted
    module: str  # the package file it tests
    tests: list[str]  # the file's passing tests
    failing: list[str] = field(default_factory=list)  # the file's tests failing pristine
    covered: int = 0  # statements of `module` its passing tests run
    focus: float = 0.0  # `covered` over the statements they run in all package files
    sites: list[Site] = field(default_factory=list)  # one per mutant
    mutants: list[Mutant] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"testing:{self.file}>{self.module}"

    @property
    def names(self) -> list[str]:
        return [self.module]

    @property
    def functions(self) -> list[str]:
        return sorted({site.function for site in self.sites})


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _stem(path: str) -> str:
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return posixpath.basename(posixpath.dirname(path)) if stem == "__init__" else stem


def testing_id(package: str, candidate: TestingCandidate) -> str:
    """`PACKAGE-MODULE-tests` (v1's naming), with the test file's own stem when it is not
    the module's (two test files of one module)."""
    module = _stem(candidate.module)
    tested = _stem(candidate.file).removeprefix("test_").removesuffix("_test")
    middle = module if tested in (module, "") else f"{module}-{tested}"
    return re.sub(r"[^a-z0-9.]+", "-", f"{package}-{middle}-tests".lower()).strip("-.")


# --- candidates -----------------------------------------------------------------------


def _runs_by(testmap: CoverageMap, tests: set[str]) -> dict[str, set[int]]:
    """Per package file, the statements that any of `tests` executes."""
    found: dict[str, set[int]] = {}
    for path, by_line in testmap.runs.items():
        lines = {n for n, ran in by_line.items() if ran & tests}
        if lines:
            found[path] = lines
    return found


def _while_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    """Every line of the function's `while` loops, condition and body."""
    found: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.While):
            found |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return found


def _mutant(file: str, text: str, site: Site) -> Mutant | None:
    """The site as an exactly-once replacement of whole lines of the original, when its
    result differs and compiles."""
    old, new, _ = unique_block(text.encode(), text, site)
    if old is None or old == new:
        return None
    try:
        compile(apply_mutant(text, old, new), file, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    ident = f"{_slug(site.function)[:40] or 'f'}-{site.line}"  # unique: one per line
    return Mutant(id=ident, file=file, old=old, new=new)


def module_mutants(
    text: str, file: str, lines: set[int], at_import: set[int]
) -> dict[str, list[tuple[Site, Mutant]]]:
    """Per function (`Class.method` for methods), its valid mutants on `lines` (those the
    file's tests run), none on `at_import` lines nor in a `while` loop, one per line."""
    try:
        module = parse_module(text)
    except SyntaxError:
        return {}
    data = text.encode()
    offsets = Offsets(data)
    found: dict[str, list[tuple[Site, Mutant]]] = {}
    seen: set[int] = set()
    for name, node in functions_of(module):
        skipped = _while_lines(node) | at_import
        for site in sorted(sites_in(node, name, data, offsets), key=lambda s: s.start):
            if site.line not in lines or site.line in skipped or site.line in seen:
                continue
            mutant = _mutant(file, text, site)
            if mutant is not None:
                seen.add(site.line)
                found.setdefault(name, []).append((site, mutant))
    return found


def _kinds_alternating(
    pairs: list[tuple[Site, Mutant]], rng: random.Random
) -> list[tuple[Site, Mutant]]:
    """One of each kind in turn (kinds and sites within a kind in `rng`'s order)."""
    by_kind: dict[str, list[tuple[Site, Mutant]]] = defaultdict(list)
    for pair in pairs:
        by_kind[pair[0].kind].append(pair)
    queues = [by_kind[kind] for kind in sorted(by_kind)]
    for queue in queues:
        rng.shuffle(queue)
    rng.shuffle(queues)
    ordered: list[tuple[Site, Mutant]] = []
    while any(queues):
        ordered += [queue.pop(0) for queue in queues if queue]
    return ordered


def pick_mutants(
    by_function: dict[str, list[tuple[Site, Mutant]]], seed: str, limit: int = MAX_MUTANTS
) -> list[tuple[Site, Mutant]]:
    """Up to `limit` mutants, one function after another (an order a hash of `seed`
    picks) so that they spread over the module; in order of place in the file."""
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))
    queues = [_kinds_alternating(list(by_function[name]), rng) for name in sorted(by_function)]
    rng.shuffle(queues)
    chosen: list[tuple[Site, Mutant]] = []
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=lambda pair: pair[0].start)


def describe_testing(
    tree: Path, testmap: CoverageMap, file: str, tests: list[str], failing: list[str]
) -> TestingCandidate | None:
    """The candidate of one test file: its module and mutants; None when its tests run no
    package statement."""
    ran = _runs_by(testmap, set(tests))
    if not ran:
        return None
    module = min(ran, key=lambda path: (-len(ran[path]), path))
    total = sum(len(lines) for lines in ran.values())
    candidate = TestingCandidate(file, module, sorted(tests), sorted(failing))
    candidate.covered = len(ran[module])
    candidate.focus = round(candidate.covered / total, 3)
    text = (tree / module).read_text(encoding="utf-8", errors="replace")
    by_line = testmap.runs.get(module, {})
    at_import = {n for n, contexts in by_line.items() if "" in contexts}
    # only lines no test outside the file runs: the suite left in the workspace cannot
    # kill these mutants, so neither can an agent's file that imports or copies it
    others = {t for t in testmap.outcomes if test_file(t) != file}
    own = {n for n in ran[module] if not by_line.get(n, set()) & others}
    chosen = pick_mutants(module_mutants(text, module, own, at_import), candidate.key)
    candidate.sites = [site for site, _ in chosen]
    candidate.mutants = [mutant for _, mutant in chosen]
    return candidate


def enumerate_testing(tree: Path, testmap: CoverageMap) -> list[TestingCandidate]:
    """A candidate per test file of the suite (not a package file's doctests), most
    candidate mutants first, then most tests."""
    passing: dict[str, list[str]] = defaultdict(list)
    failing: dict[str, list[str]] = defaultdict(list)
    for test, outcome in testmap.outcomes.items():
        path = test_file(test)
        if outcome == "passed":
            passing[path].append(test)
        elif outcome == "failed":
            failing[path].append(test)
    found: list[TestingCandidate] = []
    for path in sorted(set(passing) | set(failing)):
        if not is_test_file(path) or path in testmap.statements or not (tree / path).is_file():
            continue
        candidate = describe_testing(tree, testmap, path, passing[path], failing[path])
        if candidate is not None:
            found.append(candidate)
    found.sort(key=lambda c: (-len(c.mutants), -len(c.tests), c.key))
    return found


# --- cheap filters and rows -----------------------------------------------------------


def testing_failure(
    tree: Path, candidate: TestingCandidate, files: list[str]
) -> tuple[str, str] | None:
    """The first cheap filter the candidate fails (`filters.FILTERS` names it), and why."""
    if len(candidate.tests) < MIN_FILE_TESTS:
        return "file_tests", f"{len(candidate.tests)} passing tests (need {MIN_FILE_TESTS})"
    if candidate.failing:
        return (
            "file_tests",
            f"{len(candidate.failing)} of its tests fail, e.g. {candidate.failing[0]}",
        )
    if candidate.focus < MIN_FOCUS:
        return (
            "test_focus",
            f"{candidate.module} holds {candidate.focus:.0%} of the statements its tests run "
            f"(want {MIN_FOCUS:.0%})",
        )
    if len(candidate.mutants) < MIN_KILLED:
        return "mutant_sites", f"{len(candidate.mutants)} mutants possible (need {MIN_KILLED})"
    return hidden_lines_failure(tree, [candidate.file], files)


def testing_row(candidate: TestingCandidate) -> Proposal:
    """Its `proposals.json` row: `file` the test file deleted, the mutated functions as
    symbols, each mutant's kind as mutations, the module's statements the file's tests run
    as removed statements, its focus as hidden coverage, the candidate mutants as the
    predicted FAIL_TO_PASS and, once measured, those killed as FAIL_TO_PASS (the
    reference's tests passing on the original as PASS_TO_PASS)."""
    measured = {
        "operations": [RemoveFile(file=candidate.file).model_dump()],
        "mutants": [m.model_dump() for m in candidate.mutants],
    }
    digest = hashlib.sha256(json.dumps(measured).encode()).hexdigest()
    return Proposal(
        key=candidate.key, kind="testing", file=candidate.file, symbols=candidate.functions,
        mutations=[site.kind for site in candidate.sites], candidate_digest=digest[:16],
        removed_statements=candidate.covered, exercising_tests=len(candidate.tests),
        predicted_fail_to_pass=len(candidate.mutants), hidden_coverage=candidate.focus,
    )  # fmt: skip


def agent_test_globs(path: str) -> list[str]:
    """The agent's test files (`MutantsVerification.test_files`): any named like the
    deleted file in its folder or below it."""
    folder, name = posixpath.split(path)
    if name.startswith("test_"):
        pattern = "test_*.py"
    elif name.endswith("_test.py"):
        pattern = "*_test.py"
    else:
        return [path]
    return [f"{folder}/**/{pattern}" if folder else f"**/{pattern}"]


def testing_spec(
    release: Release, candidate: TestingCandidate, ident: str, environment: list[str] | None
) -> dict[str, object]:
    """The task's fields, every candidate mutant in it; the prompt is set once measured.
    A mutant that makes the tests hang is killed by the time limit, so it is kept short
    (v1's testing tasks': each mutant's run is one grading run)."""
    data = base_spec(release, ident, "testing", environment)
    data["mutation"] = {
        "kind": "feature_deletion", "operations": [RemoveFile(file=candidate.file).model_dump()],
    }  # fmt: skip
    data["verification"] = {
        "kind": "mutants", "test_files": agent_test_globs(candidate.file),
        "min_kill_share": MIN_KILL_SHARE, "min_tests": min(MIN_TESTS, len(candidate.tests)),
        "mutants": [m.model_dump() for m in candidate.mutants],
    }  # fmt: skip
    data["limits"] = {"test_timeout_s": TEST_TIMEOUT_S}
    return data


def testing_entries(
    tree: Path,
    testmap: CoverageMap,
    files: list[str],
    package: str,
    job: Callable[[TestingCandidate, str], Job],
) -> tuple[list[Proposal], list[Entry], set[str]]:
    """Every testing candidate's row (cheap filters applied), the survivors to measure
    (one task per module: the module is the overlap key) and every candidate's task id;
    `job(candidate, task_id)` makes a survivor's `measure.Job`."""
    rows: list[Proposal] = []
    entries: list[Entry] = []
    ids: set[str] = set()
    for candidate in enumerate_testing(tree, testmap):
        ident = testing_id(package, candidate)
        ids.add(ident)
        row = testing_row(candidate)
        rows.append(row)
        failure = testing_failure(tree, candidate, files)
        if failure is not None:
            row.failed, row.why = failure
            continue
        row.task_id = ident
        names = {(candidate.module, "(tests)")}
        entries.append(Entry(row, names, lambda c=candidate, i=ident: job(c, i)))  # type: ignore[misc]
    return rows, entries, ids


# --- the prompt -----------------------------------------------------------------------


@dataclass(frozen=True)
class TestingFacts:
    __test__ = False

    task_id: str
    package: str
    module: str  # dotted
    path: str  # where the tests go: the deleted file
    summary: str = ""  # the module docstring's first sentence
    names: list[str] = field(default_factory=list)  # public names, most tested first
    test_names: list[str] = field(default_factory=list)  # the deleted tests
    sole: bool = True  # no other test file of the suite runs the module


def testing_facts(
    tree: Path, testmap: CoverageMap, candidate: TestingCandidate, ident: str, package: str,
    dotted: str,
) -> TestingFacts:  # fmt: skip
    """The prompt's facts: the module's docstring, its public top-level names ordered by
    how many of the deleted tests run their bodies, the deleted tests' names."""
    text = (tree / candidate.module).read_text(encoding="utf-8", errors="replace")
    try:
        summary = first_sentence(ast.get_docstring(parse_module(text)) or "")
    except SyntaxError:
        summary = ""
    tests = set(candidate.tests)
    ranked = []
    for symbol in top_level_symbols(tree, candidate.module):
        body = range(symbol.start + 1, symbol.end + 1)
        ran = testmap.tests_running(candidate.module, body) & tests
        if symbol.public and ran:
            ranked.append((-len(ran), symbol.start, symbol.name))
    names = [name for _, _, name in sorted(ranked)]
    others = {t for t in testmap.outcomes if test_file(t) != candidate.file}
    statements = testmap.statements.get(candidate.module, [])
    sole = not testmap.tests_running(candidate.module, statements) & others
    return TestingFacts(
        ident, package, dotted, candidate.file, summary, names, candidate.tests, sole
    )


def spread(items: list[str], count: int) -> list[str]:
    """`count` of the items, evenly spaced (the tests' names are sorted: not all of one
    function's)."""
    if len(items) <= count:
        return items
    return [items[at * len(items) // count] for at in range(count)]


def _pick(seed: int, options: list[str]) -> str:
    return options[seed % len(options)]


def testing_prompt(facts: TestingFacts) -> str:
    """A user's request for tests of the module, wording and detail picked by a hash of
    the task id (the same task always gets the same prompt)."""
    seed = int(hashlib.sha256(facts.task_id.encode()).hexdigest()[:8], 16)
    module, path = f"`{facts.module}`", f"`{facts.path}`"
    openings = [
        f"Please write tests for {module}; put them in {path}.",
        f"{facts.package} is missing tests for {module}. Add them as {path}, using pytest.",
    ]
    if facts.sole:  # only then is it true that nothing else tests it
        openings += [
            f"{module} has no tests at all. Could you write a pytest suite for it in {path}?",
            f"Nothing tests {module} right now. I'd like a proper pytest file for it at {path}.",
        ]
    parts = [_pick(seed, openings)]
    if facts.summary and (seed >> 4) % 3:
        parts.append(_pick(seed >> 6, [
            f'Its docstring sums it up: "{facts.summary}."',
            f"For context, the module is described as: {facts.summary}.",
        ]))  # fmt: skip
    shown = facts.names[: (seed >> 8) % (MAX_PROMPT_NAMES + 1)]
    if shown:
        named = listed([f"`{n}`" for n in shown])
        parts.append(_pick(seed >> 10, [
            f"The main entry {'points are' if len(shown) > 1 else 'point is'} {named}.",
            f"Start with {named}, since that's what we use most.",
        ]))  # fmt: skip
    cases = spread(behaviours(facts.test_names, []), 2 + (seed >> 12) % 3)
    if cases:
        parts.append(_pick(seed >> 14, [
            f"I care about real behaviour, e.g. {listed(cases)}.",
            f"Cover at least {listed(cases)}.",
            f"Cases that matter to us: {listed(cases)}.",
        ]))  # fmt: skip
    parts.append(_pick(seed >> 16, [
        "Leave the library code alone.",
        "Only add tests; don't change anything in the package itself.",
        "The tests should catch real regressions, so check results, and leave the library "
        "code as it is.",
    ]))  # fmt: skip
    return " ".join(parts)


# --- measurement ----------------------------------------------------------------------


def killed_by(report_tests: dict[str, TestOutcome], mutants: list[Mutant]) -> list[str]:
    return [m.id for m in mutants if report_tests.get(f"mutant:{m.id}") is TestOutcome.PASSED]


def _scratch() -> tempfile.TemporaryDirectory[str]:
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=root)


def _kills(key: str, built: BuiltTask, sandboxes: SandboxBackend) -> Measured:
    """The reference graded with every candidate mutant: those it kills (as the measured
    FAIL_TO_PASS), its tests that pass on the original, and a failure when a control
    failed (the mutants did not run) or it kills too few."""
    check = built.task.verification
    assert isinstance(check, MutantsVerification)
    with _scratch() as folder:
        reference = answer.reference_patch(built, Path(folder) / "ref-tree")
        report = grade(built.prepared(), reference, sandboxes, Path(folder) / "ref")
    own = [o for t, o in report.tests.items() if not t.startswith("mutant:")]
    killed = killed_by(report.tests, check.mutants)
    done = Measured(
        key, fail_to_pass=killed, pass_to_pass=sum(o is TestOutcome.PASSED for o in own),
        changed_lines=answer.reference_changed_lines(built),
    )  # fmt: skip
    if not all(f"mutant:{m.id}" in report.tests for m in check.mutants):
        done.failure = ("reference_graded", report.error or "the reference's tests did not run")
    elif len(killed) < MIN_KILLED:
        why = f"its tests kill {len(killed)} of {len(check.mutants)} mutants (need {MIN_KILLED})"
        done.failure = ("killed_mutants", why)
    return done


def final_spec(data: dict[str, object], killed: list[str], passed: int) -> dict[str, object]:
    """The task's fields with the killed mutants only, `min_tests` what the reference met."""
    check = dict(data["verification"])  # type: ignore[call-overload]
    kept = set(killed)
    check["mutants"] = [m for m in check["mutants"] if m["id"] in kept]
    check["min_tests"] = max(1, min(MIN_TESTS, passed))
    return dict(data, verification=check)


def _validation_failure(draft: Path, sandboxes: SandboxBackend) -> tuple[str, str] | None:
    """What `tasks validate` checks of a mutants task (`checks.graded_only_problems`), on
    the task the draft now holds; its build is the one validation will find cached."""
    try:
        built = build(load_task(draft))
    except (BuildError, TaskFileError) as error:
        return "build", str(error)
    record = TaskValidation(id=built.task.id, category="testing", package=package_label(built))
    with _scratch() as folder:
        problems = graded_only_problems(built, sandboxes, Path(folder), record)
    return ("reference_graded", problems[0]) if problems else None


class TestingKind:
    """Graded by mutants: no lists to derive (`measure_testing`); the prompt is the one
    written offline before it was measured."""

    family = None

    def measure(self, job: Job) -> Measured:
        return in_draft(job, measure_testing)

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        return None


def measure_testing(job: Job, data: dict[str, object], draft: Path) -> Measured:
    """A testing candidate's measurement, on its draft: the kills,
    then the validator's check of the task with the killed mutants only; the task file
    is written when both pass."""
    try:
        built = build(load_task(draft))
    except (BuildError, TaskFileError) as error:
        return Measured(job.key, failure=("build", str(error)), measured=False)
    sandboxes = backend_for(built, job.backend)
    done = _kills(job.key, built, sandboxes)
    if done.failure is not None:
        return done
    final = final_spec(data, done.fail_to_pass, done.pass_to_pass or 0) | {"prompt": job.prompt}
    write_spec(draft, final)
    done.failure = _validation_failure(draft, sandboxes)
    if done.failure is None:
        write_spec(job.path, final)
        done.path, done.prompt_writer = job.path, "offline"
    return done
