"""What every red-team test uses: scripted steps, the honest solution, and a run of
`cursorbench run` against a hostile scripted endpoint with a check that nothing outside the
run's own folders changed.

The red team lives in `tests/harness/test_red_team*.py`, one file per class of hole; the
fixtures `red_team` and `host_canaries` (in `tests/harness/conftest.py`) wrap what is here.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cursorbench.tasks.loader import bundled_suite
from harness.model.doubles import ScriptedDouble
from harness.model.openai_server import Reply, Responder, first_user_message

TASK_ID = "textkit-slugify"
REPO = bundled_suite() / "repos" / "textkit"
INIT = (REPO / "textkit" / "__init__.py").read_text()
SLUG = (REPO / "textkit" / "slug.py").read_text()  # the reference solution
CLI = [sys.executable, "-m", "cursorbench.cli.app"]


def tool(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[(name, arguments)])


def shell(command: str) -> Reply:
    return tool("run", command=command, timeout_s=60)


def write(path: str, content: str) -> Reply:
    return tool("write_file", path=path, content=textwrap.dedent(content).lstrip())


def finish() -> Reply:
    return tool("finish", summary="done")


def solve() -> list[Reply]:
    """The honest solution: the reference slug module, exported."""
    return [write("textkit/slug.py", SLUG), write("textkit/__init__.py", INIT)]


class HostCanaries:
    """Files outside every sandbox that attacks aim at: a folder of the test's own and a file
    in the home folder, named per test so that red-team tests can run beside each other."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "host-canary"
        self.root.mkdir()
        (self.root / "file.txt").write_text("untouched\n")
        (self.root / "sub").mkdir()
        self.home_file = Path.home() / f".cursorbench-red-team-canary-{uuid.uuid4().hex[:12]}"
        self.home_file.write_text("untouched\n")

    @property
    def targets(self) -> list[str]:
        """A file, a folder and the home file: what links and writes aim at."""
        return [str(self.root / "file.txt"), str(self.root / "sub"), str(self.home_file)]

    def state(self) -> dict[str, str]:
        found = {
            str(path): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            for path in sorted(self.root.rglob("*"))
        }
        found[str(self.home_file)] = self.home_file.read_text() if self.home_file.exists() else ""
        return found

    def remove(self) -> None:
        self.home_file.unlink(missing_ok=True)


RedTeam = Callable[..., dict[str, Any]]


def red_team_runner(
    tmp_path: Path,
    serve: Callable[[Responder], str],
    canaries: HostCanaries,
    sandbox: str = "bubblewrap",
) -> RedTeam:
    """Runs a script of steps (or a responder) through `cursorbench run --sandbox SANDBOX`;
    returns the attempt's result (with its trajectory's records), or `{"all": [...]}`."""
    counter = iter(range(1000))

    def run(steps: Any, *extra: str, tasks: tuple[str, ...] = (TASK_ID,)) -> dict[str, Any]:
        before = canaries.state()
        out = tmp_path / f"run{next(counter)}"
        responder = steps if not isinstance(steps, list) else ScriptedDouble([*steps, finish()])
        url = serve(responder)
        selected = [arg for task in tasks for arg in ("--tasks", task)]
        done = subprocess.run(
            [*CLI, "run", "--base-url", url, "--model", "scripted-double", *selected,
             "--sandbox", sandbox, "--out", str(out), "--max-retries", "0", *extra],
            capture_output=True, text=True, timeout=600, env=os.environ.copy(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr + done.stdout
        assert canaries.state() == before, "a file outside the run was created or changed"
        results = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
        for result in results:
            result["records"] = [
                json.loads(line) for line in (out / result["trajectory"]).read_text().splitlines()
            ]
        return results[0] if len(results) == 1 else {"all": results}

    return run


def assert_failed(result: dict[str, Any], failure: str | None = None) -> None:
    assert result["status"] == "failed", (result["status"], result["failure"], result["error"])
    if failure is not None:
        assert result["failure"] == failure, (result["failure"], result["error"])


def assert_resolved(result: dict[str, Any]) -> None:
    assert result["status"] == "resolved", (result["status"], result["failure"], result["error"])


class ByTask:
    """A scripted double per task: the script whose key the task's prompt contains."""

    models = ["scripted-double"]

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = {key: ScriptedDouble([*steps, finish()]) for key, steps in scripts.items()}

    def respond(self, request: dict[str, Any]) -> Any:
        prompt = first_user_message(request)
        script = next(s for key, s in self.scripts.items() if key in prompt)
        return script.respond(request)


CASE_TASK = "textkit-case-styles"
CASE_PROMPT_KEY = "case"  # in the case-styles prompt, not in the slugify one


def both_tasks(red_team: RedTeam, attacker: list[Any], honest: list[Any]) -> tuple[dict, dict]:
    """Runs the attacker on slugify and the honest steps on case-styles, side by side."""
    runs = red_team(
        ByTask({"slugify": attacker, CASE_PROMPT_KEY: honest}),
        "--concurrency", "2",
        tasks=(TASK_ID, CASE_TASK),
    )  # fmt: skip
    by_task = {result["task_id"]: result for result in runs["all"]}
    return by_task[TASK_ID], by_task[CASE_TASK]


def reference_steps(task_id: str) -> list[Any]:
    """The reference solver's steps for a bundled task, without its finish."""
    from cursorbench.tasks.loader import tasks_from_options
    from cursorbench.tasks.reference import reference_steps as steps
    from cursorbench.tasks.workspace import build

    return steps(build(tasks_from_options([task_id])[0]))[:-1]
