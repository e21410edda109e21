"""The grading pytest run that the pytest, docs and mutants kinds share.

1. The agent's change arrives as patch text. `patch.grading_change` drops
   what touches test files, test configuration or hidden tests, and links
   that leave the workspace (pure text work: nothing on disk is read).
2. A fresh sandbox opens over the prepared workspace with the hidden tests,
   each carrying its canaries (`canaries.py`), laid over it: all trusted
   content, copied before any of the agent's change exists there.
3. The change is applied inside the sandbox (`git apply`, confined).
4. pytest runs inside with the workspace mounted read-only, kept off
   `sys.path` at start (`python -P`), the task's own configuration named with
   `-c`, plugins not auto-loaded, the package's `addopts` ignored, and its
   JUnit report streamed to the harness through a pipe (append-only; anything
   but one well-formed document counts as no report).
5. `judge` turns the report into a verdict: a pure function.

Not prevented: code under test shares pytest's process, so it can patch
pytest's reporting or inspect the calling test. The canaries detect that: a
canary that passes fails the attempt with `grader_tampering`.
"""

from __future__ import annotations

import configparser
import random
import shutil
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness import canaries
from harness.junit import ReportError, junit_key, outcomes_for, parse_junit_report
from harness.patch import GradingChange, PatchFormatError, glob_regex, grading_change
from harness.results import Failure, Score, TestOutcome
from harness.sandbox.process import REPORT_PLACEHOLDER, Completed
from harness.sandbox.protocol import (
    PatchRejected,
    ResourceLimitExceeded,
    Sandbox,
    SandboxBackend,
    SandboxError,
)

if TYPE_CHECKING:
    from harness.kinds.pytest_kind import Verification
    from harness.spec import PreparedTask

EMPTY_CONFIG = ".cursorbench-pytest.ini"
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # no plugin loads unless the config asks
MAX_READ_BACK_CHARS = 2_000_000


@dataclass
class GradeReport:
    resolved: bool
    failure: Failure | None
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    error: str | None = None
    duration_s: float = 0.0
    output: str = ""
    canaries_passed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # parts of the change grading ignored
    scores: dict[str, Score] = field(default_factory=dict)  # e.g. the mutation score


# A kind's own verdict on top of the run's (the report, a file read back after the run).
Refine = Callable[[GradeReport, str | None], GradeReport]


def pytest_config(root: Path) -> str | None:
    """The file pytest would take its configuration from in `root` (pytest 9's order)."""
    for name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        if (root / name).is_file():
            return name
    sections = {"pyproject.toml": "tool.pytest", "tox.ini": "pytest", "setup.cfg": "tool:pytest"}
    for name, section in sections.items():
        if (root / name).is_file() and _has_section(root / name, section):
            return name
    return None


def _has_section(path: Path, section: str) -> bool:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".toml":
        try:
            return "pytest" in tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return False
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    return parser.has_section(section)


def pytest_argv(test_args: list[str], rootdir: str, config: str) -> list[str]:
    """pytest's JUnit report goes to the report pipe (see `run_process`), never to a file."""
    return [
        sys.executable, "-P", "-m", "pytest", *test_args,
        f"--rootdir={rootdir}",
        "-c", config,
        f"--junitxml={REPORT_PLACEHOLDER}",
        "-o", "junit_family=xunit1",
        "-o", "addopts=",
        "-p", "no:cacheprovider",
        "--continue-on-collection-errors",
        "-q", "--no-header", "-rN",
    ]  # fmt: skip


def protected_files(workspace: Path, check: Verification) -> set[str]:
    """Files of the prepared workspace under the protected patterns, plus the hidden tests."""
    regexes = [glob_regex(pattern) for pattern in check.protected_paths]
    found = set(check.hidden_tests)
    for path in workspace.rglob("*"):
        relative = path.relative_to(workspace).as_posix()
        if any(regex.fullmatch(relative) for regex in regexes):
            found.add(relative)
    return found


def _overlay(
    task: PreparedTask, check: Verification, folder: Path, rng: random.Random
) -> canaries.Canaries:
    """Hidden tests (with canaries) and, if the task has none, an empty pytest config."""
    if task.hidden_dir.is_dir():
        shutil.copytree(task.hidden_dir, folder, symlinks=True)
    else:
        folder.mkdir(parents=True)
    sources = {
        name: (task.hidden_dir / name).read_text(encoding="utf-8", errors="replace")
        for name in check.hidden_tests
        if (task.hidden_dir / name).is_file()
    }
    planted = canaries.plant(sources, rng)
    for name, text in planted.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    if pytest_config(task.workspace) is None:
        (folder / EMPTY_CONFIG).write_text("[pytest]\n")
    return planted


def grade_tests(
    task: PreparedTask,
    check: Verification,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
    rng: random.Random,
    read_back: str | None = None,
    refine: Refine | None = None,
) -> GradeReport:
    """The change graded by the task's tests. `refine` adds a kind's verdict to the run's
    (given `read_back`, a file as the change left it, read inside the sandbox)."""
    started = time.monotonic()
    protected = protected_files(task.workspace, check)
    try:
        change = grading_change(patch, check.protected_paths, protected)
    except PatchFormatError as error:
        return GradeReport(False, Failure.PATCH_REJECTED, error=f"unreadable change: {error}")
    overlay = scratch / "overlay"
    shutil.rmtree(overlay, ignore_errors=True)
    planted = _overlay(task, check, overlay, rng)
    sandbox = backend.open(task.workspace, scratch / "sandbox", overlay, track_changes=False)
    try:
        sandbox.apply_patch(change.patch)
        config = pytest_config(task.workspace) or EMPTY_CONFIG
        argv = pytest_argv(check.test_args, sandbox.root, f"{sandbox.root}/{config}")
        timeout = task.limits.test_timeout_s
        done = sandbox.execute(argv, timeout=timeout, read_only=True, report=True, env=PYTEST_ENV)
        text = _read_back(sandbox, read_back)
    except PatchRejected as error:
        return _early(Failure.PATCH_REJECTED, str(error), change, started)
    except ResourceLimitExceeded as error:
        return _early(Failure.RESOURCE_LIMIT, str(error), change, started)
    finally:
        sandbox.close()
        shutil.rmtree(overlay, ignore_errors=True)
    report = judge(check, done, planted, task.limits.test_timeout_s)
    if refine is not None:
        report = refine(report, text)
    report.duration_s = time.monotonic() - started
    report.dropped = change.dropped_protected + change.dropped_links
    return report


def _read_back(sandbox: Sandbox, path: str | None) -> str | None:
    """A file as the change left it, read inside the sandbox; None if absent or huge."""
    if path is None:
        return None
    try:
        text = sandbox.read(path)
    except SandboxError:
        return None
    return text if len(text) <= MAX_READ_BACK_CHARS else None


def _early(failure: Failure, error: str, change: GradingChange, started: float) -> GradeReport:
    dropped = change.dropped_protected + change.dropped_links
    duration = time.monotonic() - started
    return GradeReport(False, failure, error=error, duration_s=duration, dropped=dropped)


def judge(
    check: Verification, done: Completed, planted: canaries.Canaries, timeout_s: float
) -> GradeReport:
    """The verdict from a finished test run: pure, no I/O."""
    try:
        report = parse_junit_report(done.report or b"")
        problem = None
    except ReportError as unreadable:
        report, problem = {}, str(unreadable)
    tests = outcomes_for(check.fail_to_pass + check.pass_to_pass, report)
    whole_modules = not any("::" in arg for arg in check.test_args)
    sprung = _canaries_sprung(planted, report, whole_modules)
    output = done.output
    if sprung:
        error = f"{len(sprung)} canary tests that must fail passed or vanished: "
        error += "the verdict was tampered with"
        return GradeReport(False, Failure.GRADER_TAMPERING, tests, error, 0.0, output, sprung)
    if done.timed_out:
        error = f"tests ran over {timeout_s}s"
        return GradeReport(False, Failure.TEST_TIMEOUT, tests, error, 0.0, output)
    resolved = all(outcome is TestOutcome.PASSED for outcome in tests.values())
    failure = None if resolved else Failure.TESTS_FAILED
    return GradeReport(resolved, failure, tests, problem, 0.0, output)


def _canaries_sprung(
    planted: canaries.Canaries, report: dict[tuple[str, str], TestOutcome], whole_modules: bool
) -> list[str]:
    """Canaries that passed, or that are missing while their module's other tests ran
    (when whole modules were run, a missing canary was taken out of the report)."""
    sprung = []
    for path, names in planted.names.items():
        module, _ = junit_key(f"{path}::x")
        siblings = [c for c, _ in report if c == module or c.startswith(module + ".")]
        for name in names:
            found = [
                (case_name, outcome)
                for (case_class, case_name), outcome in report.items()
                if case_class == module and (case_name == name or case_name.startswith(name + "["))
            ]
            sprung += [f"{path}::{n} passed" for n, o in found if o is TestOutcome.PASSED]
            if not found and siblings and whole_modules:
                sprung.append(f"{path}::{name} missing")
    return sprung
