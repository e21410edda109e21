"""Validation's step 4: how much of the removed code the hidden tests execute.

The share of the removed executable lines that the tests of `coverage_args` run on the
reference solution, measured with `coverage` inside the sandbox; below `MIN_COVERAGE`
the task is refused (`checks.validate_full`), since its tests do not test what it deletes.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

from cursorbench.tasks.workspace import BuiltTask
from harness.grading.grade import PYTEST_ENV, pytest_config
from harness.kinds.registry import kind_of
from harness.sandbox.command import Command
from harness.sandbox.protocol import SandboxBackend

MIN_COVERAGE = 0.5
COVERAGE_MARK = "CURSORBENCH-COVERAGE "


def python_lines_removed(built: BuiltTask) -> bool:
    return any(path.endswith(".py") for path in built.removed_lines())


def coverage_args(built: BuiltTask, test_args: list[str]) -> list[str] | None:
    """The tests whose coverage counts. For a feature deletion the hidden tests alone: a
    visible test that happens to run the feature does not show the hidden tests test it.
    For a rewrite (refactor, migration, optimize: the original is the target and nothing
    is deleted) the whole suite: its tests guard the behaviour, while the hidden tests
    check the shape of the rewrite and need not run it."""
    if built.task.mutation is not None and built.task.mutation.kind == "rewrite":
        return list(test_args)
    check = built.task.verification
    hidden = sorted(f for f in kind_of(check).failing_by_design(check) if f.endswith(".py"))
    return hidden_only_args(test_args, hidden) if hidden else None


def coverage_share(
    built: BuiltTask, sandboxes: SandboxBackend, scratch: Path, test_args: list[str]
) -> float | None:
    """Share of the removed executable lines that the tests of `coverage_args` execute on
    the reference."""
    removed = {p: sorted(lines) for p, lines in built.removed_lines().items()}
    removed = {p: lines for p, lines in removed.items() if p.endswith(".py")}
    if not removed:
        return None
    layer = scratch / "cov-overlay"
    if built.hidden.is_dir():
        shutil.rmtree(layer, ignore_errors=True)
        shutil.copytree(built.hidden, layer)
    sandbox = sandboxes.open(built.workspace, scratch / "cov", layer, track_changes=False)
    try:
        sandbox.apply_patch(built.reference_patch)
        config = pytest_config(built.workspace) or ""
        args = coverage_args(built, test_args)
        if args is None:
            return None
        args += ["-q", "-p", "no:cacheprovider"]
        args += ["-o", "addopts=", "--continue-on-collection-errors", f"--rootdir={sandbox.root}"]
        args += ["-c", f"{sandbox.root}/{config}"] if config else []
        script = _COVERAGE_SCRIPT.format(
            root=sandbox.root, files=json.dumps(removed), args=shlex.join(args)
        )
        done = sandbox.execute(
            Command(
                [sys.executable, "-P", "-c", script],
                timeout=built.task.limits.test_timeout_s * 3,
                read_only=True,
                env=PYTEST_ENV,
            )
        )
    finally:
        sandbox.close()
    line = next((x for x in done.output.splitlines() if x.startswith(COVERAGE_MARK)), None)
    if line is None:
        return None
    counts = json.loads(line.removeprefix(COVERAGE_MARK))
    statements = sum(total for total, _ in counts.values())
    executed = sum(ran for _, ran in counts.values())
    return round(executed / statements, 3) if statements else None


# pytest options that take the next word as their value (when not written `--opt=value`).
VALUE_OPTIONS = {
    "-p", "-k", "-m", "-o", "-W", "-c", "--ignore", "--ignore-glob", "--deselect",
    "--confcutdir", "--rootdir", "--override-ini", "--pythonwarnings",
}  # fmt: skip


def hidden_only_args(test_args: list[str], hidden: list[str]) -> list[str]:
    """The task's pytest arguments with its paths replaced by the hidden test files: the
    same options (`-p pytest_mock`, `-k ...`, `--doctest-modules`), fewer tests."""
    kept: list[str] = []
    words = iter(test_args)
    for word in words:
        if word.startswith("-"):
            kept.append(word)
            if word in VALUE_OPTIONS:
                kept.append(next(words, ""))
    return [*kept, *hidden]


_COVERAGE_SCRIPT = """
import json, shlex, coverage, pytest
root = {root!r}
files = json.loads({files!r})
include = [root + "/" + p for p in files]
# config_file=False: the package's own settings (croniter's `omit = **/**`) would hide
# the very lines measured
cov = coverage.Coverage(data_file="/tmp/.cursorbench-coverage", include=include, config_file=False)
cov.start()
pytest.main(shlex.split({args!r}))
cov.stop()
counts = {{}}
for rel, lines in files.items():
    try:
        _, statements, _, missing, _ = cov.analysis2(root + "/" + rel)
    except Exception:
        statements, missing = [], []
    wanted = set(statements) & set(lines)
    counts[rel] = [len(wanted), len(wanted - set(missing))]
print({mark!r} + json.dumps(counts))
""".replace("{mark!r}", repr(COVERAGE_MARK))
