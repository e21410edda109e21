"""Building prepared workspaces: mutations, hidden tests, the cache, the reference patch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cursorbench.tasks.loader import bundled_suite, load_task
from cursorbench.tasks.task import MoveSymbol, RemoveFile, ReplaceText, Task
from cursorbench.tasks.workspace import BuildError, apply_operation, build, remove_symbol
from cursorbench.validation import leaks
from harness.grading.grade import protected_files
from harness.home import build_cache

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


def test_built_workspace_hides_the_feature_and_its_tests() -> None:
    task = slugify_task()
    built = build(task)
    assert built.root.is_relative_to(build_cache())
    assert not (built.workspace / "tests" / "test_slugify.py").exists()
    assert (built.hidden / "tests" / "test_slugify.py").is_file()
    assert not (built.workspace / "textkit" / "slug.py").exists()
    leftovers = [p for p in built.workspace.rglob("*") if p.name in {".git", "__pycache__"}]
    assert leftovers == [] and not list(built.workspace.rglob("*.pyc"))


def test_the_cache_is_reused_and_keyed_by_content(tmp_path: Path) -> None:
    task, cache = slugify_task(), tmp_path / "private-cache"
    first, second = build(task, cache), build(task, cache)
    assert first.root == second.root and first.root.is_relative_to(cache)
    changed = task.model_copy(update={"prompt": task.prompt + " Please."})
    assert build(changed, cache).root != first.root


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


PACKAGE_CODE = """def helper(text):
    return text.strip().lower()


def first(text):
    return helper(text) + "!"
"""
AUTHORED_TEST = """from pkg.core import first


def test_first_shouts_the_normalised_text_back():
    assert first("  Hello ") == "hello!"
"""


def authored_task(tmp_path: Path, **changes: object) -> Task:
    """A folder task whose workspace starts with `helper` moved out of `core.py`, graded
    by a test the task's author wrote (kept next to the task file, in `tasks/ID/`)."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "pkg" / "core.py").write_text(PACKAGE_CODE)
    (tmp_path / "tasks" / "pkg-moved" / "tests").mkdir(parents=True)
    (tmp_path / "tasks" / "pkg-moved" / "tests" / "test_shape.py").write_text(AUTHORED_TEST)
    data: dict[str, object] = {
        "id": "pkg-moved",
        "suite_version": "test",
        "category": "refactor",
        "prompt": "Move the helper back.",
        "source": {"kind": "folder", "path": "../src"},
        "authored_tests": ["tests/test_shape.py"],
        "mutation": {
            "kind": "rewrite",
            "operations": [
                {"op": "move_symbol", "file": "pkg/core.py", "symbol": "helper",
                 "into": "pkg/helpers.py"},
                {"op": "replace_text", "file": "pkg/core.py", "old": "def first",
                 "new": "from pkg.helpers import helper\n\n\ndef first"},
            ],
        },
        "verification": {
            "hidden_tests": ["tests/test_shape.py"],
            "fail_to_pass": ["tests/test_shape.py::test_first_shouts_the_normalised_text_back"],
        },
    }  # fmt: skip
    data.update(changes)
    task = Task.model_validate(data)
    return task.model_copy(update={"path": tmp_path / "tasks" / "pkg-moved.yaml"})


def test_authored_tests_are_hidden_and_in_the_original(tmp_path: Path) -> None:
    built = build(authored_task(tmp_path), scan=False)
    assert (built.original / "tests" / "test_shape.py").read_text() == AUTHORED_TEST
    assert (built.hidden / "tests" / "test_shape.py").read_text() == AUTHORED_TEST
    assert not (built.workspace / "tests" / "test_shape.py").exists()
    assert "tests/test_shape.py" not in built.solution_tree()
    assert "test_first_shouts" not in built.reference_patch


def test_move_symbol_moves_the_code_and_the_reference_moves_it_back(tmp_path: Path) -> None:
    built = build(authored_task(tmp_path), scan=False)
    helpers = (built.workspace / "pkg" / "helpers.py").read_text()
    assert helpers == "def helper(text):\n    return text.strip().lower()\n"
    assert "def helper" not in (built.workspace / "pkg" / "core.py").read_text()
    assert built.solution_tree() == {"pkg/core.py": PACKAGE_CODE, "pkg/helpers.py": None}
    with pytest.raises(BuildError, match="only a top-level symbol"):
        apply_operation(
            built.original / "pkg", MoveSymbol(file="core.py", symbol="A.b", into="x.py")
        )


def test_an_authored_test_is_part_of_the_cache_key(tmp_path: Path) -> None:
    task = authored_task(tmp_path)
    first = build(task, scan=False)
    (tmp_path / "tasks" / "pkg-moved" / "tests" / "test_shape.py").write_text(
        AUTHORED_TEST + "\n\ndef test_more():\n    assert first('A') == 'a!'\n"
    )
    assert build(task, scan=False).root != first.root


def test_authored_tests_must_exist_be_hidden_and_stay_inside(tmp_path: Path) -> None:
    task = authored_task(tmp_path)
    (tmp_path / "tasks" / "pkg-moved" / "tests" / "test_shape.py").unlink()
    with pytest.raises(BuildError, match=r"authored test .*test_shape\.py does not exist"):
        build(task, scan=False)
    with pytest.raises(ValueError, match=r"not in verification\.hidden_tests"):
        authored_task(tmp_path / "b", authored_tests=["tests/test_other.py"])
    with pytest.raises(ValueError, match="not a relative path inside the tree"):
        authored_task(
            tmp_path / "c",
            authored_tests=["../escape.py"],
            verification={"hidden_tests": ["../escape.py"], "fail_to_pass": ["x"]},
        )


def test_the_leak_scan_covers_authored_tests(tmp_path: Path) -> None:
    built = build(authored_task(tmp_path), scan=False)
    patterns = leaks.distinctive_lines(
        leaks.answer_lines(built.reference_patch, built.hidden), built.workspace
    )
    assert "def test_first_shouts_the_normalised_text_back():" in patterns
    (built.workspace / "notes.txt").write_text(AUTHORED_TEST)
    assert leaks.workspace_leaks(built.workspace, patterns)


def test_an_authored_test_is_protected_from_the_agents_change(tmp_path: Path) -> None:
    prepared = build(authored_task(tmp_path), scan=False).prepared()
    assert "tests/test_shape.py" in protected_files(prepared)
    assert any(tmp_path / "tasks" in [p, *p.parents] for p in prepared.secret_paths)


def test_earlier_turns_change_the_digest_only_when_a_task_has_them() -> None:
    """No `earlier_turns` is left out of the digest (tasks written before them keep theirs);
    a task with them is another task."""
    from cursorbench.tasks.loader import bundled_suite, load_task
    from cursorbench.tasks.workspace import digested_json, task_digest
    from harness.spec import Turn

    task = load_task(bundled_suite() / "tasks" / "textkit-slugify.yaml")
    assert "earlier_turns" not in digested_json(task)
    turns = [Turn(role="user", content="Add slugify."), Turn(role="assistant", content="Done.")]
    followup = task.model_copy(update={"earlier_turns": turns})
    assert task_digest(followup) != task_digest(task)
