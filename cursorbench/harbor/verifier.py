"""The verifier of a CursorBench task exported to Harbor: copied verbatim into the task's
tests/ folder and run by tests/test.sh in Harbor's separate verifier container, where the
agent's /workspace arrives as an artifact. Standard library and pytest only: neither the
harness nor CursorBench is in that image.

What it does, in the order CursorBench's grading run does it (harness/kinds/testrun.py):
the protected paths (test files, runner configuration) are put back as the task prepared
them, anything the agent added under them is removed, the hidden tests are laid over,
pytest runs the task's test arguments without the workspace's own `addopts` or plugin
autoload, and every listed FAIL_TO_PASS and PASS_TO_PASS test must pass. It writes the
reward (1 or 0) to /logs/verifier/reward.txt and each test's outcome to
/logs/verifier/outcomes.json. Not done here: canaries and the twin run (a tampering check
needs the harness), and the agent's change is not filtered as a patch: the tree itself is
graded.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

TESTS = Path(os.environ.get("CURSORBENCH_TESTS", "/tests"))
WORKSPACE = Path(os.environ.get("CURSORBENCH_WORKSPACE", "/workspace"))
LOGS = Path(os.environ.get("CURSORBENCH_LOGS", "/logs/verifier"))

PLUGIN = """
import json, os

outcomes = {}


def pytest_runtest_logreport(report):
    if report.when == "call":
        outcomes[report.nodeid] = "skipped" if report.skipped else report.outcome
    elif report.failed:
        outcomes[report.nodeid] = "error"
    elif report.skipped:
        outcomes[report.nodeid] = "skipped"


def pytest_collectreport(report):
    if report.failed:
        outcomes[report.nodeid or "<collection>"] = "error"


def pytest_sessionfinish(session):
    with open(os.environ["CURSORBENCH_OUTCOMES"], "w") as out:
        json.dump(outcomes, out)
"""


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A protected-path glob: `**/` is any number of folders, `*` stays in one folder."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def files(root: Path) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if (path.is_file() or path.is_symlink()) and ".git" not in path.relative_to(root).parts
    )


def restore_protected(config: dict, workspace: Path, prepared: Path) -> None:
    patterns = [glob_regex(p) for p in config["protected_paths"]]
    for relative in files(workspace):
        if any(p.match(relative) for p in patterns):
            (workspace / relative).unlink()
    for relative in files(prepared):
        target = workspace / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(prepared / relative, target, follow_symlinks=False)


def lay_hidden(hidden: Path, workspace: Path) -> None:
    for relative in files(hidden):
        target = workspace / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        shutil.copy2(hidden / relative, target)


def run_pytest(config: dict, workspace: Path, scratch: Path) -> tuple[dict[str, str], str]:
    (scratch / "cursorbench_outcomes.py").write_text(PLUGIN)
    ini = scratch / "empty-pytest.ini"
    ini.write_text("[pytest]\n")
    outcomes_file = scratch / "outcomes.json"
    env = os.environ | {
        "PYTHONPATH": str(scratch),
        # as in CursorBench's sandboxes: the environment's scripts (coverage, ...) first
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "CURSORBENCH_OUTCOMES": str(outcomes_file),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    config_file = workspace / (pytest_config(workspace) or str(ini))
    command = [
        sys.executable, "-P", "-m", "pytest", *config["test_args"], f"--rootdir={workspace}",
        "-c", str(config_file), "-o", "addopts=", "-p", "no:cacheprovider",
        "--continue-on-collection-errors", "-q", "--no-header", "-rN",
        "-p", "cursorbench_outcomes",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=workspace, env=env, capture_output=True, text=True,
            timeout=config["timeout_s"],
        )  # fmt: skip
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as timeout:
        output = f"pytest timed out after {timeout.timeout}s"
    try:
        outcomes = json.loads(outcomes_file.read_text())
    except (OSError, ValueError):
        outcomes = {}
    return outcomes, output


def pytest_config(root: Path) -> str | None:
    """The file pytest takes its configuration from (as harness/kinds/testrun.py finds it)."""
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


def verdict(config: dict, outcomes: dict[str, str]) -> bool:
    listed = config["fail_to_pass"] + config["pass_to_pass"]
    return bool(listed) and all(outcomes.get(node) == "passed" for node in listed)


def main() -> int:
    config = json.loads((TESTS / "cursorbench.json").read_text())
    LOGS.mkdir(parents=True, exist_ok=True)
    restore_protected(config, WORKSPACE, TESTS / "protected")
    lay_hidden(TESTS / "hidden", WORKSPACE)
    scratch = Path(tempfile.mkdtemp(prefix="cursorbench-verifier-"))
    try:
        outcomes, output = run_pytest(config, WORKSPACE, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    resolved = verdict(config, outcomes)
    listed = {node: outcomes.get(node, "missing") for node in config["fail_to_pass"]}
    listed |= {node: outcomes.get(node, "missing") for node in config["pass_to_pass"]}
    (LOGS / "outcomes.json").write_text(json.dumps({"resolved": resolved, "tests": listed}))
    (LOGS / "pytest.txt").write_text(output)
    (LOGS / "reward.txt").write_text("1\n" if resolved else "0\n")
    print(output[-4000:])
    print(f"cursorbench: {'resolved' if resolved else 'failed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
