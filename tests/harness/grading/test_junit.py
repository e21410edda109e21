"""JUnit reports: mapping pytest node ids to (classname, name), reading outcomes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.grading.junit import junit_key, outcomes_for, parse_junit
from harness.results import TestOutcome as Outcome

SAMPLE = """\
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown exploded")


def test_pass():
    pass


def test_fail():
    assert 1 == 2


def test_error(broken):
    pass


def test_skip():
    pytest.skip("not today")


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.parametrize("value", [1, "two", "p/q"])
def test_param(value):
    assert value != "two"


def test_fail_then_teardown_error(bad_teardown):
    assert False


def test_pass_then_teardown_error(bad_teardown):
    pass


class TestGroup:
    def test_method(self):
        pass

    class TestInner:
        def test_deep(self):
            assert False
"""


@pytest.mark.parametrize(
    ("node_id", "key"),
    [
        ("tests/test_x.py::test_plain", ("tests.test_x", "test_plain")),
        ("test_top.py::test_plain", ("test_top", "test_plain")),
        ("tests/unit/test_x.py::TestY::test_z", ("tests.unit.test_x.TestY", "test_z")),
        ("tests/test_x.py::TestY::TestZ::test_w", ("tests.test_x.TestY.TestZ", "test_w")),
        ("tests/test_x.py::test_p[1-a]", ("tests.test_x", "test_p[1-a]")),
        ("tests/test_x.py::test_p[p/q.py]", ("tests.test_x", "test_p[p/q.py]")),
        ("tests/test_x.py::TestY::test_p[x]", ("tests.test_x.TestY", "test_p[x]")),
        ("tests/test_x.py", ("tests.test_x", "")),
    ],
)
def test_junit_key(node_id: str, key: tuple[str, str]) -> None:
    assert junit_key(node_id) == key


def test_junit_key_parameter_containing_double_colon() -> None:
    assert junit_key("tests/test_x.py::test_p[a::b]") == ("tests.test_x", "test_p[a::b]")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JUnit report written by a real pytest run over SAMPLE (as grading runs it)."""
    root = tmp_path_factory.mktemp("junit")
    (root / "tests").mkdir()
    (root / "tests" / "test_sample.py").write_text(SAMPLE)
    junit = root / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", f"--junitxml={junit}", f"--rootdir={root}",
         "-o", "junit_family=xunit1", "-o", "addopts=", "-p", "no:cacheprovider", "-q"],
        cwd=root, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    return junit


NODE_IDS = {
    "tests/test_sample.py::test_pass": Outcome.PASSED,
    "tests/test_sample.py::test_fail": Outcome.FAILED,
    "tests/test_sample.py::test_error": Outcome.ERROR,
    "tests/test_sample.py::test_skip": Outcome.SKIPPED,
    "tests/test_sample.py::test_xfail": Outcome.SKIPPED,
    "tests/test_sample.py::test_param[1]": Outcome.PASSED,
    "tests/test_sample.py::test_param[two]": Outcome.FAILED,
    "tests/test_sample.py::test_param[p/q]": Outcome.PASSED,
    "tests/test_sample.py::test_fail_then_teardown_error": Outcome.ERROR,
    "tests/test_sample.py::test_pass_then_teardown_error": Outcome.ERROR,
    "tests/test_sample.py::TestGroup::test_method": Outcome.PASSED,
    "tests/test_sample.py::TestGroup::TestInner::test_deep": Outcome.FAILED,
}


def test_parse_junit_on_a_real_report(report: Path) -> None:
    parsed = parse_junit(report)
    assert parsed == {junit_key(node_id): outcome for node_id, outcome in NODE_IDS.items()}


def test_outcomes_for_node_ids(report: Path) -> None:
    wanted = [*NODE_IDS, "tests/test_sample.py::test_never_written", "tests/test_gone.py::test_x"]
    outcomes = outcomes_for(wanted, parse_junit(report))
    assert outcomes == {
        **NODE_IDS,
        "tests/test_sample.py::test_never_written": Outcome.MISSING,
        "tests/test_gone.py::test_x": Outcome.MISSING,
    }


def test_missing_report_is_empty(tmp_path: Path) -> None:
    assert parse_junit(tmp_path / "absent.xml") == {}
    assert outcomes_for(["t.py::test_a"], parse_junit(tmp_path / "absent.xml")) == {
        "t.py::test_a": Outcome.MISSING
    }


@pytest.mark.parametrize(
    "content",
    [b"", b"not xml at all", b"<testsuite><testcase classname='a' name='b'>", b"\xff\xfe\x00"],
)
def test_garbled_report_is_empty(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(content)
    assert parse_junit(path) == {}


def test_report_that_is_a_folder_is_empty(tmp_path: Path) -> None:
    assert parse_junit(tmp_path) == {}


def test_worst_outcome_wins_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        "<testsuites><testsuite>"
        '<testcase classname="m" name="a"><error/></testcase>'
        '<testcase classname="m" name="a"/>'
        '<testcase classname="m" name="b"><skipped/></testcase>'
        '<testcase classname="m" name="b"><failure/></testcase>'
        '<testcase classname="m" name="c"/>'
        "</testsuite></testsuites>"
    )
    assert parse_junit(path) == {
        ("m", "a"): Outcome.ERROR,
        ("m", "b"): Outcome.FAILED,
        ("m", "c"): Outcome.PASSED,
    }
