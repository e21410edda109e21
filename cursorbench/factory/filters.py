"""What the proposer measures of each candidate, and the filters it must pass.

Cheap filters read the coverage map only; the candidates that pass them are built as
tasks (the build runs the leak scan) and their test lists derived by the validator's
own `checks.derive_tests` (the pristine tree three times, the broken tree once; `measure`): the
measured FAIL_TO_PASS is taken from the hidden test files only, and the measured spill
is the validator's. Thresholds are the validator's where it has one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field

from cursorbench.factory.bugs import BugCandidate
from cursorbench.factory.candidates import Candidate
from cursorbench.validation.checks import MAX_SPILL, MAX_SPILL_SHARE, MIN_FAIL_TO_PASS
from cursorbench.validation.coverage_check import MIN_COVERAGE
from cursorbench.validation.leaks import MIN_CHARS, MIN_HITS
from harness.grading.canaries import canary_problems

MIN_STATEMENTS = 5  # executable lines removed
MAX_STATEMENTS = 400
MAX_HIDDEN_SHARE = 0.5  # of the suite's test files

# In the order they are applied; `proposals.json` names the first one a candidate failed
# (a bug candidate has no size or import filter; a testing candidate's own filters are
# `file_tests`, `test_focus`, `mutant_sites`, `killed_mutants` and `reference_graded`:
# `testing_tasks`; a refactor candidate's own is `merge`: `refactor_tasks`).
FILTERS = (
    "merge", "size", "imported_elsewhere", "runs_at_import", "hidden_fail_to_pass", "spill",
    "hidden_coverage", "anchors", "canaries", "file_tests", "test_focus", "mutant_sites",
    "test_lines_in_source", "overlap", "max_reached", "build",
    "measured_fail_to_pass", "measured_spill", "derive", "killed_mutants", "reference_graded",
)  # fmt: skip


class Proposal(BaseModel):
    """One candidate's row of `proposals.json` (a testing candidate's fields mean what
    `testing_tasks.testing_row` says)."""

    key: str
    kind: str = "deletion"  # or "bugs", "iterate", "testing"
    file: str
    symbols: list[str]  # deleted; for bugs, the functions changed
    mutations: list[str] = Field(default_factory=list)  # for bugs, each change's kind
    candidate_digest: str = ""  # of the mutation and hidden files: a rerun reuses a
    # measurement only when they are the same
    task_id: str | None = None
    removed_statements: int = 0
    exercising_tests: int = 0
    hidden_tests: list[str] = Field(default_factory=list)
    predicted_fail_to_pass: int = 0
    predicted_spill: int = 0
    hidden_coverage: float | None = None
    fail_to_pass: int | None = None  # measured, when it got that far
    pass_to_pass: int | None = None
    spilled: int | None = None
    changed_lines: int | None = None
    seconds: float = 0.0  # machine time spent on this candidate
    failed: str | None = None  # the first filter it failed; None: proposed as a task
    why: str = ""
    prompt_writer: str = ""
    resumed: bool = False  # its measurement was read from an earlier run's proposals.json


def spill_limit(visible_tests: int) -> float:
    return min(MAX_SPILL, MAX_SPILL_SHARE * max(visible_tests, 1))


def cheap_failure(
    candidate: Candidate,
    test_files: int,
    passing: int,
    importers: list[str],
    min_statements: int = MIN_STATEMENTS,
) -> tuple[str, str] | None:
    """The first cheap filter the candidate fails, and why; None when it passes them all.
    `min_statements` raises the size floor (a suite that wants large changes)."""
    size = len(candidate.removed)
    low = max(MIN_STATEMENTS, min_statements)
    if not low <= size <= MAX_STATEMENTS:
        return "size", f"{size} executable lines (want {low}-{MAX_STATEMENTS})"
    if importers:
        return "imported_elsewhere", f"imported by name in {', '.join(importers[:3])}"
    if candidate.runs_at_import:
        return "runs_at_import", "its body runs at import or collection: every test would fail"
    if len(candidate.predicted_fail) < MIN_FAIL_TO_PASS:
        return (
            "hidden_fail_to_pass",
            f"{len(candidate.predicted_fail)} hidden tests exercise it (need {MIN_FAIL_TO_PASS})",
        )
    if len(candidate.hidden_files) > max(1, MAX_HIDDEN_SHARE * test_files):
        return "hidden_fail_to_pass", f"needs {len(candidate.hidden_files)} hidden files"
    visible = passing - len(candidate.predicted_fail)
    if len(candidate.predicted_spill) > spill_limit(visible):
        return (
            "spill",
            f"{len(candidate.predicted_spill)} visible tests exercise it, "
            f"e.g. {candidate.predicted_spill[0]}",
        )
    cover = candidate.hidden_coverage
    if cover is None or cover < MIN_COVERAGE:
        return "hidden_coverage", f"the hidden tests alone run {cover or 0:.0%} of its lines"
    return None


BugLike = TypeVar("BugLike", bound=BugCandidate)


def spill_safe_first(candidates: list[BugLike], passing: int) -> list[BugLike]:
    """Bug candidates whose every exercising visible test failing would still be within
    the spill limit first (they cannot fail `measured_spill`), the others after, each
    part in its order. A bug's spill is known only once measured, and a central function's
    candidates fail it one after another (sqlparse's grouping engine: 110 of 110)."""

    def unsafe(candidate: BugLike) -> bool:
        visible = passing - len(candidate.predicted_fail)
        return len(candidate.predicted_spill) > spill_limit(visible)

    return sorted(candidates, key=unsafe)


def bug_cheap_failure(candidate: BugCandidate, test_files: int) -> tuple[str, str] | None:
    """A bug candidate's cheap filters: enough hidden tests run its changed lines, in few
    enough files, and they run most of those lines. Which of the visible tests that run
    them would fail is not predicted (a bug fails only some): the measured spill decides."""
    if len(candidate.predicted_fail) < MIN_FAIL_TO_PASS:
        return (
            "hidden_fail_to_pass",
            f"{len(candidate.predicted_fail)} hidden tests run its lines (need {MIN_FAIL_TO_PASS})",
        )
    if len(candidate.hidden_files) > max(1, MAX_HIDDEN_SHARE * test_files):
        return "hidden_fail_to_pass", f"needs {len(candidate.hidden_files)} hidden files"
    cover = candidate.hidden_coverage
    if cover is None or cover < MIN_COVERAGE:
        return "hidden_coverage", f"the hidden tests alone run {cover or 0:.0%} of its lines"
    return None


def review_anchor_failure(tree: Path, candidate: BugCandidate) -> tuple[str, str] | None:
    """A review candidate whose defects cannot all be pointed at (a changed line that is
    not unique in the file the bugs leave) cannot be graded by location."""
    from cursorbench.factory.review_tasks import review_facts

    if review_facts(tree, candidate) is None:
        return "anchors", "a changed line is not unique in the mutated file"
    return None


def canary_failure(tree: Path, hidden_files: list[str]) -> tuple[str, str] | None:
    """Validation refuses hidden tests into which grading can plant no canaries (no test
    compares a value with a literal in straight-line code: table-driven tests in loops);
    the same check, on the pristine tree's files, before anything is built."""
    sources = {}
    for path in hidden_files:
        try:
            sources[path] = (tree / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    problems = canary_problems(sources)
    return ("canaries", problems[0]) if problems else None


def hidden_lines_failure(
    tree: Path, hidden_files: list[str], files: list[str]
) -> tuple[str, str] | None:
    """The build's leak scan refuses a workspace file holding `MIN_HITS` distinctive lines
    of the answer, and the hidden tests' lines are part of the answer: when a package file
    (its docstring examples, most often) holds that many lines of the hidden tests that are
    no line of the workspace, the build would fail. The same count on the pristine tree's
    package files, before building; the scan itself, with the reference's lines too and
    every readable file, still runs at the build."""
    hidden = set(hidden_files)
    present: set[str] = set()
    texts = {}
    for path in files:
        texts[path] = (tree / path).read_text(encoding="utf-8", errors="replace")
        present.update(line.strip() for line in texts[path].splitlines())
    patterns: set[str] = set()
    for path in hidden:
        try:
            lines = (tree / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        patterns |= {line.strip() for line in lines if len(line.strip()) >= MIN_CHARS}
    patterns -= present
    for path, text in texts.items():
        hits = [line for line in patterns if line in text]
        if len(hits) >= MIN_HITS:
            return (
                "test_lines_in_source",
                f"{path} holds {len(hits)} hidden-test lines, e.g. {hits[0]!r}",
            )
    return None


def measured_failure(
    fail_to_pass: int, problems: list[str], spilled: int, visible: int
) -> tuple[str, str] | None:
    """The first measured filter failed, from `derive_tests`' figures and problems."""
    if fail_to_pass < MIN_FAIL_TO_PASS:
        return "measured_fail_to_pass", f"{fail_to_pass} hidden tests fail on the broken tree"
    if spilled > spill_limit(visible):
        return "measured_spill", f"{spilled} visible tests fail on the broken tree"
    if problems:
        return "derive", problems[0]
    return None
