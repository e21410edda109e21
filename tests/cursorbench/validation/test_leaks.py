"""The leak scan: it walks the sandbox's view, and refuses a spec of the deleted API."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cursorbench.tasks.loader import bundled_suite, load_task
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import build, scan_hidden_paths
from cursorbench.validation import leaks
from harness.sandbox import view

SLUGIFY = bundled_suite() / "tasks" / "textkit-slugify.yaml"
SPEC_FILES = {
    "CHANGELOG.md": "## 1.1\n\n- Added `slugify()` and `unique_slug()`.\n",
    "textkit/__init__.pyi": "def slugify(text: str, separator: str = ...) -> str: ...\n",
    "docs/usage.md": "Make a slug with `textkit.unique_slug(title, taken)`.\n",
}


def spec_task(tmp_path: Path, files: dict[str, str], **changes: object) -> Task:
    """The slugify task over a copy of textkit that also holds `files`."""
    repo = tmp_path / "repos" / "textkit"
    shutil.copytree(bundled_suite() / "repos" / "textkit", repo)
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    data = yaml.safe_load(SLUGIFY.read_text()) | dict(changes)
    (tmp_path / "tasks").mkdir()
    path = tmp_path / "tasks" / "textkit-slugify.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_task(path)


def test_the_build_deletes_the_spec_of_the_deleted_api(tmp_path: Path) -> None:
    files = SPEC_FILES | {
        "CHANGELOG.md": "## 1.1\n\n- Added `slugify()` and `unique_slug()`.\n\n- Faster wrap.\n",
        "textkit/__init__.pyi": "def slugify(text: str) -> str: ...\n"
        "class Cache:\n    @property\n    def unique_slug(self) -> str: ...\n"
        "def wrap(text: str) -> str: ...\n",
        "textkit-1.0.dist-info/entry_points.txt": "[x]\nslug = textkit.slug:slugify\n",
    }
    built = build(spec_task(tmp_path, files))
    workspace = built.workspace
    assert (workspace / "CHANGELOG.md").read_text() == "## 1.1\n\n- Faster wrap.\n"
    stub = (workspace / "textkit" / "__init__.pyi").read_text()
    assert stub == "class Cache:\n    ...\ndef wrap(text: str) -> str: ...\n"
    assert (workspace / "docs" / "usage.md").read_text() == ""
    # package metadata is what the restored code must match: it stays
    entry_points = workspace / "textkit-1.0.dist-info" / "entry_points.txt"
    assert entry_points.read_text() == files["textkit-1.0.dist-info/entry_points.txt"]
    assert (
        leaks.spec_leaks(workspace, leaks.deleted_names(built.reference_patch, workspace), {}) == []
    )
    assert "+- Added `slugify()` and `unique_slug()`." in built.reference_patch  # restored too


def test_a_stub_python_cannot_parse_goes_whole(tmp_path: Path) -> None:
    (tmp_path / "broken.pyi").write_text("def slugify(:\n")
    assert leaks.strip_spec(tmp_path, ["slugify"], {}) == ["broken.pyi"]
    assert (tmp_path / "broken.pyi").read_text() == ""


def test_leak_allow_with_a_reason_lets_a_spec_stay(tmp_path: Path) -> None:
    allow = {"CHANGELOG.md": "history", "textkit/*.pyi": "typing", "docs/*": "the manual"}
    built = build(spec_task(tmp_path, SPEC_FILES, leak_allow=allow))
    assert (built.workspace / "CHANGELOG.md").is_file()


def test_leak_allow_needs_a_reason(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1 character"):
        spec_task(tmp_path, {}, leak_allow={"CHANGELOG.md": ""})


def test_only_names_gone_from_the_workspace_and_named_as_code_count(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text("def kept_name():\n    pass\n")
    patch = "+def kept_name():\n+def mean(values):\n+class Deleted:\n+    def __init__(self):\n"
    names = leaks.deleted_names(patch, tmp_path)
    assert names == ["Deleted", "mean"]
    (tmp_path / "README.md").write_text("The mean of a few Deleted things, in prose.\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "expected.txt").write_text("mean(x) Deleted(y)\n")  # a fixture
    assert leaks.spec_leaks(tmp_path, names, {}) == []
    (tmp_path / "README.md").write_text("Call `mean(values)`.\n")
    (tmp_path / "pkg" / "core.pyi").write_text("class Deleted: ...\n")
    found = {leak.where: leak.why for leak in leaks.spec_leaks(tmp_path, names, {})}
    assert set(found) == {"workspace/README.md", "workspace/pkg/core.pyi"}
    assert "docs page" in found["workspace/README.md"] and "stub" in found["workspace/pkg/core.pyi"]


@pytest.fixture
def own_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A system tree of this test's own (so planting a file in it touches no other test)."""
    monkeypatch.setenv("CURSORBENCH_VIEW_ROOT", str(tmp_path / "views"))
    view.system_tree.cache_clear()
    yield view.system_tree()
    view.system_tree.cache_clear()


def test_the_scan_walks_the_system_tree_a_sandbox_shows(tmp_path: Path, own_view: Path) -> None:
    built = build(load_task(SLUGIFY), scan=False)
    hidden = scan_hidden_paths(built.task)
    assert own_view in leaks.environment_roots(hidden)
    scan = (built.workspace, built.reference_patch, built.hidden, hidden)
    assert leaks.scan(*scan, cache=tmp_path / "cache") == []
    vendored = own_view / "usr" / "lib" / "x86_64-linux-gnu" / "vendored" / "slug.py"
    vendored.parent.mkdir(parents=True)
    vendored.write_text((bundled_suite() / "repos" / "textkit" / "textkit" / "slug.py").read_text())
    found = leaks.scan(*scan, cache=tmp_path / "cache")  # a changed view is scanned again
    assert [leak.where for leak in found] == ["/usr/lib/x86_64-linux-gnu/vendored/slug.py"]


def test_the_scan_leaves_out_what_the_view_leaves_out() -> None:
    roots = leaks.environment_roots([])
    for left_out in view.python_left_out():
        assert not any(left_out == root or root in left_out.parents for root in roots)
        assert not any(left_out in root.parents for root in roots)
    assert not any(str(root).startswith(("/usr/lib/python3", "/usr/local")) for root in roots)


def test_a_root_linked_into_a_python_folder_is_not_grepped_again(tmp_path: Path) -> None:
    """`.venv/lib64` -> `lib`: grep would follow the link into the host's whole `lib`
    (left-out distributions too); a sandbox shows there only what the other roots hold."""
    python, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    (python / "lib").mkdir(parents=True)
    elsewhere.mkdir()
    (python / "lib64").symlink_to("lib")
    (python / "outside").symlink_to(elsewhere)
    assert leaks._link_into(python / "lib64", [python])
    assert not leaks._link_into(python / "outside", [python])  # still grepped, through it
    assert not leaks._link_into(python / "lib", [python])  # not a link
    shown = view.python_roots()
    assert not any(leaks._link_into(root, shown) for root in leaks.environment_roots([]))
    assert set(leaks.environment_roots([])) >= {
        root for root in view.scan_roots() if not root.is_symlink()
    }


def test_the_fingerprint_reads_through_a_root_that_is_a_link(tmp_path: Path) -> None:
    """grep reads a root that is a link through it, so a change behind the link must make
    the cached scan stale."""
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    before = leaks.environment_fingerprint([tmp_path / "link"])
    (tmp_path / "target" / "answer.py").write_text("x = 1\n")
    assert leaks.environment_fingerprint([tmp_path / "link"]) != before


def test_a_file_gone_while_grep_walked_does_not_fail_the_scan(tmp_path: Path) -> None:
    line = "x = 'a distinctive line of the answer, long enough'"
    (tmp_path / "copy.py").write_text(f"{line}\n{line}2\n{line}3\n")
    (tmp_path / "gone.py").symlink_to(tmp_path / "removed.py")  # grep: no such file
    patterns = [line, f"{line}2", f"{line}3"]
    found = leaks._grep_leaks(patterns, [tmp_path])
    assert [leak.where for leak in found] == [str(tmp_path / "copy.py")]
    # an error about a file that is there is not explained away
    there = f"grep: {tmp_path / 'copy.py'}: No such file or directory\n".encode()
    assert not leaks.vanished_only(there)
    assert not leaks.vanished_only(b"grep: memory exhausted\n")
    assert not leaks.vanished_only(b"")
