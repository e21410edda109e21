"""Documentation tasks: each named function needs a docstring example that, run, calls it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grading.grade import GradeReport
from harness.kinds.docs import PROBE, Example, ProbeReport, example_problem, judge_docs, read_probe
from harness.results import Failure, TestOutcome
from harness.spec import DocsVerification

MODULE = '''
import functools


def chunked(src, size):
    """Split into chunks.

    >>> chunked([1, 2, 3], 2)
    [[1, 2], [3]]
    """
    return [src[i : i + size] for i in range(0, len(src), size)]


def windowed(src, size):
    """Sliding windows.

    >>> 1 + 1
    2
    """


def never(src):
    """A call that never runs.

    >>> if False: never(1)
    >>> f = lambda: never(1)
    """


def bare(src):
    """No example here."""


def _logged(function):
    @functools.wraps(function)
    def wrapper(*args):
        return function(*args)

    return wrapper


@_logged
def double(x):
    """Through a decorator and a builtin.

    >>> list(map(double, [1, 2]))
    [2, 4]
    """
    return 2 * x


class Bag:
    """A bag.

    >>> Bag().add(1)
    """

    def add(self, item):
        """Add one.

        >>> bag = Bag()
        >>> bag.add(3)
        """
'''
NAMES = ["chunked", "windowed", "never", "bare", "double", "Bag", "Bag.add", "gone"]


def probed(tmp_path: Path, module: str, names: list[str]) -> dict:
    """The probe run as grading runs it (here unconfined: what it counts is the point)."""
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(module)
    report = tmp_path / "report.json"
    argv = [sys.executable, "-P", "-c", PROBE.read_text(), str(report), str(tmp_path), "pkg/m.py"]
    subprocess.run([*argv, *names], input=b"n0nce\n", check=True, timeout=60, cwd=tmp_path)
    return json.loads(report.read_text())


def test_only_an_example_that_runs_a_call_counts(tmp_path: Path) -> None:
    report = probed(tmp_path, MODULE, NAMES)
    assert report["nonce"] == "n0nce"
    probe = ProbeReport.model_validate(report)
    problems = {name: example_problem(probe, name) for name in NAMES}
    assert problems == {
        "chunked": None,
        "windowed": "running its examples never calls it",
        "never": "running its examples never calls it",
        "bare": "no example in its docstring",
        "double": None,
        "Bag": None,
        "Bag.add": None,
        "gone": "not defined any more",
    }


def test_a_module_that_cannot_be_imported_fails_every_name(tmp_path: Path) -> None:
    deep = "x = " + "+".join(["1"] * 300_000) + "\n"  # RecursionError building its AST
    report = probed(tmp_path, deep + MODULE, ["chunked"])
    assert "the module does not import: RecursionError" in report["names"]["chunked"]["problem"]
    raises = probed(tmp_path, "raise SystemExit(0)\n" + MODULE, ["chunked"])
    assert raises["names"]["chunked"]["problem"] == "the module does not import: SystemExit: 0"


def test_a_module_exiting_early_writes_no_report_and_fails(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):  # grading reads this as no report: every name fails
        probed(tmp_path, "import os\nos._exit(0)\n" + MODULE, ["chunked"])


def test_the_report_must_be_well_formed_and_echo_the_nonce() -> None:
    good = ProbeReport(nonce="n", names={"f": Example(calls=1)}).model_dump_json().encode()
    assert read_probe(good, "n") is not None
    assert read_probe(good, "other") is None  # a forged report without the nonce
    for bad in (
        None,
        b"",
        b"{",
        b'{"nonce": "n", "names": {"f": {"calls": -1}}}',
        b"x" * 2_000_000,
    ):
        assert read_probe(bad, "n") is None


def test_judge_docs_adds_one_outcome_per_name_and_fails_a_passing_run() -> None:
    check = DocsVerification(
        kind="docs", fail_to_pass=["m.py::m.chunked"], documented_file="m.py",
        documented=["chunked", "windowed"],
    )  # fmt: skip
    passing = GradeReport(True, None, {"m.py::m.chunked": TestOutcome.PASSED})
    probe = ProbeReport(
        nonce="n", names={"chunked": Example(calls=2), "windowed": Example(calls=0)}
    )
    report = judge_docs(check, passing, probe)
    assert not report.resolved and report.failure is Failure.TESTS_FAILED
    assert report.tests["docs:chunked"] is TestOutcome.PASSED
    assert report.tests["docs:windowed"] is TestOutcome.FAILED
    assert "never calls it" in (report.error or "")
    assert judge_docs(check.model_copy(update={"documented": ["chunked"]}), passing, probe).resolved
    assert not judge_docs(check, passing, None).resolved
