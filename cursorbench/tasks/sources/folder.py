"""The `folder` source: a source tree kept in this repository, relative to the task file
(the smoke suite's codebases under `cursorbench/suite/repos/`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cursorbench.tasks.sources.base import MutatedSource, SourceError, SourceExample, SourceSpec
from harness.trees import tree_digest

if TYPE_CHECKING:
    from cursorbench.tasks.task import Task


class FolderSource(SourceSpec):
    """A source tree kept in this repository, relative to the task file."""

    kind: Literal["folder"] = "folder"
    path: str


def folder_of(spec: FolderSource, task: Task) -> Path:
    return (task.base_dir() / spec.path).resolve()


class FolderTaskSource(MutatedSource):
    name = "folder"
    model = FolderSource

    def tree(self, spec: FolderSource, task: Task, cache: Path) -> Path:
        return folder_of(spec, task)

    def digest(self, spec: FolderSource, task: Task) -> str:
        folder = folder_of(spec, task)
        if not folder.is_dir():
            raise SourceError(f"source folder {folder} does not exist")
        return tree_digest(folder)

    def secret_paths(self, spec: FolderSource, task: Task) -> list[Path]:
        """The folder, and the history of the repository holding it."""
        folder = folder_of(spec, task)
        history = next((p / ".git" for p in folder.parents if (p / ".git").exists()), None)
        return [folder] if history is None else [folder, history]

    def package_name(self, spec: FolderSource) -> str:
        return Path(spec.path).name

    def label(self, spec: FolderSource) -> str:
        return f"folder:{Path(spec.path).name}"

    def example(self, root: Path, cache: Path) -> SourceExample:
        for path, text in EXAMPLE_FILES.items():
            (root / "repo" / path).parent.mkdir(parents=True, exist_ok=True)
            (root / "repo" / path).write_text(text, encoding="utf-8")
        return SourceExample({"source": {"kind": "folder", "path": str(root / "repo")}} | EXAMPLE)


EXAMPLE_FILES = {
    "pytest.ini": "[pytest]\npythonpath = .\ntestpaths = tests\n",
    "calc/__init__.py": '"""A calculator."""\n',
    "calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n",
    "tests/test_neg.py": "from calc.ops import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n",
    "tests/test_add.py": (
        "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_add_zero():\n    assert add(0, 7) == 7\n"
    ),
}
# The task's fields for the tree of EXAMPLE_FILES (the `package` source's example too).
EXAMPLE = {
    "mutation": {"operations": [{"op": "remove_symbol", "file": "calc/ops.py", "symbol": "add"}]},
    "verification": {
        "hidden_tests": ["tests/test_add.py"],
        "fail_to_pass": ["tests/test_add.py::test_add", "tests/test_add.py::test_add_zero"],
        "pass_to_pass": ["tests/test_neg.py::test_neg"],
    },
}
