"""Running a tree's whole test suite in the sandbox, with every test's outcome by node id.

Validation needs more than grading gives (grading reports only the tests a task
lists): the outcome of every test pytest ran, to find which tests are stable on the
pristine tree and which the mutation breaks. The run is the grading run (same
sandbox backend, read-only workspace, `python -P`, the tree's own config with `-c`,
plugin autoloading off, `--continue-on-collection-errors`, JUnit XML through the
report pipe), without canaries. A test that is not in the report (its module failed
to collect) is simply absent; callers count absence as failure.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading.grade import EMPTY_CONFIG, PYTEST_ENV, pytest_argv, pytest_config
from harness.grading.junit import ReportError, parse_junit_report
from harness.results import TestOutcome
from harness.sandbox.command import Command
from harness.sandbox.protocol import SandboxBackend


@dataclass
class SuiteRun:
    outcomes: dict[str, TestOutcome] = field(default_factory=dict)
    duration_s: float = 0.0
    output: str = ""
    timed_out: bool = False
    error: str | None = None


def tree_files(*roots: Path | None) -> set[str]:
    files: set[str] = set()
    for root in roots:
        if root is not None and root.is_dir():
            files |= {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    return files


def node_id(classname: str, name: str, files: set[str]) -> str | None:
    """The pytest node id of a JUnit (classname, name) pair: the longest prefix of the
    dotted classname that is a test file, then its classes."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if path in files:
            return "::".join([path, *parts[cut:], name])
    return None


def run_suite(
    backend: SandboxBackend,
    tree: Path,
    scratch: Path,
    test_args: Sequence[str],
    timeout: float,
    overlay: Path | None = None,
    patch: str = "",
) -> SuiteRun:
    """Runs pytest over `tree` (plus `overlay`'s files, plus `patch`) in a fresh sandbox."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    layer = scratch / "overlay"
    if overlay is not None and overlay.is_dir():
        shutil.copytree(overlay, layer, symlinks=True)
    else:
        layer.mkdir()
    if pytest_config(tree) is None:
        (layer / EMPTY_CONFIG).write_text("[pytest]\n")
    sandbox = backend.open(tree, scratch / "sandbox", layer, track_changes=False)
    try:
        if patch:
            sandbox.apply_patch(patch)
        config = pytest_config(tree) or EMPTY_CONFIG
        argv = pytest_argv(list(test_args), sandbox.root, f"{sandbox.root}/{config}")
        done = sandbox.execute(
            Command(argv, timeout=timeout, read_only=True, report=True, env=PYTEST_ENV)
        )
    finally:
        sandbox.close()
        shutil.rmtree(scratch, ignore_errors=True)
    run = SuiteRun(duration_s=done.duration_s, output=done.output, timed_out=done.timed_out)
    try:
        report = parse_junit_report(done.report or b"")
    except ReportError as error:
        run.error = str(error)
        return run
    files = tree_files(tree, overlay)
    for (classname, name), outcome in report.items():
        found = node_id(classname, name, files)
        if found is not None:
            run.outcomes[found] = outcome
    if not report:
        run.error = "pytest wrote no report: " + done.output[-300:].replace("\n", " ")
    return run
