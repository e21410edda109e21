"""CursorBench tasks as Harbor task folders (`cursorbench tasks export --format harbor`).

One built task becomes one Harbor task (its format: harbor.models.task.paths.TaskPaths):
- `instruction.md`: the prompt;
- `task.toml`: timeouts from the task's limits, CursorBench's identity (id, digest, suite
  version, category, kind) under `[metadata]`, a separate verifier with no network, and
  the agent's /workspace collected as the artifact the verifier grades;
- `environment/Dockerfile` + `environment/workspace/`: the prepared workspace laid on
  the base image the Docker backend builds here (`harness.sandbox.image`, imported with
  `docker import`: no registry). Nothing hidden goes in it;
- `tests/`: `test.sh` runs `cursorbench_verifier.py` (verifier.py, stdlib and pytest
  only) over the hidden tests and the protected files as the task prepared them; it
  writes Harbor's reward file. Harbor copies tests/ into the verifier only;
- `solution/`: `solve.sh` applies the reference patch (the reverse of the mutation).

A task whose verdict is not a pytest run over the tree (kinds `answer`, graded on an
answer file against facts, and `mutants`, the agent's tests against mutants) gets a
verifier that runs CursorBench's own grading inside the verifier container
(`harbor_harness.py`). A behaviour-only task (no run decides it) is not exported:
`ExportSkipped` says why. What is carried how, and what is lost: docs/interop.md.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from cursorbench.harbor.harness import write_harness_tests, write_tree_solution
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import BuiltTask
from harness.errors import CursorBenchError
from harness.kinds.registry import graded_by_run
from harness.patch import glob_regex
from harness.spec import pytest_part

VERIFIER_SOURCE = Path(__file__).with_name("verifier.py")
HARBOR_SCHEMA_VERSION = "1.4"


class ExportSkipped(CursorBenchError):
    """A task Harbor's format cannot carry (one line, naming the task and why)."""


def base_image() -> str:
    """The tag of the Docker backend's base image on this machine (built by the first
    Docker run or `tasks validate --sandbox docker`; an export does not need Docker)."""
    from harness.sandbox.image import IMAGE_REPOSITORY, fingerprint

    return f"{IMAGE_REPOSITORY}:{fingerprint()}"


def export_task(built: BuiltTask, out: Path, image: str, python: str = sys.executable) -> Path:
    """Writes the Harbor task of `built` to OUT/ID (replacing one there) and returns it."""
    task = built.task
    check = pytest_part(task.verification)
    if not graded_by_run(task.verification) or task.verification.kind == "harbor":
        raise ExportSkipped(
            f"{task.id}: its verification (kind {task.verification.kind}) is not graded by "
            "a run over the agent's change, which is all a Harbor verifier here can do"
        )
    if task.environment is not None:  # the image holds the harness's Python, not this one
        raise ExportSkipped(f"{task.id}: it runs in an environment of its own, not exported yet")
    target = out / task.id
    if target.exists():
        shutil.rmtree(target)
    (target / "environment").mkdir(parents=True)
    (target / "instruction.md").write_text(instruction(task), encoding="utf-8")
    (target / "task.toml").write_text(task_toml(built, image, python), encoding="utf-8")
    _write_environment(built, target / "environment", image)
    if check is not None:
        _write_tests(built, target / "tests", image, python, check)
        _write_solution(built, target / "solution")
    else:
        write_harness_tests(built, target / "tests", image, python)
        write_tree_solution(built, target / "solution")
    return target


def instruction(task: Task) -> str:
    """`instruction.md`: the prompt, after the task's earlier turns as a transcript (a Harbor
    task has one instruction, not a conversation)."""
    if not task.earlier_turns:
        return task.prompt.rstrip() + "\n"
    said = {"user": "User", "assistant": "Assistant"}
    lines = ["The session so far:", ""]
    for turn in task.earlier_turns:
        lines += [f"**{said[turn.role]}:** {turn.content.strip()}", ""]
    lines += ["Now:", "", task.prompt.rstrip(), ""]
    return "\n".join(lines)


def task_toml(built: BuiltTask, image: str, python: str) -> str:
    task = built.task
    limits = task.limits
    check = pytest_part(task.verification)
    metadata = {
        "cursorbench_id": task.id,
        "cursorbench_digest": built.digest,
        "cursorbench_suite_version": task.suite_version,
        "cursorbench_category": task.category.value,
        "cursorbench_kind": task.verification.kind,
        "cursorbench_base_image": image,
        "cursorbench_python": python,
        "cursorbench_max_turns": limits.max_turns,
        "cursorbench_max_tokens": limits.max_tokens,
        # what `--tasks harbor:DIR` drops from a change before the verifier runs
        # (a testing task's own tests lie under its protected paths: its verifier filters)
        "cursorbench_protected_paths": check.protected_paths if check is not None else [],
    }
    lines = [f'schema_version = "{HARBOR_SCHEMA_VERSION}"', 'artifacts = ["/workspace"]', ""]
    lines += ["[metadata]", *(f"{k} = {_toml(v)}" for k, v in metadata.items()), ""]
    lines += [
        "[verifier]",
        f"timeout_sec = {float(limits.test_timeout_s) + 120.0}",
        'environment_mode = "separate"',
        'network_mode = "no-network"',
        "",
        "[agent]",
        f"timeout_sec = {float(limits.wall_time_s)}",
        "",
        "[environment]",
        "build_timeout_sec = 600.0",
        'workdir = "/workspace"',
        "",
    ]
    return "\n".join(lines)


def _toml(value: Any) -> str:
    return json.dumps(value)  # a JSON string or number is a TOML basic string or integer


def _write_environment(built: BuiltTask, folder: Path, image: str) -> None:
    shutil.copytree(built.workspace, folder / "workspace", symlinks=True)
    (folder / "Dockerfile").write_text(
        f"# The workspace CursorBench prepares for {built.task.id}, on the base image its\n"
        "# Docker backend builds on this machine (harness/sandbox/image.py; no registry).\n"
        f"FROM {image}\n"
        "COPY workspace/ /workspace/\n"
        "WORKDIR /workspace\n",
        encoding="utf-8",
    )


def _write_tests(built: BuiltTask, folder: Path, image: str, python: str, check: Any) -> None:
    folder.mkdir()
    if built.hidden.exists():
        shutil.copytree(built.hidden, folder / "hidden", symlinks=True)
    else:
        (folder / "hidden").mkdir()
    _copy_protected(built.workspace, folder / "protected", check.protected_paths)
    shutil.copy2(VERIFIER_SOURCE, folder / "cursorbench_verifier.py")
    config = {
        "task_id": built.task.id,
        "test_args": check.test_args,
        "fail_to_pass": check.fail_to_pass,
        "pass_to_pass": check.pass_to_pass,
        "protected_paths": check.protected_paths,
        "hidden_tests": check.hidden_tests,
        "timeout_s": built.task.limits.test_timeout_s,
    }
    (folder / "cursorbench.json").write_text(json.dumps(config, indent=1) + "\n")
    (folder / "Dockerfile").write_text(
        "# The verifier's own image: the same base, with these files at /tests only.\n"
        f"FROM {image}\n"
        "COPY . /tests/\n"
        "WORKDIR /workspace\n",
        encoding="utf-8",
    )
    script = folder / "test.sh"
    script.write_text(
        "#!/bin/bash\n"
        "# Grades /workspace (the agent's, collected as an artifact) as CursorBench does;\n"
        "# writes /logs/verifier/reward.txt (1 resolved, 0 not) and outcomes.json.\n"
        f"exec {python} -P /tests/cursorbench_verifier.py\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


def _copy_protected(workspace: Path, target: Path, protected: list[str]) -> None:
    target.mkdir(parents=True)
    patterns = [glob_regex(pattern) for pattern in protected]
    for path in sorted(workspace.rglob("*")):
        relative = path.relative_to(workspace).as_posix()
        if path.is_dir() and not path.is_symlink():
            continue
        if any(pattern.match(relative) for pattern in patterns):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / relative, follow_symlinks=False)


def _write_solution(built: BuiltTask, folder: Path) -> None:
    folder.mkdir()
    (folder / "reference.patch").write_text(built.reference_patch, encoding="utf-8")
    script = folder / "solve.sh"
    script.write_text(
        "#!/bin/bash\n"
        "# The reference solution: the reverse of the task's mutation.\n"
        "set -euo pipefail\n"
        "cd /workspace\n"
        "git apply --whitespace=nowarn /solution/reference.patch\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


def scratch_environment() -> bool:
    """Whether the harness's environment lies under /tmp or /var/tmp: the Docker backend
    binds such an environment in at run time instead of laying it in the base image, so
    an image exported from it would have no interpreter."""
    return any(
        str(path).startswith(folder + "/")
        for path in (Path(sys.prefix), Path(sys.executable))
        for folder in ("/tmp", "/var/tmp")
    )


def export_tasks(
    built: list[BuiltTask], out: Path, image: str | None = None
) -> tuple[list[Path], list[str]]:
    """Every task that Harbor can carry, and one line per task skipped."""
    if scratch_environment():
        raise CursorBenchError(
            f"cannot export to Harbor from an environment under /tmp or /var/tmp "
            f"({sys.prefix}): the base image does not hold it (containers mount a tmpfs "
            "there); export from a checkout elsewhere"
        )
    image = image or base_image()
    out.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    for one in built:
        try:
            written.append(export_task(one, out, image))
        except ExportSkipped as why:
            skipped.append(str(why))
    return written, skipped
