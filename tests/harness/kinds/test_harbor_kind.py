"""The `harbor` kind's pure parts: Harbor's paths rewritten in the verifier's files, the
reward read as Harbor reads it, the logs read back without trusting them, the canary
run's verdict. (Its grading run is in the kind contract suite, its red team in
test_harbor_tamper.py, and tests/cursorbench/harbor/test_harbor_import.py.)"""

from __future__ import annotations

import io
import tarfile

import pytest

from harness.kinds.harbor_kind import (
    CANARY_TEST,
    REWARD_TEST,
    HarborVerification,
    VerifierRun,
    judge,
    judge_reward,
    path_mapping,
    read_logs,
    reward_of,
    rewrite_paths,
)
from harness.results import Failure, TestOutcome
from harness.sandbox.process import Completed

MAPPING = path_mapping("/app", "/workspace", "/tmp/h-1")


def test_harbors_paths_are_rewritten_as_whole_paths_only() -> None:
    text = "cd /app && python /tests/t.py > /logs/verifier/reward.txt; "
    text += 'ls /apps /app2 x/tests "/tests"'
    assert rewrite_paths(text, MAPPING) == (
        "cd /workspace && python /tmp/h-1/tests/t.py > /tmp/h-1/logs/verifier/reward.txt; "
        'ls /apps /app2 x/tests "/tmp/h-1/tests"'
    )
    assert path_mapping("/workspace", "/workspace", "/tmp/h")["/tests"] == "/tmp/h/tests"
    assert "/workspace" not in path_mapping("/workspace", "/workspace", "/tmp/h")


@pytest.mark.parametrize(
    ("logs", "reward", "problem"),
    [
        ({"reward.txt": "1\n"}, 1.0, None),
        ({"reward.txt": "0.25"}, 0.25, None),
        ({"reward.json": '{"reward": 0.5}', "reward.txt": "1"}, 0.5, None),  # JSON first
        ({"reward.json": '{"accuracy": 1}'}, 1.0, None),
        ({"reward.json": '{"a": 1, "b": 0}'}, None, "2 rewards"),
        ({"reward.txt": "nan"}, None, "not a finite number"),
        ({"reward.txt": "yes"}, None, "not a number"),
        ({}, None, "no reward file"),
    ],
)
def test_the_reward_is_read_as_harbor_reads_it(
    logs: dict[str, str], reward: float | None, problem: str | None
) -> None:
    found, why = reward_of(logs)
    assert found == reward
    assert (why is None) if problem is None else (why is not None and problem in why)


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("./escape")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    return buffer.getvalue()


def test_the_logs_come_back_as_regular_files_only_and_junk_is_no_logs() -> None:
    logs = read_logs(_tar({"./reward.txt": b"1\n", "./outcomes.json": b"{}"}))
    assert logs == {"reward.txt": "1\n", "outcomes.json": "{}"}
    assert read_logs(b"not a tar stream") == {} and read_logs(None) == {}


def test_the_verdict_needs_the_reward_and_a_finished_run() -> None:
    check = HarborVerification(min_reward=1.0)
    done = Completed(exit_code=0, output="ran", duration_s=1.0)
    outcomes = '{"tests": {"t.py::a": "passed", "t.py::b": "weird"}}'
    resolved = judge_reward(check, done, {"reward.txt": "1", "outcomes.json": outcomes}, 9)
    assert resolved.resolved and resolved.output == "ran"
    assert resolved.tests == {
        "t.py::a": TestOutcome.PASSED, "t.py::b": TestOutcome.MISSING,
        REWARD_TEST: TestOutcome.PASSED,
    }  # fmt: skip
    partial = judge_reward(check, done, {"reward.txt": "0.5"}, 9)
    assert (partial.resolved, partial.failure, partial.scores["harbor_reward"].value) == (
        False, Failure.TESTS_FAILED, 0.5,
    )  # fmt: skip
    missing = judge_reward(check, done, {}, 9)
    assert not missing.resolved and "no reward file" in (missing.error or "")
    late = Completed(exit_code=-9, output="", duration_s=9.0, timed_out=True)
    assert judge_reward(check, late, {"reward.txt": "1"}, 9).failure is Failure.TEST_TIMEOUT


def test_a_canary_run_that_reaches_the_reward_is_tampering_and_none_is_said() -> None:
    """The canary run's tests fail on any honest tree: its reward reaching `min_reward`
    means the verdict was forced; without a canary run the record says it is not
    tamper-evident."""
    check = HarborVerification(canary=True)
    done = Completed(exit_code=0, output="ran", duration_s=1.0)
    late = Completed(exit_code=-9, output="", duration_s=9.0, timed_out=True)
    real = VerifierRun(done, {"reward.txt": "1"})
    honest = judge(check, real, VerifierRun(done, {"reward.txt": "0"}), 9)
    assert honest.resolved and honest.tests[CANARY_TEST] is TestOutcome.PASSED
    silent = judge(check, real, VerifierRun(done, {}), 9)  # no reward at all: failed too
    assert silent.resolved
    forced = judge(check, real, VerifierRun(done, {"reward.json": '{"reward": 1}'}), 9)
    assert (forced.resolved, forced.failure) == (False, Failure.GRADER_TAMPERING)
    assert forced.tests[CANARY_TEST] is TestOutcome.FAILED and forced.canaries_passed
    assert forced.scores["harbor_reward"].value == 0.0
    hung = judge(check, real, VerifierRun(late, {}), 9)
    assert (hung.resolved, hung.failure) == (False, Failure.TEST_TIMEOUT)
    note = HarborVerification(canary_note="its tests hold no Python test")
    unguarded = judge(note, real, None, 9)
    assert unguarded.resolved and unguarded.tests[CANARY_TEST] is TestOutcome.SKIPPED
    assert unguarded.output.startswith(
        "cursorbench: the verdict is not tamper-evident: its tests hold no Python test"
    )
