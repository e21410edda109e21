"""Scoring an attempt in a clean state.

The agent's patch is applied to a fresh copy of the prepared workspace; test
files and test-runner configuration are restored from the task; the hidden
tests are added; pytest runs confined, with the workspace kept off `sys.path`
at interpreter start (`python -P`), the task's own configuration file named
with `-c` (so no planted `pytest.toml` outranks it), plugins not auto-loaded,
the package's own `addopts` ignored, and its JUnit report streamed to the
harness through a pipe: it can be appended to but not rewritten, and anything
but exactly one well-formed document counts as no report. Outcomes are read
from that report, never from printed output.

Not covered: code under test runs in the same process as pytest, so code that
deliberately patches pytest's reporting from inside (or takes over the pipe
before pytest writes to it) is not stopped here.
"""

from __future__ import annotations

import configparser
import shutil
import sys
import threading
import time
import tomllib
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from harness.junit import ReportError, outcomes_for, parse_junit_report
from harness.results import Failure, TestOutcome
from harness.sandbox.baseline import BaselineError, apply_patch
from harness.sandbox.confinement import scrubbed_env
from harness.sandbox.process import REPORT_PLACEHOLDER
from harness.sandbox.protocol import CommandRunner
from harness.spec import PreparedTask


@dataclass
class GradeReport:
    resolved: bool
    failure: Failure | None
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    error: str | None = None
    duration_s: float = 0.0
    output: str = ""


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


def pytest_argv(test_args: list[str], rootdir: Path, config: Path) -> list[str]:
    """pytest's JUnit report goes to the report pipe (see `run_process`), never to a file."""
    return [
        sys.executable, "-P", "-m", "pytest", *test_args,
        f"--rootdir={rootdir}",
        "-c", str(config),
        f"--junitxml={REPORT_PLACEHOLDER}",
        "-o", "junit_family=xunit1",
        "-o", "addopts=",
        "-p", "no:cacheprovider",
        "--continue-on-collection-errors",
        "-q", "--no-header", "-rN",
    ]  # fmt: skip


def matching(root: Path, patterns: list[str]) -> list[Path]:
    found = {path for pattern in patterns for path in root.glob(pattern)}
    return sorted(found, key=lambda path: len(path.parts))


def restore_protected(original: Path, target: Path, patterns: list[str]) -> None:
    """Makes every protected path in `target` exactly what it is in `original`.

    A pattern that matches a folder (`tests/**` matches `tests/` itself) protects all of it.
    """
    for path in matching(target, patterns):
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
    for path in matching(original, patterns):
        destination = target / path.relative_to(original)
        if path.is_dir() and not path.is_symlink():
            shutil.copytree(path, destination, symlinks=True, dirs_exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination, follow_symlinks=False)


def build_grading_tree(task: PreparedTask, patch: str, workspace: Path) -> None:
    shutil.copytree(task.workspace, workspace, symlinks=True)
    apply_patch(patch, workspace)
    restore_protected(task.workspace, workspace, task.verification.protected_paths)
    if task.hidden_dir.is_dir():
        shutil.copytree(task.hidden_dir, workspace, symlinks=True, dirs_exist_ok=True)


def _config(task: PreparedTask, workspace: Path) -> Path:
    """The task's own pytest configuration, named explicitly so no planted file outranks it."""
    name = pytest_config(task.workspace)
    if name is not None:
        return Path(name)  # the restored copy, relative to the grading workspace
    empty = workspace / ".cursorbench-pytest.ini"
    empty.write_text("[pytest]\n")
    return Path(empty.name)


def grade(
    task: PreparedTask,
    patch: str,
    grade_dir: Path,
    runner: CommandRunner,
    slots: threading.Semaphore | None = None,
) -> GradeReport:
    started = time.monotonic()
    if grade_dir.exists():
        shutil.rmtree(grade_dir)
    workspace, home = grade_dir / "workspace", grade_dir / "home"
    home.mkdir(parents=True)
    try:
        build_grading_tree(task, patch, workspace)
    except (BaselineError, OSError) as error:
        return GradeReport(False, Failure.INFRA_ERROR, error=f"preparing the grading tree: {error}")
    argv = pytest_argv(task.verification.test_args, workspace, _config(task, workspace))
    env = scrubbed_env(home if runner.backend == "subprocess" else Path("/tmp"))
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with slots or nullcontext():
        done = runner.run(
            argv,
            cwd=workspace,
            writable=[workspace],
            env=env,
            timeout=task.limits.test_timeout_s,
            report=True,
        )
    verification = task.verification
    try:
        report = parse_junit_report(done.report or b"")
        report_problem = None
    except ReportError as error:
        report, report_problem = {}, str(error)
    tests = outcomes_for(verification.fail_to_pass + verification.pass_to_pass, report)
    resolved = not done.timed_out and all(o is TestOutcome.PASSED for o in tests.values())
    failure = None if resolved else Failure.TESTS_FAILED
    error = report_problem
    if done.timed_out:
        failure, error = Failure.TEST_TIMEOUT, f"tests ran over {task.limits.test_timeout_s}s"
    return GradeReport(
        resolved=resolved,
        failure=failure,
        tests=tests,
        error=error,
        duration_s=time.monotonic() - started,
        output=done.output,
    )
