"""Documentation tasks: each named function needs a docstring example that, run, calls it
and shows its result: the example fails when the function is swapped for a stand-in."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grading.grade import GradeReport
from harness.kinds.docs import (
    NOT_SHOWN,
    PROBE,
    Example,
    ProbeReport,
    example_problem,
    judge_docs,
    read_probe,
)
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

    >>> Bag().add(1).items
    [1]
    """

    def __init__(self):
        self.items = []

    def add(self, item):
        """Add one: shown by its effect.

        >>> bag = Bag()
        >>> _ = bag.add(3)
        >>> bag.items
        [3]
        """
        self.items.append(item)
        return self

    def size(self):
        """Through super(): a method with a `__class__` cell.

        >>> class Sub(Bag):
        ...     def size(self):
        ...         return super().size() + 1
        >>> Sub().add(2).size()
        2
        """
        return len(self.items)


def swallowed(src):
    """Calls it, shows nothing: the output is the same whatever it does.

    >>> try:
    ...     _ = swallowed(None)
    ... except Exception:
    ...     pass
    """
    return len(src)


def constant(src):
    """Calls it, then prints a constant.

    >>> _ = constant([1])
    >>> print(3)
    3
    """
    return len(src)


def elided(src):
    """Calls it; its output elides the result.

    >>> print("got", elided([1]))  # doctest: +ELLIPSIS
    got ...
    """
    return len(src)


def introspected(src):
    """Calls it, then shows its code, not its result.

    >>> import inspect
    >>> _ = introspected([1])
    >>> str(inspect.signature(introspected)), introspected.__name__
    ('(src)', 'introspected')
    >>> _ = introspected([1]); introspected.__code__.co_argcount
    1
    """
    return len(src)


def py2(src):
    """An expected output as Python 2 wrote it (pytest's ALLOW_UNICODE passes it).

    >>> py2("a")
    u'a!'
    """
    return src + "!"


def quiet(src):
    """Calls it; it returns None and the example shows nothing else.

    >>> quiet([1])
    """
    src.append(1)


def raises(src):
    """Its error shown.

    >>> raises(-1)
    Traceback (most recent call last):
    ...
    ValueError: negative
    """
    if src < 0:
        raise ValueError("negative")
    return src


def stubbed(src):
    """A stub: its body returns None, and so does the example show.

    >>> stubbed(1)
    """
    return None
'''
NAMES = ["chunked", "windowed", "never", "bare", "double", "Bag", "Bag.add", "Bag.size", "gone"]
HOLLOW = ["swallowed", "constant", "elided", "introspected"]


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
        "Bag.size": None,
        "gone": "not defined any more",
    }


def test_an_example_that_shows_nothing_of_the_function_does_not_count(tmp_path: Path) -> None:
    shown = ["raises", "quiet", "stubbed", "py2"]
    report = ProbeReport.model_validate(probed(tmp_path, MODULE, [*HOLLOW, *shown]))
    for name in HOLLOW:  # each calls it and passes, yet its output is the same under stand-ins
        assert report.names[name].calls > 0, name
        assert example_problem(report, name) == NOT_SHOWN, name
    # an error is what it does; None shown as no output is its result (a stand-in's object
    # would be printed): shown. A stub's None is caught by the task's tests, not here.
    assert {name: example_problem(report, name) for name in shown} == dict.fromkeys(shown)


def test_an_example_that_loops_under_a_stand_in_is_stopped(tmp_path: Path) -> None:
    looping = (
        MODULE
        + '''

def spin(x):
    """Loops unless it returns 1.

    >>> while spin(1) != 1: pass
    """
    return x
'''
    )
    report = ProbeReport.model_validate(probed(tmp_path, looping, ["spin"]))
    assert example_problem(report, "spin") is None  # its loop ends only on the right result


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
    names = {"f": Example(calls=1, shown=1)}
    good = ProbeReport(nonce="n", names=names).model_dump_json().encode()
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
        nonce="n",
        names={
            "chunked": Example(calls=2, shown=1),
            "windowed": Example(calls=0),
            "shy": Example(calls=3, shown=0),
        },
    )
    report = judge_docs(check, passing, probe)
    assert not report.resolved and report.failure is Failure.TESTS_FAILED
    assert report.tests["docs:chunked"] is TestOutcome.PASSED
    assert report.tests["docs:windowed"] is TestOutcome.FAILED
    assert "never calls it" in (report.error or "")
    shy = judge_docs(check.model_copy(update={"documented": ["chunked", "shy"]}), passing, probe)
    assert not shy.resolved and shy.tests["docs:shy"] is TestOutcome.FAILED
    assert judge_docs(check.model_copy(update={"documented": ["chunked"]}), passing, probe).resolved
    assert not judge_docs(check, passing, None).resolved


SWALLOWS = "    >>> try:\n    ...     _ = sub(3, 2)\n    ... except Exception:\n    ...     pass\n"
STUB_AGENTS = {  # each passes its doctest under pytest; none shows what `sub` does
    "swallows": SWALLOWS,
    "prints a constant": "    >>> _ = sub(3, 2)\n    >>> print(1)\n    1\n",
    "elides": '    >>> print("got", sub(3, 2))  # doctest: +ELLIPSIS\n    got ...\n',
}
STUB_BODIES = {  # the example shows the stub's result; the hidden tests fail it
    "return None": ("    >>> sub(3, 2)\n", "    return None\n"),
    "raise": (
        "    >>> sub(3, 2)\n    Traceback (most recent call last):\n    NotImplementedError\n",
        "    raise NotImplementedError\n",
    ),
}


def test_a_do_nothing_and_stub_agents_do_not_resolve_a_docs_task(tmp_path: Path) -> None:
    from harness.kinds.docs import DocsKind
    from harness.sandbox import open_backend
    from tests.harness.kinds.test_kind_contract import _patch, _prepared

    kind, backend = DocsKind(), open_backend("auto")
    example = kind.example()
    task = _prepared("docs", example, tmp_path / "task")
    head = 'def sub(a, b):\n    """Subtract.\n\n'

    def graded(name: str, files: dict[str, str]) -> GradeReport:
        patch = _patch(task.workspace, files, tmp_path / name / "patch") if files else ""
        check = example.verification
        assert isinstance(check, DocsVerification)
        report = kind.grade(task, check, patch, backend, tmp_path / name, random.Random(7))
        assert report is not None
        return report

    assert graded("reference", example.reference).resolved
    assert not graded("nothing", {}).resolved
    for name, shown in STUB_AGENTS.items():
        report = graded(name, {"calc.py": f'{head}{shown}    """\n    return a - b\n'})
        assert not report.resolved, name
        assert report.tests["calc.py::calc.sub"] is TestOutcome.PASSED, name  # pytest's: fine
        assert report.tests["docs:sub"] is TestOutcome.FAILED, name
    for name, (shown, body) in STUB_BODIES.items():
        report = graded(name, {"calc.py": f'{head}{shown}    """\n{body}'})
        assert not report.resolved, name
        assert report.tests["tests/test_calc.py::test_sub"] is TestOutcome.FAILED, name
