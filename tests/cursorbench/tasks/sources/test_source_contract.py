"""What every registered task source must do, run over `registry.SOURCES`.

A new source joins by its one line in `SOURCES` and its module's `example()`: the example's
task file loads with the source's own model and a stable digest, the task file's fields
that must go with the source are checked, it builds (the hidden files out of the
workspace, what the source hides in the sandbox's hidden paths), the untouched workspace
does not resolve, and a whole run with the reference solver resolves it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cursorbench.tasks.loader import TaskFileError, load_task
from cursorbench.tasks.sources.base import TaskSource
from cursorbench.tasks.sources.registry import SOURCES, source_of
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import build, source_tree, task_digest
from harness.grading.grade import grade
from harness.home import build_cache
from harness.run.runner import RunOutcome
from harness.sandbox import SandboxBackend, SandboxSettings, open_backend
from harness.trees import tree_files


def write_task(source: TaskSource, root: Path, **changes: Any) -> Path:
    """The source's example as a task file under `root/tasks/` (its files under `root`)."""
    example = source.example(root / "files", build_cache())
    fields = {
        "id": f"contract-{source.name}",
        "suite_version": "test",
        "category": "new_feature",
        "prompt": f"Write add(a, b): the {source.name} source's contract task.",
        **example.fields,
        **changes,
    }
    path = root / "tasks" / f"contract-{source.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(fields), encoding="utf-8")
    return path


def changed(path: Path, **changes: Any) -> Path:
    """The task file at `path` with some fields changed (None: dropped)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) | changes
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return path


@pytest.fixture(params=sorted(SOURCES))
def source(request: pytest.FixtureRequest) -> TaskSource:
    return SOURCES[request.param]


def test_the_registry_names_each_source_by_its_kind(source: TaskSource) -> None:
    assert SOURCES[source.name] is source
    assert source.model.model_fields["kind"].default == source.name
    owners = [s for s in SOURCES.values() if s.own_verification]
    assert len({s.own_verification for s in owners}) == len(owners)  # one source per kind
    prefixes = [s.location.prefix for s in SOURCES.values() if s.location is not None]
    assert len(set(prefixes)) == len(prefixes)


def test_the_example_loads_as_the_sources_model_with_a_stable_digest(
    source: TaskSource, tmp_path: Path
) -> None:
    task = load_task(write_task(source, tmp_path))
    assert isinstance(task.source, source.model) and source_of(task.source) is source
    assert Task.model_validate_json(task.model_dump_json()) == task.model_copy(
        update={"path": None}
    )
    assert task_digest(task) == task_digest(load_task(task.path or Path()))
    assert source_tree(task).is_dir()


def test_the_fields_that_go_with_a_source_are_checked(source: TaskSource, tmp_path: Path) -> None:
    path = write_task(source, tmp_path)
    if source.mutated:  # the reference is the mutation's reverse: there must be one
        with pytest.raises(TaskFileError, match="mutation: required"):
            load_task(changed(path, mutation=None))
    else:
        operations = [{"op": "remove_file", "file": "x.py"}]
        with pytest.raises(TaskFileError, match="has none"):
            load_task(changed(path, mutation={"operations": operations}))
    environment = {"requirements": ["pytest-timeout==2.3.1"]}
    if not source.takes_environment:
        with pytest.raises(TaskFileError, match="environment"):
            load_task(changed(write_task(source, tmp_path), environment=environment))
    if source.own_verification is not None:  # its verification goes with it, and only it
        other = {"fail_to_pass": ["tests/test_x.py::test_x"]}
        with pytest.raises(TaskFileError, match="go together"):
            load_task(changed(write_task(source, tmp_path), verification=other))


def test_the_example_builds_hiding_what_it_must(source: TaskSource, tmp_path: Path) -> None:
    task = load_task(write_task(source, tmp_path))
    built = build(task)
    hidden = tree_files(built.hidden)
    assert hidden and not set(hidden) & set(tree_files(built.workspace))
    assert build(task).root == built.root  # built once
    prepared = built.prepared()
    assert set(source.secret_paths(task.source, task)) <= set(prepared.secret_paths)
    assert task.base_dir() in prepared.secret_paths
    if source.mutated:
        assert built.reference_patch and built.solution_tree()
    else:
        assert source.solution_steps(task.source, built)


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return open_backend("auto", SandboxSettings())


def test_the_untouched_workspace_does_not_resolve(
    source: TaskSource, tmp_path: Path, backend: SandboxBackend
) -> None:
    built = build(load_task(write_task(source, tmp_path)))
    assert not grade(built.prepared(), "", backend, tmp_path / "grade").resolved
    if source.mutated:
        assert grade(built.prepared(), built.reference_patch, backend, tmp_path / "ref").resolved


def test_a_run_with_the_reference_solver_resolves_it(
    source: TaskSource, tmp_path: Path, run_benchmark: Callable[..., RunOutcome]
) -> None:
    path = write_task(source, tmp_path)
    [result] = run_benchmark(tasks=[str(path)], out=tmp_path / "run").results
    assert result.resolved, (result.failure, result.error)
