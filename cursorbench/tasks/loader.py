"""Loading task files: YAML or JSON, validated into `Task`, with one-line errors; and the
tasks of `--tasks PREFIX:DIR` folders in a source's own format (`harbor:DIR`)."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path, PosixPath

import yaml
from pydantic import ValidationError

from cursorbench.tasks.sources.registry import SOURCES
from cursorbench.tasks.task import Task
from harness.errors import CursorBenchError
from harness.kinds.registry import task_file_kinds

TASK_SUFFIXES = (".yaml", ".yml", ".json")
# libyaml's parser where PyYAML was built with it: v1's task files (long test lists) take
# ~0.35 s each to parse in pure Python, which a lookup across suites would pay 61 times.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
VERIFICATION_TAGS = tuple(task_file_kinds())  # the union's tags, as pydantic names them


class TaskFileError(CursorBenchError, ValueError):
    """A task file or selection is unusable; the message is one line for the user."""


def _describe(error: ValidationError) -> str:
    problems = error.errors()
    first = problems[0]
    loc = list(first["loc"])
    if loc[:1] == ["verification"] and loc[1:2] and loc[1] in VERIFICATION_TAGS:
        del loc[1]  # the union's tag (pydantic names it): the file never spells it
    where = ".".join(str(part) for part in loc) or "(top level)"
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def load_task(path: Path) -> Task:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TaskFileError(f"{path}: cannot read ({error.strerror})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, SafeLoader)
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        first = str(error).replace("\n", " ")[:200]
        raise TaskFileError(f"{path}: not valid {path.suffix[1:].upper()} ({first})") from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: expected a mapping of task fields at the top level")
    try:
        task = Task.model_validate(data)
    except ValidationError as error:
        raise TaskFileError(f"{path}: {_describe(error)}") from None
    return task.model_copy(update={"path": path.resolve()})


LISTED_KINDS = ("pytest", "docs")  # task-file kinds whose FAIL_TO_PASS lists are derived


def load_task_for_derive(path: Path) -> Task:
    """A task file whose test lists may still be empty (an author's draft): a placeholder
    FAIL_TO_PASS test lets it load so that the lists can be derived (other kinds load as
    they are)."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), SafeLoader)
    except (OSError, yaml.YAMLError) as error:
        raise TaskFileError(f"{path}: cannot read ({error})") from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: expected a mapping of task fields at the top level")
    check = data.setdefault("verification", {})
    listed = isinstance(check, dict) and check.get("kind", "pytest") in LISTED_KINDS
    if listed and not check.get("fail_to_pass"):
        check["fail_to_pass"] = ["placeholder"]
    try:
        task = Task.model_validate(data)
    except ValidationError as error:
        raise TaskFileError(f"{path}: {_describe(error)}") from None
    return task.model_copy(update={"path": path.resolve()})


def task_files(location: Path) -> list[Path]:
    """A task file, or the task files of a suite folder (its `tasks/` if it has one)."""
    if location.is_file():
        return [location]
    if not location.is_dir():
        raise TaskFileError(f"{location}: no such task file or folder")
    folder = location / "tasks" if (location / "tasks").is_dir() else location
    return sorted(p for p in folder.iterdir() if p.suffix in TASK_SUFFIXES and p.is_file())


def load_tasks(locations: list[Path]) -> list[Task]:
    """Every task at the locations; the first bad file is refused (the rest are counted)."""
    tasks, problems = load_tasks_reporting(locations)
    if problems:
        more = f" (and {len(problems) - 1} more bad task files)" if len(problems) > 1 else ""
        raise TaskFileError(problems[0] + more)
    return tasks


def load_tasks_reporting(locations: list[Path]) -> tuple[list[Task], list[str]]:
    """The tasks that load, and one line per file or location that does not (a file whose
    task id another file already has is such a file)."""
    tasks: dict[str, Task] = {}
    problems: list[str] = []
    for location in locations:
        if isinstance(location, SourceDir):
            found, bad = _located_tasks(location)
            problems += bad
            for task in found:
                if task.id in tasks:
                    problems.append(f"{location.prefix}{location}: task id {task.id!r} twice")
                    continue
                tasks[task.id] = task
            continue
        try:
            paths = task_files(location)
        except TaskFileError as error:
            problems.append(str(error))
            continue
        for path in paths:
            try:
                task = load_task(path)
            except TaskFileError as error:
                problems.append(str(error))
                continue
            if task.id in tasks:
                problems.append(f"{path}: task id {task.id!r} also in {tasks[task.id].path}")
                continue
            tasks[task.id] = task
    return list(tasks.values()), problems


def select_tasks(tasks: list[Task], patterns: list[str]) -> list[Task]:
    """Tasks whose ids match any of the glob patterns (all when none are given)."""
    if not patterns:
        return tasks
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(task.id, pattern) for task in tasks):
            known = ", ".join(task.id for task in tasks)
            raise TaskFileError(f"no task matches {pattern!r} (known: {known})")
    return [t for t in tasks if any(fnmatch.fnmatchcase(t.id, p) for p in patterns)]


def tasks_from_options(values: list[str]) -> list[Task]:
    """`--tasks` values: task files or suite folders, else id globs over the bundled suite."""
    paths, globs = split_task_options(values)
    locations = paths or [bundled_suite()]
    return _select(load_tasks(locations), globs, locations)


def tasks_from_options_reporting(values: list[str]) -> tuple[list[Task], list[str]]:
    """Like `tasks_from_options`, but bad task files are reported, not refused: the tasks
    that load and are selected, and one line per problem."""
    paths, globs = split_task_options(values)
    locations = paths or [bundled_suite()]
    tasks, problems = load_tasks_reporting(locations)
    try:
        return _select(tasks, globs, locations), problems
    except TaskFileError as error:
        return [], [*problems, str(error)]


def _select(tasks: list[Task], patterns: list[str], locations: list[Path]) -> list[Task]:
    """`select_tasks`; a pattern that matches nothing here but a task of another bundled
    suite says which suite to ask for."""
    try:
        return select_tasks(tasks, patterns)
    except TaskFileError as error:
        hint = _in_another_suite(tasks, patterns, locations)
        raise (TaskFileError(hint) if hint else error) from None


def _in_another_suite(tasks: list[Task], patterns: list[str], locations: list[Path]) -> str:
    """Where a pattern that matches none of `tasks` would match: e.g. "no task 'x' in the
    smoke suite; it is in suite v1: add --suite v1"; "" when no bundled suite has it."""
    missing = [p for p in patterns if not any(fnmatch.fnmatchcase(t.id, p) for t in tasks)]
    if not missing:
        return ""
    pattern = missing[0]
    suites = bundled_suites()
    here = [name for name, path in suites.items() if [path.resolve()] == resolved(locations)]
    for name, path in suites.items():
        if name in here:
            continue
        found, _ = load_tasks_reporting([path])
        if any(fnmatch.fnmatchcase(task.id, pattern) for task in found):
            where = f"the {here[0]} suite" if here else ", ".join(map(str, locations))
            advice = f"add --suite {name}" if here == [DEFAULT_SUITE] else f"use --suite {name}"
            return f"no task {pattern!r} in {where}; it is in suite {name}: {advice}"
    return ""


def resolved(paths: list[Path]) -> list[Path]:
    return [path.resolve() for path in paths]


class SourceDir(PosixPath):
    """A `--tasks PREFIX:DIR` location: a folder of tasks in a source's own format (a Harbor
    task folder or a folder of them); `source` names the source whose `location` it is."""

    source: str
    prefix: str


def source_location(value: str) -> SourceDir | None:
    """The folder a `PREFIX:DIR` value names (it must exist); None for other values."""
    for name, source in SOURCES.items():
        location = source.location
        if location is not None and value.startswith(location.prefix):
            folder = SourceDir(value[len(location.prefix) :])
            if not folder.is_dir():
                raise TaskFileError(f"{value}: no such {location.what}")
            folder.source, folder.prefix = name, location.prefix
            return folder
    return None


def _located_tasks(folder: SourceDir) -> tuple[list[Task], list[str]]:
    """The tasks its source reads at the location, validated as task files are."""
    location = SOURCES[folder.source].location
    assert location is not None
    found, problems = location.read(folder)
    tasks = []
    for located in found:
        try:
            task = Task.model_validate(located.fields)
        except ValidationError as error:
            problems.append(f"{located.where}: {_describe(error)}")
            continue
        tasks.append(task.model_copy(update={"path": located.path}))
    return tasks, problems


def split_task_options(values: list[str]) -> tuple[list[Path], list[str]]:
    """`--tasks` values as paths that exist and id globs; a value that names a file or
    folder that is not there (it has a `/` or a task file suffix) is refused. `harbor:DIR`
    is a Harbor task folder or a folder of them (`cursorbench/tasks/sources/harbor.py`)."""
    paths: list[Path] = []
    globs: list[str] = []
    for value in values:
        if not value.strip():
            raise TaskFileError("--tasks: an empty value")
        located = source_location(value)
        if located is not None:
            paths.append(located)
        elif Path(value).exists():
            paths.append(Path(value))
        elif "/" in value or value.endswith(TASK_SUFFIXES):
            raise TaskFileError(f"{value}: no such task file or folder")
        else:
            globs.append(value)
    return paths, globs


def bundled_suite() -> Path:
    """The folder of the default suite (`smoke`); the other bundled suites lie inside it."""
    return Path(__file__).parents[1] / "suite"


DEFAULT_SUITE = "smoke"


def bundled_suites() -> dict[str, Path]:
    """Every suite that ships with CursorBench, by name (see `cursorbench.tasks.suites`)."""
    suites = {DEFAULT_SUITE: bundled_suite(), "v1": bundled_suite() / "v1"}
    return suites | {"v2": bundled_suite() / "v2"}
