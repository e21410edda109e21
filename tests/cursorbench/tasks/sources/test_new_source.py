"""A source the project does not have, written here as a source is written: `inline`, whose
files are given in the task file itself. Adding it is its module (the classes below) and
its one line in `SOURCES`; then its tasks load, build, grade and run as any other's."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest
import yaml
from pydantic import Field, field_validator

from cursorbench.tasks.loader import TaskFileError, load_task
from cursorbench.tasks.sources.base import MutatedSource, SourceExample, SourceSpec, TaskSource
from cursorbench.tasks.sources.folder import EXAMPLE, EXAMPLE_FILES
from cursorbench.tasks.sources.registry import SOURCES, source_of
from cursorbench.tasks.stats import task_row
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import build, task_digest
from harness.grading.grade import grade
from harness.home import build_once
from harness.run.runner import RunOutcome
from harness.sandbox import SandboxSettings, open_backend
from tests.cursorbench.tasks.sources import test_source_contract as contract

# -- the source's module ------------------------------------------------------------------


class InlineSource(SourceSpec):
    """A small tree written out in the task file: relative path -> text."""

    kind: Literal["inline"] = "inline"
    files: dict[str, str] = Field(min_length=1)

    @field_validator("files")
    @classmethod
    def _inside(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            if path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"{path}: not a relative path inside the tree")
        return files


class InlineTaskSource(MutatedSource):
    name = "inline"
    model = InlineSource

    def tree(self, spec: InlineSource, task: Task, cache: Path) -> Path:
        """The files written out once, in a folder named by their digest."""
        key = hashlib.sha256(json.dumps(spec.files, sort_keys=True).encode()).hexdigest()
        root = cache / "inline" / key[:24]

        def fill(staging: Path) -> None:
            for path, text in spec.files.items():
                (staging / "tree" / path).parent.mkdir(parents=True, exist_ok=True)
                (staging / "tree" / path).write_text(text, encoding="utf-8")

        build_once(root, key, fill)
        return root / "tree"

    def digest(self, spec: InlineSource, task: Task) -> str:
        return ""  # the files are in the task file, which the digest covers

    def package_name(self, spec: InlineSource) -> str:
        return "inline"

    def label(self, spec: InlineSource) -> str:
        return f"inline:{len(spec.files)} files"

    def example(self, root: Path, cache: Path) -> SourceExample:
        return SourceExample({"source": {"kind": "inline", "files": EXAMPLE_FILES}} | EXAMPLE)


# -- its registry line, and its tasks -----------------------------------------------------


@pytest.fixture
def inline(monkeypatch: pytest.MonkeyPatch) -> TaskSource:
    monkeypatch.setitem(SOURCES, "inline", InlineTaskSource())  # the line in `SOURCES`
    return SOURCES["inline"]


def write_task(root: Path, source: TaskSource) -> Path:
    fields = {
        "id": "inline-calc-add", "suite_version": "test", "category": "new_feature",
        "prompt": "Write add(a, b) in calc/ops.py.",
    } | source.example(root, root).fields  # fmt: skip
    path = root / "inline-calc-add.yaml"
    path.write_text(yaml.safe_dump(fields), encoding="utf-8")
    return path


def test_an_unregistered_source_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    path = write_task(tmp_path, InlineTaskSource())
    with pytest.raises(TaskFileError, match=r"no task source named 'inline' \(known: folder, "):
        load_task(path)


def test_once_registered_its_task_loads_builds_and_grades(
    inline: TaskSource, tmp_path: Path
) -> None:
    task = load_task(write_task(tmp_path, inline))
    assert isinstance(task.source, InlineSource) and source_of(task.source) is inline
    assert task_digest(task) == task_digest(load_task(write_task(tmp_path, inline)))
    assert task_row(task, (0, 0), None).package == "inline"
    built = build(task)
    assert "def add" not in (built.workspace / "calc/ops.py").read_text()
    assert (built.hidden / "tests/test_add.py").is_file()
    assert not (built.workspace / "tests/test_add.py").exists()
    prepared = built.prepared()
    backend = open_backend("auto", SandboxSettings(hidden=tuple(prepared.secret_paths)))
    assert grade(prepared, built.reference_patch, backend, tmp_path / "ref").resolved
    assert not grade(prepared, "", backend, tmp_path / "untouched").resolved


def test_it_keeps_the_contract_every_registered_source_keeps(
    inline: TaskSource, tmp_path: Path
) -> None:
    contract.test_the_registry_names_each_source_by_its_kind(inline)
    contract.test_the_example_loads_as_the_sources_model_with_a_stable_digest(inline, tmp_path)
    contract.test_the_fields_that_go_with_a_source_are_checked(inline, tmp_path)
    contract.test_the_example_builds_hiding_what_it_must(inline, tmp_path)


def test_once_registered_its_task_runs_like_any_other(
    inline: TaskSource, tmp_path: Path, run_benchmark: Callable[..., RunOutcome]
) -> None:
    path = write_task(tmp_path, inline)
    [result] = run_benchmark(tasks=[str(path)], out=tmp_path / "run").results
    assert result.resolved, (result.failure, result.error)
