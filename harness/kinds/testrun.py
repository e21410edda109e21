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
pytest's reporting or inspect the calling test. Two checks detect that and fail
the attempt with `grader_tampering`: a canary (a near-copy of a real test that
must fail) that passes beside its original, and the twin run (`twin.py`): where
the task's reference restores functions, the hidden files run again on the
agent's tree with those functions stubbed, and a test that calls one must fail.
For the pytest kind the hidden files then run on their own (the twin's argv),
the other tests in a second run, and the twin in a fresh sandbox at the same
path, in a random order.
"""

from __future__ import annotations

import configparser
import contextlib
import functools
import random
import shutil
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.grading import canaries, twin
from harness.grading.junit import SEVERITY, ReportError, junit_key, outcomes_for, parse_junit_report
from harness.patch import (
    GradingChange,
    PatchFormatError,
    glob_regex,
    grading_change,
    is_protected,
    split_patch,
)
from harness.results import Failure, Score, TestOutcome
from harness.sandbox.command import Command
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
    planted = canaries.plant(sources, rng, frozenset(check.canary_exempt))
    for name, text in planted.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    if pytest_config(task.workspace) is None:
        (folder / EMPTY_CONFIG).write_text("[pytest]\n")
    return planted


@dataclass(frozen=True)
class TwinRun:
    """The twin's run (`twin.py`) and the tests that must fail in it."""

    done: Completed
    must_fail: dict[str, str]
    inconclusive: dict[str, str] = field(default_factory=dict)


def _twin_args(task: PreparedTask, check: Verification) -> list[str] | None:
    """The hidden files, when a twin run applies: functions to stub, whole files run, and
    every hidden file inside what `test_args` runs."""
    hidden = sorted(h for h in check.hidden_tests if h.endswith(".py"))
    if not task.restored_functions or not hidden:
        return None
    paths, _ = _paths_and_options(check.test_args)
    if any("::" in a for a in paths):
        return None
    roots = [a.rstrip("/") for a in paths]
    inside = lambda h: any(r in (".", "") or h == r or h.startswith(r + "/") for r in roots)  # noqa: E731
    return hidden if all(inside(h) and (task.hidden_dir / h).is_file() for h in hidden) else None


def grade_tests(
    task: PreparedTask,
    check: Verification,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
    rng: random.Random,
    read_back: str | None = None,
    refine: Refine | None = None,
    twin_run: bool = False,
) -> GradeReport:
    """The change graded by the task's tests. `refine` adds a kind's verdict to the run's
    (given `read_back`, a file as the change left it, read inside the sandbox); `twin_run`
    adds the twin (`twin.py`) where the task has functions to stub."""
    started = time.monotonic()
    protected = protected_files(task.workspace, check)
    try:
        change = grading_change(patch, check.protected_paths, protected)
    except PatchFormatError as error:
        return GradeReport(False, Failure.PATCH_REJECTED, error=f"unreadable change: {error}")
    overlay = scratch / "overlay"
    shutil.rmtree(overlay, ignore_errors=True)
    planted = _overlay(task, check, overlay, rng)
    hidden = _twin_args(task, check) if twin_run else None
    config = pytest_config(task.workspace) or EMPTY_CONFIG
    twin_first = hidden is not None and rng.random() < 0.5
    found_twin: TwinRun | None = None
    try:
        if twin_first and hidden is not None:
            found_twin = _twin(task, check, change.patch, backend, scratch, overlay, hidden, config)
        runs, text = _real_runs(task, check, change.patch, backend, scratch, overlay, hidden,
                                config, read_back)  # fmt: skip
        if hidden is not None and not twin_first:
            found_twin = _twin(task, check, change.patch, backend, scratch, overlay, hidden, config)
    except PatchRejected as error:
        return _early(Failure.PATCH_REJECTED, str(error), change, started)
    except ResourceLimitExceeded as error:
        return _early(Failure.RESOURCE_LIMIT, str(error), change, started)
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    report = judge(check, runs, planted, task.limits.test_timeout_s, found_twin)
    if refine is not None:
        report = refine(report, text)
    report.duration_s = time.monotonic() - started
    report.dropped = change.dropped_protected + change.dropped_links
    return report


def _open(
    task: PreparedTask, backend: SandboxBackend, scratch: Path, overlay: Path, patch: str
) -> Sandbox:
    """A grading sandbox with the change applied; always at the same path (the twin's too)."""
    shutil.rmtree(scratch / "sandbox", ignore_errors=True)
    sandbox = backend.open(
        task.workspace,
        scratch / "sandbox",
        overlay,
        track_changes=False,
        python_env=task.python_env,
    )
    try:
        sandbox.apply_patch(patch)
    except BaseException:
        sandbox.close()
        raise
    return sandbox


def _real_runs(
    task: PreparedTask,
    check: Verification,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
    overlay: Path,
    hidden: list[str] | None,
    config: str,
    read_back: str | None,
) -> tuple[list[Completed], str | None]:
    """The tests on the agent's tree: in one run, or (with a twin) the hidden files with the
    twin's argv and the others in a run of their own."""
    sandbox = _open(task, backend, scratch, overlay, patch)
    try:
        root, timeout = sandbox.root, task.limits.test_timeout_s
        parts = [check.test_args] if hidden is None else _split(check.test_args, hidden)
        runs = []
        for args in parts:
            argv = pytest_argv(args, root, f"{root}/{config}")
            runs.append(
                sandbox.execute(
                    Command(argv, timeout=timeout, read_only=True, report=True, env=PYTEST_ENV)
                )
            )
        return runs, _read_back(sandbox, read_back)
    finally:
        sandbox.close()


_WITH_VALUE = {"-p", "-k", "-m", "-o", "-W", "--deselect", "--ignore", "--ignore-glob"}


def _paths_and_options(test_args: list[str]) -> tuple[list[str], list[str]]:
    """pytest arguments split into paths and options (with the value of `-p x` and kin)."""
    paths: list[str] = []
    options: list[str] = []
    arguments = iter(test_args)
    for argument in arguments:
        if argument in _WITH_VALUE:
            options += [argument, next(arguments, "")]
        elif argument.startswith("-"):
            options.append(argument)
        else:
            paths.append(argument)
    return paths, options


def split_args(task: PreparedTask, check: Verification) -> list[list[str]] | None:
    """The arguments of grading's runs where it splits the tests in two (a twin run
    applies): the hidden files on their own, then the other tests; None where it runs them
    in one."""
    hidden = _twin_args(task, check)
    return None if hidden is None else _split(check.test_args, hidden)


def _split(test_args: list[str], hidden: list[str]) -> list[list[str]]:
    """[the hidden files] and [the other test paths, the hidden files ignored], each with
    the task's options."""
    paths, options = _paths_and_options(test_args)
    rest = [a for a in paths if a not in hidden]
    if not rest:
        return [[*hidden, *options]]
    return [[*hidden, *options], [*rest, *options, *(f"--ignore={h}" for h in hidden)]]


def _twin(
    task: PreparedTask,
    check: Verification,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
    overlay: Path,
    hidden: list[str],
    config: str,
) -> TwinRun | None:
    """The hidden files run on the agent's tree with the restored functions stubbed."""
    sandbox = _open(task, backend, scratch, overlay, patch)
    try:
        agent = _agent_python(sandbox, patch, check, task.restored_functions)
        planned = twin.plan(agent, task.restored_functions)
        if not planned.conclusive:
            return TwinRun(_NOT_RUN, {}, planned.inconclusive)
        sources = {h: sandbox.read(h) for h in hidden}
        elsewhere = _untouched_names(task.workspace, frozenset(agent), tuple(check.protected_paths))
        must = twin.must_fail(sources, planned.conclusive, elsewhere)
        if not must:
            return TwinRun(_NOT_RUN, {}, planned.inconclusive)
        for path, text in planned.files.items():
            sandbox.write(path, text)
        root = sandbox.root
        argv = pytest_argv(_split(check.test_args, hidden)[0], root, f"{root}/{config}")
        timeout = task.limits.test_timeout_s
        done = sandbox.execute(
            Command(argv, timeout=timeout, read_only=True, report=True, env=PYTEST_ENV)
        )
        return TwinRun(done, must, planned.inconclusive)
    except SandboxError:
        return None
    finally:
        sandbox.close()


_NOT_RUN = Completed(exit_code=0, output="", duration_s=0.0)


@functools.lru_cache(maxsize=64)
def _untouched_names(
    workspace: Path, touched: frozenset[str], protected: tuple[str, ...]
) -> set[str]:
    """Top-level names the prepared (trusted) workspace defines outside the files the twin
    stubs and the tests: `twin.must_fail` does not count on them."""
    files = {}
    for path in workspace.rglob("*.py"):
        relative = path.relative_to(workspace).as_posix()
        if relative in touched or is_protected(relative, list(protected), set()):
            continue
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 2_000_000:
            files[relative] = path.read_text(encoding="utf-8", errors="replace")
    return twin.defined_names(files)


def _agent_python(
    sandbox: Sandbox, patch: str, check: Verification, restored: dict[str, list[str]]
) -> dict[str, str]:
    """The Python files the reference restores and the change touches (tests aside), as the
    change left them, read inside the sandbox."""
    paths = set(restored)
    with contextlib.suppress(PatchFormatError):
        paths |= {
            c.path
            for c in split_patch(patch)
            if c.path.endswith(".py") and not c.deleted and c.link_target is None
            and not is_protected(c.path, check.protected_paths, set(check.hidden_tests))
        }  # fmt: skip
    files = {}
    for path in sorted(paths):
        try:
            text = sandbox.read(path)
        except SandboxError:
            continue
        if len(text) <= MAX_READ_BACK_CHARS:
            files[path] = text
    return files


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


def _merged(runs: list[Completed]) -> tuple[dict[tuple[str, str], TestOutcome], str | None]:
    """The runs' reports as one (the worst outcome wins), and what made one unreadable."""
    merged: dict[tuple[str, str], TestOutcome] = {}
    problem = None
    for done in runs:
        try:
            report = parse_junit_report(done.report or b"")
        except ReportError as unreadable:
            report, problem = {}, str(unreadable)
        for key, outcome in report.items():
            previous = merged.get(key)
            if previous is None or SEVERITY.index(outcome) > SEVERITY.index(previous):
                merged[key] = outcome
    return merged, problem


def judge(
    check: Verification,
    done: Completed | list[Completed],
    planted: canaries.Canaries,
    timeout_s: float,
    twin_run: TwinRun | None = None,
) -> GradeReport:
    """The verdict from finished test runs (and the twin's, if any): pure, no I/O."""
    runs = done if isinstance(done, list) else [done]
    report, problem = _merged(runs)
    tests = outcomes_for(check.fail_to_pass + check.pass_to_pass, report)
    whole_modules = not any("::" in arg for arg in check.test_args)
    sprung = _canaries_sprung(planted, report, whole_modules)
    if twin_run is not None and twin_run.must_fail:
        try:
            twin_report = parse_junit_report(twin_run.done.report or b"")
        except ReportError:
            twin_report = {}
        sprung += twin.sprung(twin_run.must_fail, twin_report)
    output = "\n".join(run.output for run in runs)
    if sprung:
        error = f"{len(sprung)} tests that must fail passed or vanished "
        error += "(canaries, or tests run with the restored functions stubbed): "
        error += "the verdict was tampered with"
        return GradeReport(False, Failure.GRADER_TAMPERING, tests, error, 0.0, output, sprung)
    if any(run.timed_out for run in runs):
        error = f"tests ran over {timeout_s}s"
        return GradeReport(False, Failure.TEST_TIMEOUT, tests, error, 0.0, output)
    resolved = all(outcome is TestOutcome.PASSED for outcome in tests.values())
    failure = None if resolved else Failure.TESTS_FAILED
    return GradeReport(resolved, failure, tests, problem, 0.0, output)


def _canaries_sprung(
    planted: canaries.Canaries, report: dict[tuple[str, str], TestOutcome], whole_modules: bool
) -> list[str]:
    """Canaries that passed while no case of their original failed, or that are missing
    while their module's other tests ran (when whole modules were run, a missing canary was
    taken out of the report)."""
    sprung = []
    bad = (TestOutcome.FAILED, TestOutcome.ERROR)
    for path, names in planted.names.items():
        module, _ = junit_key(f"{path}::x")
        siblings = [c for c, _ in report if c == module or c.startswith(module + ".")]
        for name in names:
            found = _cases(report, f"{path}::{name}")
            original = planted.originals.get(f"{path}::{name}")
            if original is not None and any(o in bad for _, o in _cases(report, original)):
                continue  # an honest wrong answer may hit a canary's neighbour value
            short = junit_key(f"{path}::{name}")[1]
            sprung += [
                f"{path}::{name}{case[len(short) :]} passed"
                for case, outcome in found
                if outcome is TestOutcome.PASSED
            ]
            if not found and siblings and whole_modules:
                sprung.append(f"{path}::{name} missing")
    return sprung


def _cases(
    report: dict[tuple[str, str], TestOutcome], node_id: str
) -> list[tuple[str, TestOutcome]]:
    """(name, outcome) of each reported case of a test, with any parameters."""
    classname, name = junit_key(node_id)
    return [
        (case_name, outcome)
        for (case_class, case_name), outcome in report.items()
        if case_class == classname and (case_name == name or case_name.startswith(name + "["))
    ]
