"""One run of a package's own test suite with per-test coverage, in the sandbox.

The suite runs once, the way grading runs it (the tree's `pytest.ini` with `-c`, no
addopts, `--continue-on-collection-errors`), under coverage.py with a context per test
(`Coverage.switch_context(nodeid)` around each test's run protocol). What executes
outside any test (imports, collection) is the empty context. The result maps every
executable line of the package's files to the tests that ran it, and every test to
its outcome.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cursorbench.tasks.sources.sdist import import_root
from harness.errors import CursorBenchError
from harness.grading.grade import PYTEST_ENV, pytest_config
from harness.sandbox.command import Command
from harness.sandbox.protocol import SandboxBackend

MARK = "CURSORBENCH-TESTMAP "
TEST_DIRS = ("tests", "test", "testing")


@dataclass
class CoverageMap:
    outcomes: dict[str, str]  # test id -> passed / failed / skipped
    statements: dict[str, list[int]]  # package file -> executable lines
    runs: dict[str, dict[int, set[str]]]  # package file -> line -> tests ("" = no test)
    duration_s: float = 0.0
    output: str = field(default="", repr=False)

    def passing(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome == "passed"}

    def tests_running(self, path: str, lines: Iterable[int]) -> set[str]:
        """The tests (not the empty context) that execute any of `lines` of `path`."""
        found: set[str] = set()
        by_line = self.runs.get(path, {})
        for line in lines:
            found |= by_line.get(line, set())
        found.discard("")
        return found

    def executed_by(self, path: str, lines: Iterable[int], tests: set[str]) -> set[int]:
        """Those of `lines` that `tests`, or the imports they make, execute."""
        by_line = self.runs.get(path, {})
        return {line for line in lines if by_line.get(line, set()) & (tests | {""})}


def is_test_file(relative: str) -> bool:
    parts = relative.split("/")
    name = parts[-1]
    in_tests = any(part in TEST_DIRS for part in parts[:-1])
    return (
        in_tests or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


# Scripts at a tree's root that are not the package's code (a single-module package, such
# as six.py or docopt.py, is a root module too, and is the package's code).
ROOT_SCRIPTS = {
    "setup.py", "noxfile.py", "fabfile.py", "tasks.py", "runtests.py", "run_tests.py",
    "bootstrap.py", "ez_setup.py", "distribute_setup.py", "setupegg.py", "pavement.py",
}  # fmt: skip


def package_files(tree: Path) -> list[str]:
    """The package's own Python files: not tests, not docs, examples or build scripts."""
    found = []
    for path in sorted(tree.rglob("*.py")):
        relative = path.relative_to(tree).as_posix()
        top = relative.split("/")[0]
        script = "/" not in relative and (relative in ROOT_SCRIPTS or relative.startswith("_"))
        if is_test_file(relative) or script or top in ("docs", "doc", "examples", "benchmarks"):
            continue
        found.append(relative)
    return found


def dotted_module(tree: Path, relative: str) -> str:
    """A package file's dotted module name (a `src/` layout's prefix dropped)."""
    root = import_root(tree)
    inside = relative.removeprefix("src/") if root == "src" else relative
    return inside.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_args_for(tree: Path) -> list[str]:
    """The suite's paths: the first test folder there is, else the tree's root."""
    found = next((name for name in TEST_DIRS if (tree / name).is_dir()), None)
    return [found] if found else ["."]


class CoverageRunFailed(CursorBenchError, RuntimeError):
    """The package's suite could not be run under coverage (one line: the output's tail)."""


def measure(
    sandboxes: SandboxBackend, tree: Path, scratch: Path, test_args: list[str], timeout: float
) -> CoverageMap:
    """Runs the suite over `tree` once, with a coverage context per test."""
    files = package_files(tree)
    layer = scratch / "testmap-overlay"
    layer.mkdir(parents=True, exist_ok=True)
    sandbox = sandboxes.open(tree, scratch / "testmap", layer, track_changes=False)
    try:
        config = pytest_config(tree)
        args = [*test_args, "-q", "-p", "no:cacheprovider", "-o", "addopts="]
        args += ["--continue-on-collection-errors", f"--rootdir={sandbox.root}"]
        args += ["-c", f"{sandbox.root}/{config}"] if config else []
        script = _SCRIPT.format(root=sandbox.root, files=json.dumps(files), args=shlex.join(args))
        done = sandbox.execute(
            Command(
                [sys.executable, "-P", "-c", script],
                timeout=timeout,
                read_only=True,
                env=PYTEST_ENV,
                output_cap=256 << 20,
            )
        )
    finally:
        sandbox.close()
    line = next((x for x in done.output.splitlines() if x.startswith(MARK)), None)
    if line is None:
        tail = done.output[-400:].replace("\n", " ")
        raise CoverageRunFailed(f"the per-test coverage run reported nothing: {tail}")
    return _decoded(json.loads(line.removeprefix(MARK)), done.duration_s, done.output)


def _decoded(data: dict[str, object], duration_s: float, output: str) -> CoverageMap:
    contexts: list[str] = data["contexts"]  # type: ignore[assignment]
    raw_files: dict[str, dict[str, object]] = data["files"]  # type: ignore[assignment]
    statements = {path: list(entry["statements"]) for path, entry in raw_files.items()}  # type: ignore[call-overload]
    runs: dict[str, dict[int, set[str]]] = {}
    for path, entry in raw_files.items():
        lines: dict[str, list[int]] = entry["lines"]  # type: ignore[assignment]
        runs[path] = {int(n): {contexts[i] for i in ids} for n, ids in lines.items()}
    outcomes: dict[str, str] = data["outcomes"]  # type: ignore[assignment]
    return CoverageMap(outcomes, statements, runs, duration_s, output[-2000:])


_SCRIPT = """
import json, shlex, coverage, pytest
root = {root!r}
files = json.loads({files!r})
# config_file=False: the package's own coverage settings (omit patterns, plugins, patterns
# this coverage version refuses) must not change what is measured
cov = coverage.Coverage(data_file=None, include=[root + "/" + p for p in files], config_file=False)
outcomes = {{}}

class PerTest:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        cov.switch_context(item.nodeid)
        yield
        cov.switch_context("")

    def pytest_runtest_logreport(self, report):
        now = outcomes.get(report.nodeid)
        if report.failed:
            outcomes[report.nodeid] = "failed"
        elif report.skipped and now != "failed":
            outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and now is None:
            outcomes[report.nodeid] = "passed"

cov.start()
pytest.main(shlex.split({args!r}), plugins=[PerTest()])
cov.stop()
data = cov.get_data()
contexts = sorted(data.measured_contexts())
index = {{name: i for i, name in enumerate(contexts)}}
out = {{}}
for rel in files:
    path = root + "/" + rel
    try:
        _, statements, _, _, _ = cov.analysis2(path)
    except Exception:
        continue
    by_line = data.contexts_by_lineno(path) or {{}}
    lines = {{str(n): sorted(index[c] for c in names) for n, names in by_line.items()}}
    out[rel] = {{"statements": list(statements), "lines": lines}}
print({mark!r} + json.dumps({{"contexts": contexts, "files": out, "outcomes": outcomes}}))
""".replace("{mark!r}", repr(MARK))


def save(testmap: CoverageMap, path: Path, key: str) -> None:
    """Writes the map to `path`, tagged with `key` (the release and the test arguments)."""
    runs = {p: {str(n): sorted(t) for n, t in lines.items()} for p, lines in testmap.runs.items()}
    data = {
        "key": key, "outcomes": testmap.outcomes, "statements": testmap.statements,
        "runs": runs, "duration_s": testmap.duration_s,
    }  # fmt: skip
    path.write_text(json.dumps(data), encoding="utf-8")


def load(path: Path, key: str) -> CoverageMap | None:
    """The map `save` wrote for `key`; None when there is none (or another key's)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    runs = {p: {int(n): set(t) for n, t in lines.items()} for p, lines in data["runs"].items()}
    return CoverageMap(data["outcomes"], data["statements"], runs, data["duration_s"])
