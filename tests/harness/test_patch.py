"""The agent's change as text: splitting, quoted paths, protected paths, the link policy."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.patch import (
    PatchFormatError,
    glob_regex,
    grading_change,
    is_protected,
    link_leaves_workspace,
    split_patch,
    unquote,
)
from harness.sandbox.baseline import DIFF_OPTIONS
from harness.spec import DEFAULT_PROTECTED_PATHS

PATTERNS = list(DEFAULT_PROTECTED_PATHS)


def modified(path: str, header_path: str | None = None) -> str:
    """A modified file's section; `header_path`: both names as git quotes them."""
    name = header_path or f"a/{path} b/{path}"
    old, new = name.split(" ") if header_path else (f"a/{path}", f"b/{path}")
    tab = "\t" if " " in path and not header_path else ""  # git ends such a name with a tab
    return (
        f"diff --git {name}\nindex 1111111..2222222 100644\n--- {old}{tab}\n+++ {new}{tab}\n"
        "@@ -1 +1 @@\n-old\n+new\n"
    )


def link(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..3333333\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


def test_split_finds_each_file_with_its_mode() -> None:
    patch = modified("pkg/a.py") + link("pkg/l", "a.py") + modified("with space.py")
    changes = split_patch(patch)
    assert [c.path for c in changes] == ["pkg/a.py", "pkg/l", "with space.py"]
    assert [c.new_mode for c in changes] == ["100644", "120000", "100644"]
    assert changes[1].link_target == "a.py" and changes[0].link_target is None
    assert "".join(c.text for c in changes) == patch


def test_quoted_paths_are_decoded_byte_for_byte() -> None:
    assert unquote('"a/caf\\303\\251 \\"x\\"\\n.py"') == 'a/café "x"\n.py'
    assert unquote('"a/\\377.py"') == "a/\udcff.py"  # not UTF-8: kept as a surrogate escape
    patch = modified("n\\351.py", '"a/n\\351.py" "b/n\\351.py"')
    assert split_patch(patch)[0].path == "n\udce9.py"


@pytest.mark.parametrize("bad", ["garbage\n", "diff --git a/x b/y\n", 'diff --git "a/x\n'])
def test_text_that_is_not_our_patch_is_refused(bad: str) -> None:
    with pytest.raises(PatchFormatError):
        split_patch(bad)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("tests/**", "tests/a/b.py", True),
        ("tests/**", "tests", False),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "a/b/conftest.py", True),
        ("**/conftest.py", "a/conftest.pyc", False),
        ("pytest.ini", "sub/pytest.ini", False),
        ("*.toml", "a/b.toml", False),
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("tests/test_x.py", True),
        ("tests", True),  # a file or link where the tests folder was
        ("pkg/conftest.py", True),
        ("pyproject.toml", True),
        ("spec/test_hidden.py", True),  # a hidden test outside the patterns
        ("spec", True),  # a folder above a hidden test
        ("pkg/core.py", False),
        ("tests_old/test_x.py", False),
        ("pkg/testsuite.py", False),
    ],
)
def test_what_is_protected(path: str, protected: bool) -> None:
    assert is_protected(path, PATTERNS, {"spec/test_hidden.py"}) is protected


@pytest.mark.parametrize(
    ("path", "target", "leaves"),
    [
        ("a.py", "/etc/passwd", True),
        ("a.py", "../outside", True),
        ("pkg/a.py", "../../outside", True),
        ("pkg/a.py", "../b.py", False),
        ("pkg/a.py", "sub/../b.py", False),
        ("a.py", "pkg/../..", True),
    ],
)
def test_links_leaving_the_workspace(path: str, target: str, leaves: bool) -> None:
    assert link_leaves_workspace(path, target) is leaves


def test_grading_keeps_code_and_drops_tests_config_and_escaping_links() -> None:
    patch = (
        modified("pkg/a.py")
        + modified("tests/test_a.py")
        + link("conftest.py", "pkg/evil.py")
        + link("pkg/out", "/etc")
        + link("pkg/in", "a.py")
        + modified("setup.cfg")
    )
    change = grading_change(patch, PATTERNS, set())
    assert [c.path for c in split_patch(change.patch)] == ["pkg/a.py", "pkg/in"]
    assert change.dropped_protected == ["tests/test_a.py", "conftest.py", "setup.cfg"]
    assert change.dropped_links == ["pkg/out"]


def test_an_empty_change_stays_empty() -> None:
    assert grading_change("", PATTERNS, set()).patch == ""


def test_what_the_harness_diff_writes_is_taken(tmp_path: Path) -> None:
    """A real `git diff --binary --no-renames`: a mode change with a binary patch, a link
    turned into a file (a delete and an add), a name with a space (ended by a tab)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "x y.txt").write_text("a\n")
    (tmp_path / "bin").write_bytes(b"\x00\x01")
    (tmp_path / "lnk").symlink_to("x y.txt")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "i"], check=True)
    (tmp_path / "x y.txt").write_text("a\nb\n")
    (tmp_path / "bin").write_bytes(b"\x00\x02")
    (tmp_path / "bin").chmod(0o755)
    (tmp_path / "lnk").unlink()
    (tmp_path / "lnk").write_text("f\n")
    subprocess.run([*git, "add", "-A"], check=True)
    patch = subprocess.run(
        [*git, "diff", "--cached", *DIFF_OPTIONS, "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    changes = split_patch(patch)
    assert [(c.path, c.new_mode, c.deleted) for c in changes] == [
        ("bin", "100755", False), ("lnk", None, True), ("lnk", "100644", False),
        ("x y.txt", "100644", False),
    ]  # fmt: skip


SECTION = "diff --git a/notes.txt b/notes.txt\n"


@pytest.mark.parametrize(
    "header",
    [
        "similarity index 100%\ncopy from notes.txt\ncopy to tests/conftest.py\n",
        "similarity index 90%\nrename from notes.txt\nrename to tests/conftest.py\n",
        "dissimilarity index 10%\nindex 1111111..2222222 100644\n",
        "old mode 100644\nnew mode 120000\n",
        "old mode 100644\nnew mode 100664\n",
        "new file mode 100666\n",
        "index 1111111..2222222 100644\n--- a/notes.txt\n+++ b/tests/conftest.py\n@@ -1 +1 @@\n",
        "index 1111111..2222222 100644\n--- a/tests/conftest.py\n+++ b/notes.txt\n@@ -1 +1 @@\n",
        "new file mode 100644\nsomething git never writes\n",
    ],
    ids=[
        "copy",
        "rename",
        "dissimilarity",
        "to-a-link",
        "mode-664",
        "file-666",
        "plus-other",
        "minus-other",
        "unknown",
    ],
)
def test_a_header_the_harness_diff_never_writes_is_refused(header: str) -> None:
    with pytest.raises(PatchFormatError, match=r"never writes|names another file"):
        split_patch(SECTION + header + "-a\n+b\n")


def test_grading_refuses_such_a_change_as_patch_rejected(tmp_path: Path) -> None:
    """Before any sandbox opens: grading's backend here cannot open one."""
    from cursorbench.tasks.loader import bundled_suite, load_task
    from cursorbench.tasks.workspace import build
    from harness.grading.grade import grade
    from harness.results import Failure

    task = load_task(bundled_suite() / "tasks" / "textkit-slugify.yaml")
    prepared = build(task, tmp_path / "cache", scan=False).prepared()

    class NoSandboxes:
        name, confined = "none", True

        def open(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("a refused change opens no sandbox")

    copy = SECTION.replace("notes.txt", "README.md") + (
        "similarity index 100%\ncopy from README.md\ncopy to tests/conftest.py\n"
    )
    report = grade(prepared, copy, NoSandboxes(), tmp_path / "grade")  # type: ignore[arg-type]
    assert report.failure is Failure.PATCH_REJECTED and "never writes" in (report.error or "")
