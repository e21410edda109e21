"""LocalSandbox: a private copy of the workspace, path checks, diffs against the start."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import Confinement, LocalSandbox, SandboxError
from harness.sandbox.confinement import bubblewrap_works
from harness.sandbox.local import MAX_READ_BYTES


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    root = tmp_path / "prepared"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def answer():\n    return 41\n")
    (root / "pkg" / "old.py").write_text("OLD = True\n")
    (root / "README.md").write_text("# demo\n")
    return root


@pytest.fixture
def sandbox(tmp_path: Path, prepared: Path) -> Iterator[LocalSandbox]:
    box = LocalSandbox(tmp_path / "attempt", prepared, Confinement("subprocess"))
    yield box
    box.close()


def test_workspace_is_a_copy_the_prepared_tree_never_changes(
    sandbox: LocalSandbox, prepared: Path
) -> None:
    assert sandbox.root == str(sandbox.workspace)
    assert sandbox.read("pkg/core.py") == "def answer():\n    return 41\n"
    sandbox.write("pkg/core.py", "changed\n")
    assert (prepared / "pkg" / "core.py").read_text() == "def answer():\n    return 41\n"
    assert (sandbox.workspace / "pkg" / "core.py").read_text() == "changed\n"


def test_write_creates_folders_and_read_returns_text(sandbox: LocalSandbox) -> None:
    sandbox.write("new/deep/file.txt", "héllo\nworld\n")
    assert sandbox.read("new/deep/file.txt") == "héllo\nworld\n"
    assert sandbox.read(str(sandbox.workspace / "new" / "deep" / "file.txt")) == "héllo\nworld\n"


def test_read_replaces_undecodable_bytes(sandbox: LocalSandbox) -> None:
    (sandbox.workspace / "bin.dat").write_bytes(b"ok\xff\n")
    assert sandbox.read("bin.dat") == "ok\ufffd\n"


def test_read_missing_file_and_folder_refused(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxError, match=re.escape("nope.py: no such file")):
        sandbox.read("nope.py")
    with pytest.raises(SandboxError, match="no such file"):
        sandbox.read("pkg")


def test_read_of_a_huge_file_refused(sandbox: LocalSandbox) -> None:
    (sandbox.workspace / "big.txt").write_bytes(b"x" * (MAX_READ_BYTES + 1))
    with pytest.raises(SandboxError, match="larger than"):
        sandbox.read("big.txt")


def test_write_over_a_folder_refused(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxError, match="is a directory"):
        sandbox.write("pkg", "x")
    with pytest.raises(SandboxError, match="is a directory"):
        sandbox.write(".", "x")


@pytest.mark.parametrize("path", ["../x", "pkg/../../x", "../attempt/git/HEAD", "/etc/passwd"])
def test_resolve_refuses_paths_outside(sandbox: LocalSandbox, path: str) -> None:
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.resolve(path)
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.read(path)


def test_write_outside_refused_and_nothing_written(sandbox: LocalSandbox, tmp_path: Path) -> None:
    for path in ["../escaped.txt", str(tmp_path / "escaped.txt")]:
        with pytest.raises(SandboxError, match="outside the workspace"):
            sandbox.write(path, "escaped")
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "attempt" / "escaped.txt").exists()


def test_resolve_accepts_paths_inside(sandbox: LocalSandbox) -> None:
    root = Path(os.path.realpath(sandbox.workspace))
    assert sandbox.resolve(".") == root
    assert sandbox.resolve("pkg/../README.md") == root / "README.md"
    assert sandbox.resolve(str(sandbox.workspace / "pkg")) == root / "pkg"
    assert sandbox.resolve("not/yet/there.txt") == root / "not" / "yet" / "there.txt"


def test_symlink_to_a_file_outside_refused_for_read(sandbox: LocalSandbox) -> None:
    made = sandbox.run("ln -s /etc/passwd leak", timeout=10)
    assert made.exit_code == 0, made.output
    assert (sandbox.workspace / "leak").is_symlink()
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.read("leak")


def test_symlink_to_a_file_outside_refused_for_write(sandbox: LocalSandbox, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    made = sandbox.run(f"ln -s {victim} leak && ln -s {tmp_path} outdir", timeout=10)
    assert made.exit_code == 0, made.output
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.write("leak", "overwritten")
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.write("outdir/victim.txt", "overwritten")
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.write("outdir/planted.txt", "planted")
    assert victim.read_text() == "original\n"
    assert not (tmp_path / "planted.txt").exists()


def test_dangling_symlink_to_outside_refused_for_write(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    target = tmp_path / "would-be-created.txt"
    made = sandbox.run(f"ln -s {target} dangling", timeout=10)
    assert made.exit_code == 0, made.output
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.write("dangling", "created")
    assert not target.exists()


def test_symlink_inside_the_workspace_is_followed(sandbox: LocalSandbox) -> None:
    sandbox.run("ln -s pkg/core.py alias", timeout=10)
    assert sandbox.read("alias") == "def answer():\n    return 41\n"


def test_run_happens_in_the_workspace(sandbox: LocalSandbox) -> None:
    done = sandbox.run("pwd; echo $HOME; echo made > made.txt", timeout=10)
    assert done.exit_code == 0
    assert done.output.splitlines() == [str(sandbox.workspace), str(sandbox.attempt_dir / "home")]
    assert sandbox.read("made.txt") == "made\n"


def test_run_reports_timeouts(sandbox: LocalSandbox) -> None:
    done = sandbox.run("sleep 10", timeout=0.3)
    assert done.timed_out
    assert done.exit_code is None


def test_diff_shows_added_modified_deleted_without_caches(sandbox: LocalSandbox) -> None:
    assert sandbox.diff() == ""
    sandbox.write("pkg/core.py", "def answer():\n    return 42\n")
    sandbox.write("pkg/extra.py", "EXTRA = 1\n")
    (sandbox.workspace / "pkg" / "old.py").unlink()
    (sandbox.workspace / "pkg" / "__pycache__").mkdir()
    (sandbox.workspace / "pkg" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0pyc")
    (sandbox.workspace / "stray.pyc").write_bytes(b"\0pyc")
    (sandbox.workspace / ".pytest_cache").mkdir()
    (sandbox.workspace / ".pytest_cache" / "README.md").write_text("cache\n")
    patch = sandbox.diff()
    headers = [line for line in patch.splitlines() if line.startswith("diff --git")]
    assert headers == [
        "diff --git a/pkg/core.py b/pkg/core.py",
        "diff --git a/pkg/extra.py b/pkg/extra.py",
        "diff --git a/pkg/old.py b/pkg/old.py",
    ]
    assert "-    return 41\n+    return 42\n" in patch
    assert "new file mode 100644" in patch
    assert "+EXTRA = 1\n" in patch
    assert "deleted file mode 100644" in patch
    assert "-OLD = True\n" in patch
    assert "pycache" not in patch
    assert "pyc" not in patch


def test_diff_is_repeatable_and_tracks_reverts(sandbox: LocalSandbox) -> None:
    sandbox.write("README.md", "# changed\n")
    first = sandbox.diff()
    assert first == sandbox.diff()
    sandbox.write("README.md", "# demo\n")
    assert sandbox.diff() == ""


def test_baseline_git_folder_is_outside_the_workspace(sandbox: LocalSandbox) -> None:
    assert not (sandbox.workspace / ".git").exists()
    assert (sandbox.attempt_dir / "git" / "HEAD").is_file()
    listing = sandbox.run("ls -A", timeout=10).output.split()
    assert sorted(listing) == ["README.md", "pkg"]


def test_reopening_an_attempt_folder_starts_fresh(tmp_path: Path, prepared: Path) -> None:
    first = LocalSandbox(tmp_path / "attempt", prepared, Confinement("subprocess"))
    first.write("leftover.txt", "x")
    second = LocalSandbox(tmp_path / "attempt", prepared, Confinement("subprocess"))
    try:
        assert not (second.workspace / "leftover.txt").exists()
        assert second.diff() == ""
    finally:
        second.close()


def test_close_removes_the_attempt_folder(tmp_path: Path, prepared: Path) -> None:
    box = LocalSandbox(tmp_path / "attempt", prepared, Confinement("subprocess"))
    box.write("x.txt", "x")
    assert box.attempt_dir.is_dir()
    box.close()
    assert not (tmp_path / "attempt").exists()
    assert (prepared / "pkg" / "core.py").is_file()
    box.close()  # twice is harmless


@pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")
def test_confined_sandbox_writes_only_its_workspace(tmp_path: Path, prepared: Path) -> None:
    box = LocalSandbox(tmp_path / "attempt", prepared, Confinement("bubblewrap"))
    try:
        done = box.run(
            "echo inside > inside.txt; echo $HOME; touch ../git/planted 2>&1 || echo blocked",
            timeout=10,
        )
        assert box.read("inside.txt") == "inside\n"
        assert done.output.splitlines()[0] == "/tmp"
        assert done.output.strip().endswith("blocked")
        assert not (box.attempt_dir / "git" / "planted").exists()
        assert [line for line in box.diff().splitlines() if line.startswith("diff")] == [
            "diff --git a/inside.txt b/inside.txt"
        ]
    finally:
        box.close()
