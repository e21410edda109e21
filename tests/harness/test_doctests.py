"""Documentation tasks: each named function needs a docstring example that calls it."""

from __future__ import annotations

from harness.grading import GradeReport
from harness.kinds.docs import example_problem, judge_docs
from harness.results import Failure, TestOutcome
from harness.spec import DocsVerification

MODULE = '''
def chunked(src, size):
    """Split into chunks.

    >>> chunked([1, 2, 3], 2)
    [[1, 2], [3]]
    """


def windowed(src, size):
    """Sliding windows.

    >>> 1 + 1
    2
    """


def bare(src):
    """No example here."""


class Bag:
    def add(self, item):
        """Add one.

        >>> bag = Bag()
        >>> bag.add(3)
        """
'''


def test_an_example_must_call_the_function() -> None:
    assert example_problem(MODULE, "chunked") is None
    assert example_problem(MODULE, "Bag.add") is None
    assert example_problem(MODULE, "windowed") == "no example calls windowed"
    assert example_problem(MODULE, "bare") == "no example in its docstring"
    assert example_problem(MODULE, "gone") == "not defined any more"
    assert example_problem("def f(:\n", "f") == "the module does not parse"


def test_judge_docs_adds_one_outcome_per_name_and_fails_a_passing_run() -> None:
    check = DocsVerification(
        kind="docs", fail_to_pass=["m.py::m.chunked"], documented_file="m.py",
        documented=["chunked", "windowed"],
    )  # fmt: skip
    passing = GradeReport(True, None, {"m.py::m.chunked": TestOutcome.PASSED})
    report = judge_docs(check, passing, MODULE)
    assert not report.resolved and report.failure is Failure.TESTS_FAILED
    assert report.tests["docs:chunked"] is TestOutcome.PASSED
    assert report.tests["docs:windowed"] is TestOutcome.FAILED
    assert judge_docs(
        check.model_copy(update={"documented": ["chunked"]}), passing, MODULE
    ).resolved
    assert not judge_docs(check, passing, None).resolved
