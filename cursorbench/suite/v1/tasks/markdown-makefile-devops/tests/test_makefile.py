"""The project's makefile works when run (a devops task's hidden tests). Each test runs
`make` in a copy of the tree (the workspace is read-only during grading)."""

import shutil
import subprocess
from pathlib import Path

import pytest

import markdown

ROOT = Path(markdown.__file__).parent.parent
HIDDEN = ("test_makefile.py",)
TARGETS = ("help", "install", "deploy", "build", "docs", "test", "clean")
FAILING_TEST = '''import unittest


class PlantedFailure(unittest.TestCase):
    def test_planted_failure(self):
        self.assertEqual(1, 2)
'''


@pytest.fixture()
def tree(tmp_path):
    copy = tmp_path / "tree"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", *HIDDEN))
    return copy


def make(tree, *args, timeout=600):
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=tree, capture_output=True, text=True, timeout=timeout,
    )


def test_plain_make_lists_the_targets(tree):
    done = make(tree)
    assert done.returncode == 0, done.stderr
    for target in TARGETS[1:]:
        assert target in done.stdout


@pytest.mark.parametrize("target", ["install", "deploy", "build", "docs"])
def test_release_targets_are_defined(tree, target):
    done = make(tree, "-n", target)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()  # a command would run
    assert "Nothing to be done" not in done.stdout + done.stderr


def test_make_test_runs_the_suite_under_coverage(tree):
    done = make(tree, "test")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "markdown/core.py" in output
    assert "TOTAL" in output


def test_make_test_fails_when_a_test_fails(tree):
    (tree / "tests" / "test_zz_planted.py").write_text(FAILING_TEST)
    done = make(tree, "test")
    assert done.returncode != 0
    assert "test_planted_failure" in done.stdout + done.stderr


def test_make_clean_removes_build_output_only(tree):
    for folder in ("build", "dist", "site", "tmp"):
        (tree / folder).mkdir()
        (tree / folder / "x.txt").write_text("x")
    (tree / "markdown" / "stale.pyc").write_text("x")
    (tree / "markdown" / "extensions" / "stale.pyc").write_text("x")
    done = make(tree, "clean")
    assert done.returncode == 0, done.stderr
    for folder in ("build", "dist", "site", "tmp"):
        assert not (tree / folder).exists(), folder
    assert not (tree / "markdown" / "stale.pyc").exists()
    assert not (tree / "markdown" / "extensions" / "stale.pyc").exists()
    assert (tree / "markdown" / "core.py").is_file()
    assert (tree / "tests" / "test_apis.py").is_file()
