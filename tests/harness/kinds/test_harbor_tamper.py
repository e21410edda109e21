"""Red team of the `harbor` kind's verdict: agents' code that forces it, graded as the run
grades it (`grade_harbor`, on the default backend: the verifier's runner and the canary
run work alike on each). With a canary run none resolves; without one, a forged reward
file still resolves, and the record says the verdict is not tamper-evident."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.kinds.harbor_kind import (
    CANARY_TEST,
    REWARD_TEST,
    HarborVerification,
    canary_files,
    grade_harbor,
)
from harness.kinds.testrun import GradeReport
from harness.results import Failure, TestOutcome
from harness.sandbox import SandboxBackend, open_backend
from harness.sandbox.baseline import Baseline
from harness.spec import Limits, PreparedTask
from tests.harbor_tamper import ATTACKS, BROKEN, SOLVED, TEST_SH, TESTS

Graded = tuple[PreparedTask, SandboxBackend, Path]

pytestmark = pytest.mark.slow  # each grades twice in fresh sandboxes (verifier, canary run)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graded]:
    root = tmp_path_factory.mktemp("harbor-tamper")
    (root / "workspace").mkdir()
    (root / "workspace" / "calc.py").write_text(BROKEN)
    (root / "hidden").mkdir()
    (root / "hidden" / "test.sh").write_text(TEST_SH.format(workdir="/workspace"))
    (root / "hidden" / "test_calc.py").write_text(TESTS)
    task = PreparedTask(
        id="harbor-tamper", prompt="Write add(a, b) in calc.py.", workspace=root / "workspace",
        hidden_dir=root / "hidden", verification=HarborVerification(canary=True),
        limits=Limits(test_timeout_s=60),
    )  # fmt: skip
    yield task, open_backend("auto"), root
    shutil.rmtree(root, ignore_errors=True)


def grade(graded: Graded, calc: str | None, canary: bool = True) -> GradeReport:
    task, backend, root = graded
    check = HarborVerification(canary=canary)
    scratch = root / f"scratch-{random.randrange(1 << 30):x}"
    tree = scratch / "tree"
    shutil.copytree(task.workspace, tree)
    baseline = Baseline(scratch / "git", tree)
    baseline.snapshot()
    if calc is not None:
        (tree / "calc.py").write_text(calc)
    patch = baseline.diff()
    return grade_harbor(task, check, patch, backend, scratch / "grade", random.Random(3))


def test_the_canary_run_has_the_same_tests_with_other_expected_values(
    graded: Graded,
) -> None:
    task, _, _ = graded
    planted = canary_files(task.hidden_dir, task.id)
    assert list(planted) == ["test_calc.py"] and planted == canary_files(task.hidden_dir, task.id)
    names = [line for line in TESTS.splitlines() if line.startswith("def ")]
    assert [
        line for line in planted["test_calc.py"].splitlines() if line.startswith("def ")
    ] == names
    assert planted["test_calc.py"] != TESTS


def test_the_solution_resolves_and_fails_the_canary_run_and_nothing_fails(
    graded: Graded,
) -> None:
    solved = grade(graded, SOLVED)
    assert solved.resolved, (solved.failure, solved.error, solved.output[-2000:])
    assert solved.tests == {REWARD_TEST: TestOutcome.PASSED, CANARY_TEST: TestOutcome.PASSED}
    nothing = grade(graded, None)
    assert (nothing.resolved, nothing.failure) == (False, Failure.TESTS_FAILED)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_code_that_forces_the_verdict_is_never_resolved(graded: Graded, attack: str) -> None:
    report = grade(graded, ATTACKS[attack])
    assert not report.resolved, report.output[-2000:]
    if attack == "background-writer":  # ended when it left test.sh's tree: it never wrote
        assert report.failure is Failure.TESTS_FAILED, (report.error, report.output[-2000:])
        assert report.scores["harbor_reward"].value == 0.0
    else:  # the canary run, which any honest tree fails, reached the reward too
        assert report.failure is Failure.GRADER_TAMPERING, (report.error, report.output[-2000:])
        assert report.tests[CANARY_TEST] is TestOutcome.FAILED and report.canaries_passed


def test_without_a_canary_run_a_written_reward_stands_and_the_record_says_so(
    graded: Graded,
) -> None:
    """What a canary run is for: without one the code under test forges the reward file."""
    report = grade(graded, ATTACKS["reward-file"], canary=False)
    assert report.resolved
    assert report.tests[CANARY_TEST] is TestOutcome.SKIPPED
    assert "the verdict is not tamper-evident" in report.output
    writer = grade(graded, ATTACKS["background-writer"], canary=False)
    assert (writer.resolved, writer.failure) == (False, Failure.TESTS_FAILED)
