"""Tasks exported to Harbor: Harbor's own loader and `harbor lint` accept them (run from the
environment scripts/harbor.sh makes), nothing hidden is in the agent's environment, and the
exported verifier, run here on the exported files, resolves the reference and fails the
untouched workspace."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cursorbench.harbor.export import (
    ExportSkipped,
    export_task,
    export_tasks,
    instruction,
    scratch_environment,
)
from cursorbench.tasks.loader import tasks_from_options
from cursorbench.tasks.suites import build_many, suite_path
from harness.errors import CursorBenchError
from harness.kinds.behaviour import BehaviourCheck, BehaviourVerification
from harness.sandbox.image import IMAGE_REPOSITORY
from tests.cli_runner import cursorbench
from tests.harbor_env import harbor, harbor_python

IMAGE = f"{IMAGE_REPOSITORY}:test"
# Two pytest tasks and an answer task, the ones test_checks and test_health build too (the
# session's build cache builds each once).
V1_SAMPLE = ["boltons-mathutils", "cachetools-tlru", "jinja2-sandbox-review"]

LOAD = """
import json, sys
from harbor.models.task.task import Task
loaded = {}
for folder in sys.argv[1:]:
    task = Task(folder)
    loaded[folder] = {"instruction": task.instruction, "artifacts": len(task.config.artifacts)}
print(json.dumps(loaded))
"""


def harbor_accepts(folders: list[Path]) -> dict[str, dict]:
    """Asserts `harbor lint` finds nothing; returns what Harbor's task loader read."""
    linted = harbor("lint", "--json", *map(str, folders))
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert json.loads(linted.stdout) == []
    done = subprocess.run(
        [str(harbor_python()), "-c", LOAD, *map(str, folders)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path]:
    built = build_many(tasks_from_options([]))
    out = tmp_path_factory.mktemp("harbor")
    written, skipped = export_tasks(built, out, image=IMAGE)
    assert skipped == []  # the answer task too: CursorBench's grading in the verifier
    assert len(written) == len(built)
    return built, out


def test_the_smoke_tasks_pass_harbors_lint_and_load_in_its_loader(smoke: tuple) -> None:
    built, out = smoke
    exported = sorted(out.iterdir())
    loaded = harbor_accepts(exported)
    prompts = {b.task.id: instruction(b.task) for b in built}  # earlier turns included
    for folder in exported:
        assert loaded[str(folder)]["instruction"].strip() == prompts[folder.name].strip()
        assert loaded[str(folder)]["artifacts"] == 1


def test_nothing_hidden_reaches_the_agents_environment(smoke: tuple) -> None:
    built, out = smoke
    for one in built:
        folder = out / one.task.id
        if not folder.exists():
            continue
        environment = folder / "environment"
        for hidden in one.task.verification.hidden_tests:
            assert not (environment / "workspace" / hidden).exists(), hidden
            assert (folder / "tests" / "hidden" / hidden).is_file(), hidden
        agent_files = {p.read_bytes() for p in environment.rglob("*") if p.is_file()}
        for solution in (folder / "solution").rglob("*"):
            if solution.is_file() and solution.name not in ("solve.sh", "deleted.txt"):
                assert solution.read_bytes() not in agent_files, solution
        for hidden in (folder / "tests" / "hidden").rglob("*"):
            if hidden.is_file():
                assert hidden.read_bytes() not in agent_files, hidden
        dockerfile = (environment / "Dockerfile").read_text()
        assert "tests" not in dockerfile.split("FROM", 1)[1] and "solution" not in dockerfile


def run_verifier(folder: Path, workspace: Path, logs: Path) -> tuple[str, dict]:
    env = os.environ | {
        "CURSORBENCH_TESTS": str(folder / "tests"),
        "CURSORBENCH_WORKSPACE": str(workspace),
        "CURSORBENCH_LOGS": str(logs),
    }
    [script] = (folder / "tests").glob("cursorbench_*verifier.py")
    done = subprocess.run(
        [sys.executable, "-P", str(script)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return (logs / "reward.txt").read_text().strip(), json.loads(
        (logs / "outcomes.json").read_text()
    )


def assert_grades_reference_only(folder: Path, scratch: Path) -> None:
    """The exported verifier gives reward 1 to the reference, 0 to the untouched workspace."""
    untouched = scratch / folder.name / "untouched"
    shutil.copytree(folder / "environment" / "workspace", untouched, symlinks=True)
    solved = scratch / folder.name / "solved"
    shutil.copytree(untouched, solved, symlinks=True)
    patch = folder / "solution" / "reference.patch"
    if patch.is_file():
        subprocess.run(["git", "apply", str(patch)], cwd=solved, check=True)
    else:  # a kind's own reference, as files (harbor_harness.write_tree_solution)
        shutil.copytree(folder / "solution" / "files", solved, dirs_exist_ok=True)
        for path in (folder / "solution" / "deleted.txt").read_text().splitlines():
            (solved / path).unlink()
    reward, outcomes = run_verifier(folder, solved, scratch / folder.name / "logs-solved")
    assert (reward, outcomes["resolved"]) == ("1", True), (folder.name, outcomes)
    reward, outcomes = run_verifier(folder, untouched, scratch / folder.name / "logs-none")
    assert (reward, outcomes["resolved"]) == ("0", False), folder.name


@pytest.mark.slow
def test_the_verifier_resolves_the_reference_and_fails_the_untouched_workspace(
    smoke: tuple, tmp_path: Path
) -> None:
    _, out = smoke
    for folder in sorted(out.iterdir()):
        assert_grades_reference_only(folder, tmp_path)


def test_a_solution_that_edits_the_tests_is_not_graded_on_its_own_tests(
    smoke: tuple, tmp_path: Path
) -> None:
    _, out = smoke
    folder = out / "textkit-slugify"
    workspace = tmp_path / "ws"
    shutil.copytree(folder / "environment" / "workspace", workspace, symlinks=True)
    (workspace / "tests" / "test_slugify.py").write_text("def test_basic():\n    pass\n")
    (workspace / "conftest.py").write_text("import pytest\n")
    reward, outcomes = run_verifier(folder, workspace, tmp_path / "logs")
    assert reward == "0" and outcomes["tests"]["tests/test_slugify.py::test_basic"] != "passed"
    assert not (workspace / "conftest.py").exists()


def test_an_answer_task_is_graded_by_cursorbenchs_own_grading_in_the_verifier(
    tmp_path: Path,
) -> None:
    [built] = build_many(tasks_from_options(["ledger-facts"]))
    folder = export_task(built, tmp_path / "out", IMAGE)
    tests = folder / "tests"
    assert (tests / "lib" / "harness" / "grading" / "grade.py").is_file()
    assert (tests / "task.json").is_file()
    # nothing for an import to drop: the kind's own grading, in the verifier, filters
    assert "cursorbench_protected_paths = []" in (folder / "task.toml").read_text()
    assert not (folder / "environment" / "workspace" / "answers.json").exists()
    assert_grades_reference_only(folder, tmp_path / "graded")


def test_a_behaviour_only_task_is_skipped_saying_why(tmp_path: Path) -> None:
    [built] = build_many(tasks_from_options(["ledger-facts"]))
    behaviour = BehaviourVerification(checks=[BehaviourCheck(grader="intent")])
    task = built.task.model_copy(update={"verification": behaviour})
    with pytest.raises(ExportSkipped, match="ledger-facts: its verification \\(kind behaviour\\)"):
        export_task(replace(built, task=task), tmp_path, IMAGE)


def test_the_command_writes_the_tasks(tmp_path: Path) -> None:
    done = cursorbench(
        "tasks", "export", "--format", "harbor", "--tasks", "textkit-slugify", "--out",
        str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote 1 Harbor tasks" in done.stdout
    toml = (tmp_path / "textkit-slugify" / "task.toml").read_text()
    assert 'environment_mode = "separate"' in toml and 'cursorbench_id = "textkit-slugify"' in toml
    refused = cursorbench("tasks", "export", "--format", "swebench", "--out", str(tmp_path))
    assert refused.returncode != 0 and "only harbor" in refused.stdout + refused.stderr


@pytest.mark.slow
def test_a_sample_of_v1_passes_harbors_lint_and_loader_and_grades_right(tmp_path: Path) -> None:
    found = tasks_from_options([str(suite_path("v1")), *V1_SAMPLE])
    written, skipped = export_tasks(build_many(found), tmp_path, image=IMAGE)
    assert skipped == []
    assert len(written) == 3
    harbor_accepts(written)
    for folder in written:
        assert_grades_reference_only(folder, tmp_path / "graded")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["textkit-slugify", "ledger-facts"])
def test_the_exported_images_build_on_the_docker_backends_base_and_grade_in_a_container(
    tmp_path: Path, task_id: str
) -> None:
    """What Harbor's Docker environment does, done with the harness's own engine: build
    environment/ (FROM the local base image, no registry), add tests/ and solution/ as
    Harbor mounts them, and run solve.sh and test.sh inside: reward 1, and 0 unsolved."""
    from harness.sandbox.engine import docker_client
    from harness.sandbox.image import ensure_image

    if scratch_environment():  # export refuses it (test_export_refuses_a_scratch_environment)
        pytest.skip("this checkout's environment is under /tmp: no exported image holds it")
    client = docker_client()
    image = ensure_image(client)
    [built] = build_many(tasks_from_options([task_id]))  # a pytest task, an answer task
    folder = export_task(built, tmp_path / "out", image)
    context = tmp_path / "context"
    shutil.copytree(folder / "tests", context / "tests")
    shutil.copytree(folder / "solution", context / "solution")
    tags = [f"cursorbench-harbor-test-{n}:{os.getpid()}" for n in ("env", "trial")]
    (context / "Dockerfile").write_text(
        f"FROM {tags[0]}\nCOPY tests/ /tests/\nCOPY solution/ /solution/\n"
    )
    try:
        client.images.build(path=str(folder / "environment"), tag=tags[0], rm=True, pull=False)
        client.images.build(path=str(context), tag=tags[1], rm=True, pull=False)
        rewards = {}
        for label, solve in (("reference", "bash /solution/solve.sh && "), ("nothing", "")):
            script = f"{solve}mkdir -p /logs/verifier && bash /tests/test.sh >/dev/null; "
            script += "cat /logs/verifier/reward.txt"
            output = client.containers.run(
                tags[1], ["bash", "-c", script], remove=True, network_mode="none"
            )
            rewards[label] = output.decode().strip()
    finally:
        for tag in reversed(tags):
            with contextlib.suppress(Exception):
                client.images.remove(tag, force=True)
    assert rewards == {"reference": "1", "nothing": "0"}


def test_export_refuses_a_scratch_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment under /tmp is bound into containers at run time, never laid in the
    base image, so an exported task would find no interpreter: the export says so."""
    monkeypatch.setattr(sys, "prefix", "/tmp/checkout/.venv")
    monkeypatch.setattr(sys, "executable", "/tmp/checkout/.venv/bin/python")
    assert scratch_environment()
    with pytest.raises(CursorBenchError, match="under /tmp or /var/tmp"):
        export_tasks([], tmp_path / "out", image="unused")


def test_an_instruction_carries_the_earlier_turns_before_the_prompt() -> None:
    """A Harbor task has one instruction: an iterate-on-feature task's session so far is
    written into it as a transcript, the prompt last."""
    from cursorbench.tasks.loader import bundled_suite, load_task

    task = load_task(bundled_suite() / "tasks" / "followup-textkit-unique-slug.yaml")
    text = instruction(task)
    first, answer = (turn.content.strip() for turn in task.earlier_turns)
    assert text.index(first) < text.index(answer) < text.index(task.prompt.strip())
    assert text.startswith("The session so far:") and text.endswith(task.prompt.rstrip() + "\n")
    plain = load_task(bundled_suite() / "tasks" / "textkit-slugify.yaml")
    assert instruction(plain) == plain.prompt.rstrip() + "\n"
