"""Package sources and the builder over them: hash check, extraction, stripping, pytest
config, leaks caught (in a cache, in site-packages, in git history)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from cursorbench.tasks.sources.base import SourceError
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.tasks.sources.sdist import fetch_sdist, prepared_tree
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import BuildError, build
from cursorbench.validation import leaks
from harness.home import build_cache
from tests.cursorbench.sdists import EXTRA, make_sdist, place_sdist, tiny_task


def test_a_package_task_builds_from_its_sdist(cursorbench_home: Path, tmp_path: Path) -> None:
    built = build(tiny_task(cursorbench_home, tmp_path / "tasks"))
    workspace = built.workspace
    assert not (workspace / "src/tinypkg/extra.py").exists()
    assert not (workspace / "tests/test_extra.py").exists()
    assert (built.hidden / "tests/test_extra.py").is_file()
    assert (built.original / "src/tinypkg/extra.py").read_text() == EXTRA
    # stripped: egg-info, bytecode; no repository in the workspace
    names = {p.name for p in workspace.rglob("*")}
    assert not names & {"tinypkg.egg-info", "__pycache__", ".git"}
    # one pytest.ini: the package's options, its addopts dropped, the import path added
    ini = (workspace / "pytest.ini").read_text()
    assert "pythonpath = src" in ini and "testpaths = tests" in ini and "addopts" not in ini
    assert "+def count_distinctive_vowels_in_text(text):" in built.reference_patch


def test_the_sdist_hash_is_checked_even_when_cached(cursorbench_home: Path) -> None:
    sha = place_sdist(cursorbench_home, make_sdist())
    cached = next((cursorbench_home / "sdists" / sha).iterdir())
    cached.write_bytes(cached.read_bytes() + b"tampered")
    source = PackageSource(name="tinypkg", version="1.0", sha256=sha)
    with pytest.raises(SourceError, match=r"cannot download tinypkg==1\.0"):
        fetch_sdist(source, cursorbench_home)  # not trusted, so fetched again: no such package


def test_an_unreachable_index_is_one_clear_line(
    cursorbench_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    source = PackageSource(name="boltons", version="25.0.0", sha256="0" * 64)
    with pytest.raises(SourceError) as error:
        prepared_tree(source, cursorbench_home)
    assert str(error.value) == (
        "cannot download boltons==25.0.0: the package index cannot be reached"
    )


def test_a_wrong_hash_from_the_index_is_refused(cursorbench_home: Path) -> None:
    # The package exists on the index (the suite uses it) but the task pins another hash.
    source = PackageSource(name="boltons", version="25.0.0", sha256="1" * 64)
    with pytest.raises(SourceError, match="does not match the task's 1111"):
        fetch_sdist(source, cursorbench_home)


PATTERNS = [
    "def count_distinctive_vowels_in_text(text):",
    'return sum(1 for character in text.lower() if character in "aeiou")',
    "def longest_word_of_the_sentence_given(text):",
    'return " ".join(word[::-1] for word in text.split())',
]


def test_a_leak_planted_in_a_cache_is_caught(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / ".mypy_cache/3.11").mkdir(parents=True)
    (workspace / ".mypy_cache/3.11/extra.data.json").write_text(EXTRA)
    found = leaks.structure_leaks(workspace) + leaks.workspace_leaks(workspace, PATTERNS)
    assert [leak.where for leak in found] == [
        "workspace/.mypy_cache",
        "workspace/.mypy_cache/3.11/extra.data.json",
    ]


def test_a_leak_planted_in_git_history_is_caught(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "extra.py").write_text(EXTRA)
    git = ["git", "-c", "user.name=x", "-c", "user.email=x@x", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "feature"], check=True)
    (workspace / "extra.py").unlink()  # gone from the tree, still in history
    found = leaks.workspace_leaks(workspace, PATTERNS)
    assert any(leak.where.endswith("(git object)") for leak in found)
    assert "workspace/.git" in [leak.where for leak in leaks.structure_leaks(workspace)]


def _private_cache(task: Task, folder: Path) -> Path:
    """A build cache of the test's own holding the task's sdist (a cached build would not be
    scanned again)."""
    assert isinstance(task.source, PackageSource)
    sdists = Path("sdists") / task.source.sha256
    shutil.copytree(build_cache() / sdists, folder / sdists)
    return folder


@pytest.mark.slow  # two scans of the whole environment (~3 s each on a quiet machine)
def test_a_leak_planted_in_site_packages_fails_the_build_after_a_clean_scan(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    task = tiny_task(cursorbench_home, tmp_path / "tasks")
    build(task, _private_cache(task, tmp_path / "clean"))  # its clean scan is cached
    site = Path(sysconfig.get_paths()["purelib"])  # the venv's: the sandbox shows it
    planted = site / f"cursorbench_planted_{uuid.uuid4().hex[:8]}.py"
    planted.write_text(EXTRA)
    try:
        with pytest.raises(BuildError, match=f"leak: {planted}: holds [0-9]+ distinctive lines"):
            build(task, _private_cache(task, tmp_path / "planted"))
    finally:
        planted.unlink()


def _scan_counting_greps(
    monkeypatch: pytest.MonkeyPatch, roots: list[Path], cache: Path
) -> tuple[list[str], int]:
    greps: list[int] = []
    real = leaks._grep_leaks

    def counted(patterns: Sequence[str], scanned: Sequence[Path]) -> list[leaks.Leak]:
        greps.append(1)
        return real(patterns, scanned)

    monkeypatch.setattr(leaks, "_grep_leaks", counted)
    found = leaks.environment_leaks(PATTERNS, roots, cache)
    return [leak.where for leak in found], len(greps)


def test_the_environment_scan_is_cached_until_the_environment_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environment, cache = tmp_path / "env", tmp_path / "cache"
    (environment / "pkg").mkdir(parents=True)
    module = environment / "pkg" / "module.py"
    module.write_text("x = 1\n" * 200)
    assert _scan_counting_greps(monkeypatch, [environment], cache) == ([], 1)
    assert _scan_counting_greps(monkeypatch, [environment], cache) == ([], 0)  # cached
    # a new file holding the answer lines, in a folder the scan covers: found again
    planted = environment / "pkg" / "planted.py"
    planted.write_text(EXTRA)
    assert _scan_counting_greps(monkeypatch, [environment], cache) == ([str(planted)], 1)
    planted.unlink()
    assert _scan_counting_greps(monkeypatch, [environment], cache) == ([], 1)
    # rewritten in place, same size and mtime kept: the inode's ctime still changes
    stat = module.stat()
    answer = "\n".join(PATTERNS).encode()
    module.write_bytes(answer + b"\n" * (stat.st_size - len(answer)))
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert module.stat().st_size == stat.st_size
    assert _scan_counting_greps(monkeypatch, [environment], cache) == ([str(module)], 1)
    assert _scan_counting_greps(monkeypatch, [environment], cache) == ([str(module)], 0)


def test_distinctive_lines_leave_out_what_the_workspace_still_has(tmp_path: Path) -> None:
    (tmp_path / "kept.py").write_text("    return some_value_that_stays_in_the_workspace\n")
    answer = ["return some_value_that_stays_in_the_workspace", "x = 1", *PATTERNS]
    assert leaks.distinctive_lines(answer, tmp_path) == sorted(PATTERNS)
