"""Baseline diffs, their line counts, and applying them to a fresh copy of the start."""

from __future__ import annotations

import filecmp
import os
import shutil
import stat
from pathlib import Path

import pytest

from harness.sandbox.baseline import Baseline, BaselineError, apply_patch, diff_stats

PATCH = """\
diff --git a/a.py b/a.py
index 1111111..2222222 100644
--- a/a.py
+++ b/a.py
@@ -1,4 +1,5 @@
 keep = 1
-old = 2
-gone = 3
+new = 2
+added = 3
+more = 4
 tail = 5
diff --git a/b.py b/b.py
deleted file mode 100644
index 3333333..0000000
--- a/b.py
+++ /dev/null
@@ -1 +0,0 @@
-only = 1
"""


def test_diff_stats_counts_added_and_removed_lines() -> None:
    assert diff_stats(PATCH) == (3, 3)


def test_diff_stats_of_nothing() -> None:
    assert diff_stats("") == (0, 0)


def test_diff_stats_counts_content_lines_that_look_like_headers() -> None:
    patch = (
        "diff --git a/q.sql b/q.sql\n"
        "index 1111111..2222222 100644\n"
        "--- a/q.sql\n"
        "+++ b/q.sql\n"
        "@@ -1,2 +1,2 @@\n"
        "--- old comment\n"
        "+++ new comment\n"
        " select 1;\n"
    )
    assert diff_stats(patch) == (1, 1)


def make_tree(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "keep.py").write_text("KEEP = 1\n")
    (root / "pkg" / "edit.py").write_text("def f():\n    return 1\n")
    (root / "pkg" / "gone.py").write_text("GONE = 1\n")
    (root / "blob.bin").write_bytes(bytes(range(256)))
    (root / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (root / "no-newline.txt").write_text("last line without newline")


def snapshot_copy(source: Path, work: Path, git_dir: Path) -> Baseline:
    shutil.copytree(source, work, symlinks=True)
    baseline = Baseline(git_dir, work)
    baseline.snapshot()
    return baseline


def assert_same_tree(left: Path, right: Path) -> None:
    def walk(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
        found = {}
        for path in sorted(root.rglob("*")):
            relative = str(path.relative_to(root))
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path), 0)
            elif path.is_file():
                found[relative] = ("file", path.read_bytes(), path.stat().st_mode & stat.S_IXUSR)
            else:
                found[relative] = ("dir", "", 0)
        return found

    assert walk(left) == walk(right)


def test_patch_round_trip_reproduces_the_tree(tmp_path: Path) -> None:
    source = tmp_path / "source"
    make_tree(source)
    work = tmp_path / "work"
    baseline = snapshot_copy(source, work, tmp_path / "git")
    assert baseline.diff() == ""

    (work / "pkg" / "edit.py").write_text("def f():\n    return 2\n")
    (work / "pkg" / "gone.py").unlink()
    (work / "brand" / "new").mkdir(parents=True)
    (work / "brand" / "new" / "mod.py").write_text("NEW = 'ü'\n")
    (work / "empty.txt").write_text("")
    (work / "blob.bin").write_bytes(bytes(reversed(range(256))) + b"\0\0")
    (work / "tool.sh").chmod(0o755)
    (work / "no-newline.txt").write_text("changed, still no newline")
    os.symlink("pkg/keep.py", work / "alias")
    (work / "dir with space").mkdir()
    (work / "dir with space" / "ünïcode name.txt").write_text("x\n")

    patch = baseline.diff()
    assert "GIT binary patch" in patch
    assert "deleted file mode" in patch
    assert "new mode 100755" in patch
    assert diff_stats(patch) == (5, 3)  # +: edit, mod.py, no-newline, alias, ünïcode; -: edit,
    # gone, no-newline

    fresh = tmp_path / "fresh"
    shutil.copytree(source, fresh, symlinks=True)
    apply_patch(patch, fresh)
    assert_same_tree(work, fresh)
    assert not (fresh / "pkg" / "gone.py").exists()
    assert (fresh / "brand" / "new" / "mod.py").read_text() == "NEW = 'ü'\n"
    assert os.readlink(fresh / "alias") == "pkg/keep.py"
    assert (fresh / "dir with space" / "ünïcode name.txt").read_text() == "x\n"
    assert os.access(fresh / "tool.sh", os.X_OK)


def test_snapshot_ignores_caches(tmp_path: Path) -> None:
    source = tmp_path / "source"
    make_tree(source)
    (source / "pkg" / "__pycache__").mkdir()
    (source / "pkg" / "__pycache__" / "keep.cpython-311.pyc").write_bytes(b"\0")
    (source / "thing.egg-info").mkdir()
    (source / "thing.egg-info" / "PKG-INFO").write_text("x\n")
    work = tmp_path / "work"
    baseline = snapshot_copy(source, work, tmp_path / "git")
    (work / "pkg" / "__pycache__" / "edit.cpython-311.pyc").write_bytes(b"\0")
    (work / "thing.egg-info" / "PKG-INFO").write_text("y\n")
    (work / ".mypy_cache").mkdir()
    (work / ".mypy_cache" / "x.json").write_text("{}")
    assert baseline.diff() == ""


def test_diff_includes_files_the_workspace_gitignore_names(tmp_path: Path) -> None:
    source = tmp_path / "source"
    make_tree(source)
    (source / ".gitignore").write_text("pkg/_version.py\n*.cfg\n")
    (source / "pkg" / "_version.py").write_text("version = '1.0'\n")
    work = tmp_path / "work"
    baseline = snapshot_copy(source, work, tmp_path / "git")
    (work / "pkg" / "_version.py").write_text("version = '2.0'\n")
    (work / "settings.cfg").write_text("[x]\n")
    patch = baseline.diff()
    fresh = tmp_path / "fresh"
    shutil.copytree(source, fresh, symlinks=True)
    apply_patch(patch, fresh)
    assert (fresh / "pkg" / "_version.py").read_text() == "version = '2.0'\n"
    assert (fresh / "settings.cfg").read_text() == "[x]\n"


def test_apply_empty_patch_changes_nothing(tmp_path: Path) -> None:
    make_tree(tmp_path / "tree")
    make_tree(tmp_path / "copy")
    apply_patch("", tmp_path / "tree")
    apply_patch("  \n", tmp_path / "tree")
    assert not filecmp.dircmp(tmp_path / "tree", tmp_path / "copy").diff_files


def test_apply_patch_to_a_different_tree_raises_one_line(tmp_path: Path) -> None:
    source = tmp_path / "source"
    make_tree(source)
    work = tmp_path / "work"
    baseline = snapshot_copy(source, work, tmp_path / "git")
    (work / "pkg" / "edit.py").write_text("def f():\n    return 2\n")
    patch = baseline.diff()
    other = tmp_path / "other"
    make_tree(other)
    (other / "pkg" / "edit.py").write_text("something else entirely\n")
    with pytest.raises(BaselineError) as caught:
        apply_patch(patch, other)
    message = str(caught.value)
    assert message.startswith("git apply failed: ")
    assert "\n" not in message
    assert (other / "pkg" / "edit.py").read_text() == "something else entirely\n"


def test_apply_patch_does_not_touch_an_enclosing_repository(tmp_path: Path) -> None:
    source = tmp_path / "source"
    make_tree(source)
    work = tmp_path / "work"
    baseline = snapshot_copy(source, work, tmp_path / "git")
    (work / "pkg" / "keep.py").write_text("KEEP = 2\n")
    patch = baseline.diff()
    # A target nested in some other git repository still gets the patch as plain files.
    outer = tmp_path / "outer"
    outer.mkdir()
    Baseline(outer / ".git", outer).snapshot()
    target = outer / "target"
    shutil.copytree(source, target)
    apply_patch(patch, target)
    assert (target / "pkg" / "keep.py").read_text() == "KEEP = 2\n"


def test_baseline_errors_are_one_line(tmp_path: Path) -> None:
    baseline = Baseline(tmp_path / "no-git", tmp_path)
    with pytest.raises(BaselineError) as caught:
        baseline.diff()
    assert str(caught.value).startswith("git add failed: ")
    assert "\n" not in str(caught.value)
