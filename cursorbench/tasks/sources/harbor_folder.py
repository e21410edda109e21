"""Harbor task folders read as CursorBench tasks (`cursorbench run --tasks harbor:DIR`), for
the `harbor` source (`harbor.py`).

`harbor:DIR` names one Harbor task folder (it holds `task.toml`) or a folder of them.
Each becomes the fields of a task with a `harbor` source and a `harbor` verification
(harness/kinds/harbor_kind.py), which the loader validates like a task file's:

- the prompt is `instruction.md`;
- the workspace is the folder `environment/Dockerfile` copies to the environment's
  workdir. CursorBench's sandboxes run their own base image, so only an environment that
  is that image plus a copied workspace can run unchanged: a Dockerfile `FROM` the
  Docker backend's base image (`cursorbench-base:...`, as `tasks export --format harbor`
  writes them) with `COPY`, `WORKDIR` and nothing else. Any other is refused, saying why;
- the hidden folder is the task's `tests/` (never in the agent's sandbox); `solution/` is
  kept beside it for the reference solver only, which runs `solve.sh` through the `run`
  tool (`harbor.solution_steps`);
- limits: the agent's timeout is the wall time, the verifier's the grading timeout; the
  turn and token limits, the protected paths and the category come from CursorBench's
  `[metadata]` keys where an exported task has them.

What Harbor's format says that is not honoured here: docs/interop.md.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from cursorbench.tasks.category import Category
from cursorbench.tasks.sources.base import LocatedTask, SourceError
from harness.kinds.harbor_kind import HarborVerification
from harness.sandbox.image import IMAGE_REPOSITORY
from harness.spec import Limits

PREFIX = "harbor:"
SUITE_VERSION = "harbor"
DEFAULT_CATEGORY = Category.DEBUGGING
DEFAULT_WORKDIR = "/workspace"
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def task_folders(location: Path) -> list[Path]:
    """The Harbor task folders at a location: itself, or its subfolders with a task.toml."""
    if (location / "task.toml").is_file():
        return [location]
    found = sorted(p for p in location.iterdir() if (p / "task.toml").is_file())
    if not found:
        raise SourceError(f"{PREFIX}{location}: no task.toml in it or in its subfolders")
    return found


def read_location(location: Path) -> tuple[list[LocatedTask], list[str]]:
    """The tasks at a `harbor:` location, and one line per folder that cannot run here."""
    tasks, problems = [], []
    try:
        folders = task_folders(location)
    except SourceError as error:
        return [], [str(error)]
    for folder in folders:
        try:
            tasks.append(read_task_folder(folder))
        except SourceError as error:
            problems.append(str(error))
    return tasks, problems


def read_task_folder(folder: Path) -> LocatedTask:
    folder = folder.resolve()
    where = f"{PREFIX}{folder}"
    _refuse_links_out(folder, where)  # before any file is read: a link could be read through
    try:
        config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
        prompt = (folder / "instruction.md").read_text(encoding="utf-8")
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SourceError(f"{where}: {error}") from None
    if not (folder / "tests" / "test.sh").is_file():
        raise SourceError(f"{where}: no tests/test.sh (the verifier)")
    _refuse_unsupported(config, where)
    metadata = config.get("metadata", {})
    workspace, workdir = environment_workspace(folder, config, where)
    verifier, agent = config.get("verifier", {}), config.get("agent", {})
    check = HarborVerification(
        workdir=workdir,
        protected_paths=_strings(metadata.get("cursorbench_protected_paths", [])),
        env=_verifier_env(verifier.get("env", {}), where),
    )
    fields = {
        "id": _task_id(metadata, config, folder),
        "suite_version": SUITE_VERSION,
        "category": _category(metadata),
        "prompt": prompt if prompt.strip() else "(empty instruction.md)",
        "source": {"kind": "harbor", "path": str(folder), "workspace": workspace},
        "verification": check,
        "limits": _limits(metadata, agent, verifier),
    }
    return LocatedTask(fields, folder / "task.toml", where)


def _refuse_links_out(folder: Path, where: str) -> None:
    """Every symbolic link anywhere under the task folder must point inside it, or the task is
    refused naming the first one: an `instruction.md` linked to a host file would put that
    file in the model's prompt, a `tests/` linked to a host folder the host's files in the
    verifier's sandbox. A link is judged by where it finally resolves (chains followed),
    dangling or not; links inside the folder are fine. Hard links are not links here: a file
    hard-linked from the host is that file, as a copy of it would be."""
    for parent, folders, files in os.walk(folder):  # never into a linked folder
        for name in sorted([*folders, *files]):
            path = Path(parent) / name
            if not path.is_symlink():
                continue
            shown = path.relative_to(folder).as_posix()
            try:
                target = path.resolve()
            except (OSError, RuntimeError):  # a loop of links
                raise SourceError(f"{where}: {shown} is a loop of links") from None
            if target != folder and folder not in target.parents:
                shown += "/" if target.is_dir() else ""
                raise SourceError(f"{where}: {shown} links outside the task folder ({target})")


def _refuse_unsupported(config: dict[str, Any], where: str) -> None:
    environment = config.get("environment", {})
    if environment.get("docker_image"):
        raise SourceError(f"{where}: a prebuilt environment image cannot run here")
    if config.get("steps"):
        raise SourceError(f"{where}: multi-step tasks are not supported")


def environment_workspace(folder: Path, config: dict[str, Any], where: str) -> tuple[str, str]:
    """(the workspace folder, relative to the task folder; the workdir) from the
    environment's Dockerfile, which must be the base image plus a copied workspace."""
    dockerfile = folder / "environment" / "Dockerfile"
    workdir = str(config.get("environment", {}).get("workdir") or "")
    if not dockerfile.is_file():
        raise SourceError(f"{where}: no environment/Dockerfile")
    copies: list[tuple[str, str]] = []
    base = None
    for instruction, argument in dockerfile_instructions(dockerfile.read_text(encoding="utf-8")):
        if instruction == "FROM":
            base = argument
        elif instruction == "WORKDIR":
            workdir = workdir or argument
        elif instruction == "COPY" and not argument.startswith("--"):
            parts = argument.split()
            if len(parts) != 2:
                raise SourceError(f"{where}: COPY {argument}: one source and one target only")
            copies.append((parts[0], parts[1]))
        else:
            raise SourceError(
                f"{where}: its Dockerfile has `{instruction} {argument[:40]}`: CursorBench runs "
                "its own base image, so only FROM it, COPY and WORKDIR can run here"
            )
    if base is None or not base.startswith(f"{IMAGE_REPOSITORY}:"):
        raise SourceError(
            f"{where}: its environment is FROM {base}, not the Docker backend's base image "
            f"({IMAGE_REPOSITORY}:...): CursorBench's sandboxes cannot run another image"
        )
    workdir = workdir or DEFAULT_WORKDIR
    if len(copies) > 1:
        raise SourceError(f"{where}: its Dockerfile copies {len(copies)} things (one at most)")
    if not copies:
        return "environment/.cursorbench-empty", workdir
    source, target = copies[0]
    if target.rstrip("/") != workdir.rstrip("/"):
        raise SourceError(f"{where}: COPY to {target}, not to the workdir {workdir}")
    inside = (folder / "environment" / source).resolve()
    if not inside.is_dir() or folder.resolve() not in inside.parents:
        raise SourceError(f"{where}: COPY {source}: not a folder of environment/")
    return inside.relative_to(folder.resolve()).as_posix(), workdir


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, its argument) per instruction, comments and continuations handled."""
    found, pending = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole, pending = (pending + stripped).strip(), ""
        instruction, _, argument = whole.partition(" ")
        found.append((instruction.upper(), argument.strip()))
    return found


def _task_id(metadata: dict[str, Any], config: dict[str, Any], folder: Path) -> str:
    for candidate in (metadata.get("cursorbench_id"), config.get("task", {}).get("name")):
        if isinstance(candidate, str) and _ID.match(candidate):
            return candidate
    slug = re.sub(r"[^a-z0-9._-]+", "-", folder.name.lower()).strip("-._")
    return slug or "harbor-task"


def _category(metadata: dict[str, Any]) -> Category:
    for key in ("cursorbench_category", "category"):
        value = metadata.get(key)
        if value in {c.value for c in Category}:
            return Category(value)
    return DEFAULT_CATEGORY


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _verifier_env(env: Any, where: str) -> dict[str, str]:
    if not isinstance(env, dict):
        return {}
    if any("${" in str(v) for v in env.values()):
        raise SourceError(f"{where}: [verifier.env] takes values from the host's environment")
    return {str(k): str(v) for k, v in env.items()}


def _limits(metadata: dict[str, Any], agent: dict[str, Any], verifier: dict[str, Any]) -> Limits:
    values: dict[str, Any] = {}
    if isinstance(agent.get("timeout_sec"), int | float) and agent["timeout_sec"] > 0:
        values["wall_time_s"] = float(agent["timeout_sec"])
    if isinstance(verifier.get("timeout_sec"), int | float) and verifier["timeout_sec"] > 0:
        values["test_timeout_s"] = float(verifier["timeout_sec"])
    for key in ("max_turns", "max_tokens"):
        value = metadata.get(f"cursorbench_{key}")
        if isinstance(value, int) and value > 0:
            values[key] = value
    return Limits(**values)
