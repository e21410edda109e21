"""Building prepared workspaces: mutations, hidden tests, the cache, the reference patch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cursorbench.loader import bundled_suite, load_task
from cursorbench.task import RemoveFile, ReplaceText, Task
from cursorbench.workspace import BuildError, apply_operation, build, remove_symbol

SOURCE = """import os


@decorator
def keep():
    return 1


def gone(x):
    return x


class Box:
    def stay(self):
        return 2

    def leave(self):
        return 3


def last():
    return 4
"""


def slugify_task() -> Task:
    return load_task(bundled_suite() / "tasks" / "textkit-slugify.yaml")


def test_remove_symbol_function_method_and_decorated() -> None:
    without_gone = remove_symbol(SOURCE, "gone")
    assert "def gone" not in without_gone and "def keep" in without_gone
    assert "\n\n\n\n" not in without_gone
    without_method = remove_symbol(SOURCE, "Box.leave")
    assert "def leave" not in without_method and "def stay" in without_method
    without_keep = remove_symbol(SOURCE, "keep")
    assert "@decorator" not in without_keep
    without_last = remove_symbol(SOURCE, "last")
    assert without_last.endswith("return 3\n")


def test_remove_symbol_refuses_unknown_names() -> None:
    with pytest.raises(BuildError, match="no definition 'nothing'"):
        remove_symbol(SOURCE, "nothing")
    with pytest.raises(BuildError, match="no class 'Crate'"):
        remove_symbol(SOURCE, "Crate.leave")


def test_replace_text_must_match_exactly_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\nx = 1\n")
    with pytest.raises(BuildError, match="occurs 2 times"):
        apply_operation(tmp_path, ReplaceText(file="a.py", old="x = 1", new="x = 2"))
    with pytest.raises(BuildError, match="no such file"):
        apply_operation(tmp_path, RemoveFile(file="b.py"))


def test_built_workspace_hides_the_feature_and_its_tests(cursorbench_home: Path) -> None:
    task = slugify_task()
    built = build(task)
    assert built.root.is_relative_to(cursorbench_home)
    assert not (built.workspace / "tests" / "test_slugify.py").exists()
    assert (built.hidden / "tests" / "test_slugify.py").is_file()
    assert not (built.workspace / "textkit" / "slug.py").exists()
    leftovers = [p for p in built.workspace.rglob("*") if p.name in {".git", "__pycache__"}]
    assert leftovers == [] and not list(built.workspace.rglob("*.pyc"))


def test_the_cache_is_reused_and_keyed_by_content(tmp_path: Path) -> None:
    task = slugify_task()
    first, second = build(task), build(task)
    assert first.root == second.root
    changed = task.model_copy(update={"prompt": task.prompt + " Please."})
    assert build(changed).root != first.root


def test_reference_patch_restores_the_original_minus_hidden_tests(tmp_path: Path) -> None:
    built = build(slugify_task())
    tree = tmp_path / "tree"
    subprocess.run(["cp", "-a", str(built.workspace), str(tree)], check=True)
    subprocess.run(
        ["git", "apply", "-"], cwd=tree, input=built.reference_patch, text=True, check=True
    )
    assert (tree / "textkit" / "slug.py").read_text() == (
        built.original / "textkit" / "slug.py"
    ).read_text()
    assert not (tree / "tests" / "test_slugify.py").exists()
    assert set(built.solution_tree()) == {"textkit/__init__.py", "textkit/slug.py"}


def test_a_missing_source_folder_is_a_build_error(tmp_path: Path) -> None:
    task = slugify_task().model_copy(update={"path": tmp_path / "elsewhere" / "task.yaml"})
    with pytest.raises(BuildError, match="does not exist"):
        build(task)
