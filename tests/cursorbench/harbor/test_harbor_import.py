"""`--tasks harbor:DIR`: Harbor task folders load as CursorBench tasks, run through the
agent loop, and their own verifier's reward decides; a CursorBench task exported to Harbor
and imported back resolves with its solution and fails without one, on Docker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursorbench.harbor.canary import canary_finding
from cursorbench.harbor.export import export_tasks
from cursorbench.tasks.loader import TaskFileError, tasks_from_options, tasks_from_options_reporting
from cursorbench.tasks.sources.harbor import HarborSource
from cursorbench.tasks.suites import build_many
from cursorbench.tasks.workspace import secret_paths
from harness.kinds.harbor_kind import CANARY_TEST, REWARD_TEST, HarborVerification
from harness.model.doubles import DoneOnlyDouble, IrrelevantEditDouble, ScriptedDouble
from harness.model.openai_server import Reply, first_user_message, step_index
from harness.results import NOT_TAMPER_EVIDENT, Failure, TestOutcome
from harness.run.runner import RunOutcome
from harness.sandbox import open_backend
from harness.sandbox.image import IMAGE_REPOSITORY
from tests.cli_runner import cursorbench
from tests.harbor_tamper import ATTACKS
from tests.harbor_tamper import TEST_SH as TAMPER_TEST_SH_AT
from tests.harbor_tamper import TESTS as TAMPER_TESTS

SOLVED = "def add(a, b):\n    return a + b\n"
# Written as Harbor's own tasks are: /app, /tests, /logs/verifier (rewritten at grading).
TEST_SH = """#!/bin/bash
cd /app
if python -c 'import sys; from calc import add; sys.exit(add(2, 3) != 5)'; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
cat /tests/note.txt
"""
SOLVE_SH = "#!/bin/bash\ncp /solution/calc.py /app/calc.py\n"
TAMPER_TEST_SH = TAMPER_TEST_SH_AT.format(workdir="/app")


def harbor_task(root: Path, name: str = "calc-add", dockerfile: str | None = None) -> Path:
    """A small Harbor task folder of the shape Harbor's own tasks have (workdir /app)."""
    folder = root / name
    for sub in ("environment/app", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "instruction.md").write_text("Write add(a, b) in calc.py.\n")
    (folder / "task.toml").write_text(
        'schema_version = "1.4"\n\n[metadata]\ncategory = "new_feature"\n'
        "cursorbench_max_turns = 7\n\n[verifier]\ntimeout_sec = 90.0\n\n"
        "[agent]\ntimeout_sec = 300.0\n"
    )
    (folder / "environment" / "Dockerfile").write_text(
        dockerfile or f"FROM {IMAGE_REPOSITORY}:any\nWORKDIR /app\nCOPY app/ /app/\n"
    )
    (folder / "environment" / "app" / "calc.py").write_text("def add(a, b):\n    return 0\n")
    (folder / "tests" / "test.sh").write_text(TEST_SH)
    (folder / "tests" / "note.txt").write_text("verifier files arrived\n")
    (folder / "solution" / "solve.sh").write_text(SOLVE_SH)
    (folder / "solution" / "calc.py").write_text(SOLVED)
    return folder


def test_a_harbor_folder_loads_as_a_task(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path)
    [task] = tasks_from_options([f"harbor:{folder}"])
    identity = (task.id, task.suite_version, task.category.value)
    assert identity == ("calc-add", "harbor", "new_feature")
    assert task.prompt == "Write add(a, b) in calc.py.\n"
    assert isinstance(task.source, HarborSource) and task.source.workspace == "environment/app"
    assert task.verification == HarborVerification(workdir="/app")
    limits = task.limits
    assert (limits.wall_time_s, limits.test_timeout_s, limits.max_turns) == (300.0, 90.0, 7)
    assert folder in secret_paths(task)  # the sandbox hides the task folder: tests, solution
    [built] = build_many([task])
    assert (built.workspace / "calc.py").is_file() and (built.hidden / "test.sh").is_file()
    assert not {"test.sh", "solve.sh"} & {p.name for p in built.workspace.rglob("*")}
    harbor_task(tmp_path / "many", "second")
    harbor_task(tmp_path / "many", "first")
    found = tasks_from_options([f"harbor:{tmp_path / 'many'}", "f*"])
    assert [t.id for t in found] == ["first"]


@pytest.mark.parametrize(
    ("dockerfile", "says"),
    [
        (f"FROM {IMAGE_REPOSITORY}:x\nRUN pip install numpy\n", "`RUN pip install numpy`"),
        ("FROM ubuntu:24.04\nWORKDIR /app\n", "FROM ubuntu:24.04, not the Docker backend"),
        (f"FROM {IMAGE_REPOSITORY}:x\nWORKDIR /app\nCOPY app/ /srv/\n", "not to the workdir /app"),
    ],
)
def test_an_environment_that_cannot_run_here_is_refused_saying_why(
    tmp_path: Path, dockerfile: str, says: str
) -> None:
    folder = harbor_task(tmp_path, dockerfile=dockerfile)
    found, problems = tasks_from_options_reporting([f"harbor:{folder}"])
    assert found == [] and len(problems) >= 1 and says in problems[0], problems


def test_a_missing_folder_or_verifier_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="no such Harbor task folder"):
        tasks_from_options([f"harbor:{tmp_path / 'nope'}"])
    folder = harbor_task(tmp_path)
    (folder / "tests" / "test.sh").unlink()
    _, problems = tasks_from_options_reporting([f"harbor:{folder}"])
    assert "no tests/test.sh" in problems[0]


@pytest.mark.parametrize("name", ["tests", "solution", "environment"])
def test_a_folder_linked_out_of_the_task_is_refused(tmp_path: Path, name: str) -> None:
    folder = harbor_task(tmp_path)
    outside = tmp_path / "host-folder"
    (folder / name).rename(outside)
    (folder / name).symlink_to(outside)
    _, problems = tasks_from_options_reporting([f"harbor:{folder}"])
    assert problems and f"{name}/ links outside the task folder" in problems[0], problems


@pytest.mark.parametrize(
    "link", ["instruction.md", "task.toml", "tests/helper.py", "environment/app/data.txt"]
)
def test_any_link_out_of_the_task_is_refused_before_a_file_is_read(
    tmp_path: Path, link: str
) -> None:
    """A link anywhere under the folder (here to a host file: its text would have been the
    model's prompt, the task's config, a verifier's or a workspace's file) is refused, named."""
    folder = harbor_task(tmp_path)
    host = tmp_path / "host-secret.txt"
    host.write_text("the host's secret\n")
    (folder / link).parent.mkdir(parents=True, exist_ok=True)
    (folder / link).unlink(missing_ok=True)
    (folder / link).symlink_to(host)
    found, problems = tasks_from_options_reporting([f"harbor:{folder}"])
    assert found == [] and len(problems) == 1, problems
    assert f"{link} links outside the task folder ({host})" in problems[0]
    assert "\n" not in problems[0]


def test_the_cli_refuses_an_instruction_linked_to_a_host_file(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path)
    host = tmp_path / "host-secret.txt"
    host.write_text("the host's secret\n")
    (folder / "instruction.md").unlink()
    (folder / "instruction.md").symlink_to(host)
    done = cursorbench("run", "--tasks", f"harbor:{folder}", "--out", str(tmp_path / "run"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "instruction.md links outside the task folder" in done.stderr
    assert "secret" not in done.stdout and not (tmp_path / "run" / "run.json").exists()


def test_links_that_stay_inside_the_task_folder_are_fine(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path)
    (folder / "tests" / "again.sh").symlink_to(folder / "tests" / "test.sh")
    found, problems = tasks_from_options_reporting([f"harbor:{folder}"])
    assert len(found) == 1 and problems == []


def grade_record(outcome: RunOutcome, out: Path) -> dict:
    [result] = outcome.results
    lines = (out / "trajectories" / f"{result.task_id}__0.jsonl").read_text().splitlines()
    return next(r for r in map(json.loads, lines) if r["type"] == "grade")


def test_a_harbor_task_resolves_with_its_solution_and_its_reward_decides(
    tmp_path: Path, run_benchmark: Callable[..., RunOutcome]
) -> None:
    """On the default backend: the reference solver runs solve.sh (/solution and /app
    rewritten), the verifier's test.sh runs after the agent with /tests and
    /logs/verifier rewritten, and its reward is the verdict; its output is kept."""
    folder = harbor_task(tmp_path / "tasks")
    outcome = run_benchmark(tasks=[f"harbor:{folder}"], out=tmp_path / "run")
    [result] = outcome.results
    assert result.resolved, (result.failure, result.error)
    assert result.tests == {REWARD_TEST: TestOutcome.PASSED, CANARY_TEST: TestOutcome.SKIPPED}
    assert result.scores["harbor_reward"].value == 1.0
    output = grade_record(outcome, tmp_path / "run")["output"]
    assert "verifier files arrived" in output
    # no Python test to plant canaries in: the record and the run say it
    assert "the verdict is not tamper-evident: its tests hold no Python test" in output
    [warning] = [w for w in outcome.run.warnings if w.startswith(NOT_TAMPER_EVIDENT)]
    assert "calc-add (its tests hold no Python test" in warning


def pytest_task(root: Path, name: str, test_sh: str = TAMPER_TEST_SH) -> Path:
    """A Harbor task whose test.sh decides by pytest over a Python test file of its tests/."""
    folder = harbor_task(root, name)
    (folder / "tests" / "test.sh").write_text(test_sh)
    (folder / "tests" / "test_calc.py").write_text(TAMPER_TESTS)
    (folder / "instruction.md").write_text(f"Write add(a, b) in calc.py. ({name})\n")
    return folder


def test_the_import_check_gives_a_canary_run_only_where_the_solution_fails_it(
    tmp_path: Path,
) -> None:
    """pytest over the tests' Python file: checked on the solution, a canary run; a test.sh
    that does not run that file: the canary run resolves on the solution, so none (else an
    honest solution would be flagged). The finding is cached in the task's build."""
    decides = pytest_task(tmp_path, "decides")
    ignores = pytest_task(tmp_path, "ignores", test_sh=TEST_SH.replace("cat /tests/note.txt", ""))
    built = build_many(tasks_from_options([f"harbor:{decides}", f"harbor:{ignores}"]))
    backend = open_backend("auto")
    findings = {b.task.id: canary_finding(b, backend, tmp_path / "scratch") for b in built}
    assert findings["decides"] == (True, "checked on its solution: canaries in test_calc.py")
    canary, note = findings["ignores"]
    assert not canary and "its canary run resolves on its own solution" in note, note
    [cached] = [b for b in built if b.task.id == "decides"]
    assert list(cached.root.glob("canary-check-*.json"))
    assert canary_finding(cached, backend, tmp_path / "scratch") == findings["decides"]


def _prying_double(folder: Path) -> ScriptedDouble:
    """Looks for the verifier and the solution where they lie on the host and where
    Harbor puts them, plants a reward, leaves a process behind to write another, then
    makes an irrelevant edit."""
    look = f"cat {folder}/tests/test.sh {folder}/solution/solve.sh /tests/test.sh; ls /solution"
    plant = (
        "mkdir -p logs/verifier && echo 1 > logs/verifier/reward.txt; "
        "(for i in $(seq 60); do for d in /tmp/cursorbench-harbor*/logs/verifier; do "
        "echo 1 > $d/reward.txt 2>/dev/null; done; sleep 0.5; done) >/dev/null 2>&1 &"
    )
    return ScriptedDouble(
        [
            Reply(tool_calls=[("run", {"command": look})]),
            Reply(tool_calls=[("run", {"command": plant})]),
            Reply(tool_calls=[("write_file", {"path": "notes.md", "content": "notes\n"})]),
            Reply(tool_calls=[("finish", {"summary": "done"})]),
        ]
    )


@pytest.mark.docker
@pytest.mark.slow
def test_an_exported_smoke_task_round_trips_through_harbor_on_docker(
    tmp_path: Path,
    run_benchmark: Callable[..., RunOutcome],
    serve: Callable[..., str],
) -> None:
    """smoke's textkit-slugify -> `tasks export --format harbor` -> `--tasks harbor:DIR`
    on the Docker backend: the reference (solution/solve.sh) resolves, with the exported
    verifier's per-test outcomes; a do-nothing agent fails; an agent that pries for the
    verifier, plants rewards and leaves a process behind fails on the verifier's reward."""
    built = build_many(tasks_from_options(["textkit-slugify"]))
    written, _ = export_tasks(built, tmp_path / "harbor", image=f"{IMAGE_REPOSITORY}:test")
    [folder] = written
    tasks = [f"harbor:{folder}"]
    reference = run_benchmark(tasks=tasks, sandbox="docker", out=tmp_path / "reference")
    [result] = reference.results
    assert result.resolved, (result.failure, result.error)
    listed = built[0].task.verification.fail_to_pass  # type: ignore[attr-defined]
    assert all(result.tests[node] is TestOutcome.PASSED for node in listed)
    assert result.tests[CANARY_TEST] is TestOutcome.PASSED  # the import check gave it one
    assert "cursorbench: resolved" in grade_record(reference, tmp_path / "reference")["output"]

    nothing = run_benchmark(
        tasks=tasks, sandbox="docker", base_url=serve(DoneOnlyDouble()),
        model="done-only-double", out=tmp_path / "nothing",
    )  # fmt: skip
    assert [(r.resolved, r.failure) for r in nothing.results] == [(False, Failure.EMPTY_DIFF)]

    irrelevant = run_benchmark(
        tasks=tasks, sandbox="docker", base_url=serve(IrrelevantEditDouble()),
        model="irrelevant-edit-double", out=tmp_path / "irrelevant",
    )  # fmt: skip
    [result] = irrelevant.results
    assert (result.resolved, result.failure) == (False, Failure.TESTS_FAILED)
    assert result.tests[REWARD_TEST] is TestOutcome.FAILED

    pry = run_benchmark(
        tasks=tasks, sandbox="docker", base_url=serve(_prying_double(folder)),
        model="scripted-double", out=tmp_path / "pry",
    )  # fmt: skip
    [result] = pry.results
    assert (result.resolved, result.failure) == (False, Failure.TESTS_FAILED)
    assert result.scores["harbor_reward"].value == 0.0
    seen = (tmp_path / "pry" / "trajectories" / "textkit-slugify__0.jsonl").read_text()
    assert "cursorbench_verifier.py" not in seen and "reference.patch" not in seen


class AttackDouble:
    """Writes calc.py as the attack its task's instruction names (tests/harbor_tamper.py)."""

    models = ["attack-double"]

    def respond(self, request: dict[str, Any]) -> Reply:
        if step_index(request) > 0:
            return Reply(tool_calls=[("finish", {"summary": "done"})])
        prompt = first_user_message(request)
        [attack] = [name for name in ATTACKS if f"(tamper-{name})" in prompt]
        write = {"path": "calc.py", "content": ATTACKS[attack]}
        return Reply(tool_calls=[("write_file", write)])


@pytest.mark.docker
@pytest.mark.slow
def test_agents_that_force_an_imported_verdict_are_not_resolved_on_docker(
    tmp_path: Path,
    run_benchmark: Callable[..., RunOutcome],
    serve: Callable[..., str],
) -> None:
    """`--tasks harbor:DIR` on Docker, a task decided by pytest over its tests' Python
    file: the solution resolves with its canary run failing, as it must, and the run is
    tamper-evident; doing nothing fails; code that writes the reward file, makes pytest
    exit 0, or leaves a process that overwrites the reward is never resolved."""
    root = tmp_path / "tasks"
    for name in ATTACKS:
        pytest_task(root, f"tamper-{name}")
    one = [f"harbor:{root}", "tamper-reward-file"]
    reference = run_benchmark(tasks=one, sandbox="docker", out=tmp_path / "reference")
    [result] = reference.results
    assert result.resolved, (result.failure, result.error)
    assert result.tests[CANARY_TEST] is TestOutcome.PASSED
    assert not [w for w in reference.run.warnings if w.startswith(NOT_TAMPER_EVIDENT)]

    nothing = run_benchmark(
        tasks=one, sandbox="docker", base_url=serve(DoneOnlyDouble()),
        model="done-only-double", out=tmp_path / "nothing",
    )  # fmt: skip
    assert [(r.resolved, r.failure) for r in nothing.results] == [(False, Failure.EMPTY_DIFF)]

    attacked = run_benchmark(
        tasks=[f"harbor:{root}"], sandbox="docker", base_url=serve(AttackDouble()),
        model="attack-double", out=tmp_path / "attacked",
    )  # fmt: skip
    verdicts = {r.task_id: (r.resolved, r.failure) for r in attacked.results}
    assert verdicts == {
        "tamper-background-writer": (False, Failure.TESTS_FAILED),  # ended before it wrote
        "tamper-reward-file": (False, Failure.GRADER_TAMPERING),
        "tamper-runner-exit": (False, Failure.GRADER_TAMPERING),
    }, {r.task_id: r.error for r in attacked.results}
