"""`judge`: the verdict from a finished test run, a pure function of the JUnit report."""

from __future__ import annotations

import pytest

from harness.grading.canaries import Canaries
from harness.grading.grade import judge
from harness.results import Failure
from harness.results import TestOutcome as Outcome
from harness.sandbox.process import Completed
from harness.spec import Verification

CHECK = Verification(
    test_args=["tests"],
    fail_to_pass=["tests/test_new.py::test_feature"],
    pass_to_pass=["tests/test_old.py::TestOld::test_kept"],
    hidden_tests=["tests/test_new.py"],
)
CANARIES = Canaries(
    files={"tests/test_new.py": "..."},
    names={"tests/test_new.py": ["test_round_keys_a1b2c3", "test_edge_value_d4e5f6"]},
)


def case(classname: str, name: str, outcome: str = "passed") -> str:
    inner = {"passed": "", "failed": "<failure message='x'/>", "skipped": "<skipped/>"}[outcome]
    return f'<testcase classname="{classname}" name="{name}">{inner}</testcase>'


def report(*cases: str) -> bytes:
    return f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>".encode()


HONEST = [
    case("tests.test_new", "test_feature"),
    case("tests.test_old.TestOld", "test_kept"),
    case("tests.test_new", "test_round_keys_a1b2c3", "failed"),
    case("tests.test_new", "test_edge_value_d4e5f6", "failed"),
]


def finished(data: bytes, timed_out: bool = False) -> Completed:
    return Completed(exit_code=None if timed_out else 1, output="", duration_s=1.0,
                     timed_out=timed_out, report=data)  # fmt: skip


def test_every_test_passing_and_every_canary_failing_resolves() -> None:
    verdict = judge(CHECK, finished(report(*HONEST)), CANARIES, 60)
    assert verdict.resolved and verdict.failure is None
    assert verdict.tests == {
        "tests/test_new.py::test_feature": Outcome.PASSED,
        "tests/test_old.py::TestOld::test_kept": Outcome.PASSED,
    }


def test_a_failing_test_is_tests_failed() -> None:
    cases = [case("tests.test_new", "test_feature", "failed"), *HONEST[1:]]
    verdict = judge(CHECK, finished(report(*cases)), CANARIES, 60)
    assert not verdict.resolved and verdict.failure is Failure.TESTS_FAILED


@pytest.mark.parametrize("name", ["test_round_keys_a1b2c3", "test_edge_value_d4e5f6[1-2]"])
def test_a_passing_canary_is_tampering_even_when_everything_else_passes(name: str) -> None:
    others = [c for c in HONEST[2:] if name.split("[")[0] not in c]
    cases = [*HONEST[:2], case("tests.test_new", name), *others]
    verdict = judge(CHECK, finished(report(*cases)), CANARIES, 60)
    assert not verdict.resolved and verdict.failure is Failure.GRADER_TAMPERING
    assert verdict.canaries_passed == [f"tests/test_new.py::{name} passed"]


def test_a_canary_taken_out_of_the_report_is_tampering() -> None:
    verdict = judge(CHECK, finished(report(*HONEST[:3])), CANARIES, 60)
    assert verdict.failure is Failure.GRADER_TAMPERING
    assert verdict.canaries_passed == ["tests/test_new.py::test_edge_value_d4e5f6 missing"]


def test_canaries_not_run_when_only_some_tests_were_selected_are_no_tampering() -> None:
    check = CHECK.model_copy(update={"test_args": ["tests/test_new.py::test_feature"]})
    verdict = judge(check, finished(report(*HONEST[:2])), CANARIES, 60)
    assert verdict.resolved


def test_a_module_that_never_ran_is_failed_not_tampering() -> None:
    cases = [HONEST[1]]  # tests/test_new.py did not import: nothing of it in the report
    verdict = judge(CHECK, finished(report(*cases)), CANARIES, 60)
    assert verdict.failure is Failure.TESTS_FAILED
    assert verdict.tests["tests/test_new.py::test_feature"] is Outcome.MISSING


def test_a_timeout_is_test_timeout() -> None:
    verdict = judge(CHECK, finished(report(*HONEST), timed_out=True), CANARIES, 60)
    assert verdict.failure is Failure.TEST_TIMEOUT and not verdict.resolved


def test_a_garbled_or_doubled_report_counts_no_test() -> None:
    verdict = judge(CHECK, finished(report(*HONEST) + report(*HONEST)), CANARIES, 60)
    assert verdict.failure is Failure.TESTS_FAILED
    assert "not one JUnit document" in (verdict.error or "")
    assert set(verdict.tests.values()) == {Outcome.MISSING}
