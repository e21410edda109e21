"""The `both` kind: a test run decides `resolved`; behaviour checks add scores next to it.

The harness makes it from a task file's `behaviour_checks` (`registry.with_behaviour_checks`)
and from the evals' scenarios. Everything but the behaviour checks is the inner
verification's kind's (a pytest or docs verification).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.kinds.base import Files, Frozen, KindExample, KindSpec, ListedCounts, VerificationKind
from harness.kinds.behaviour import CONTRACT_GRADER, BehaviourCheck, BehaviourVerification
from harness.kinds.pytest_kind import PytestKind, Verification

if TYPE_CHECKING:
    from harness.kinds.testrun import GradeReport
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask


class BothVerification(Frozen):
    """pytest decides `resolved`; the behaviour checks add scores next to it."""

    kind: Literal["both"] = "both"
    pytest: Verification
    behaviour: BehaviourVerification

    @property
    def hidden_tests(self) -> list[str]:
        return self.pytest.hidden_tests

    @property
    def protected_paths(self) -> list[str]:
        return self.pytest.protected_paths


class BothKind:
    name = "both"
    model = BothVerification
    in_task_files = False
    takes_behaviour_checks = False
    graded_by_run = True

    def __init__(self, kind_of: Callable[[KindSpec], VerificationKind]) -> None:
        self._kind_of = kind_of  # the registry's dispatch, for the inner verification's kind

    def _inner(self, check: BothVerification) -> VerificationKind:
        return self._kind_of(check.pytest)

    def grade(
        self,
        task: PreparedTask,
        check: BothVerification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        return self._inner(check).grade(task, check.pytest, patch, backend, scratch, rng)

    def behaviour(self, check: BothVerification) -> BehaviourVerification | None:
        return check.behaviour

    def listed_tests(self, check: BothVerification) -> Verification | None:
        return self._inner(check).listed_tests(check.pytest)

    def test_counts(self, check: BothVerification) -> ListedCounts:
        return self._inner(check).test_counts(check.pytest)

    def reference_files(self, check: BothVerification, workspace: Path) -> Files | None:
        return self._inner(check).reference_files(check.pytest, workspace)

    def stub_files(self, check: BothVerification) -> Files | None:
        return self._inner(check).stub_files(check.pytest)

    def solver_test_args(self, check: BothVerification, written: list[str]) -> list[str]:
        return self._inner(check).solver_test_args(check.pytest, written)

    def workspace_problems(self, check: BothVerification, workspace: Path) -> list[str]:
        return self._inner(check).workspace_problems(check.pytest, workspace)

    def reference_problems(self, check: BothVerification, report: GradeReport) -> list[str]:
        return self._inner(check).reference_problems(check.pytest, report)

    def failing_by_design(self, check: BothVerification) -> set[str]:
        return self._inner(check).failing_by_design(check.pytest)

    def needs_coverage(self, check: BothVerification) -> bool:
        return self._inner(check).needs_coverage(check.pytest)

    def example(self) -> KindExample:
        tests = PytestKind().example()
        assert isinstance(tests.verification, Verification)
        wanted = BehaviourCheck(grader=CONTRACT_GRADER, params={"files": tests.reference})
        check = BothVerification(
            pytest=tests.verification, behaviour=BehaviourVerification(checks=[wanted])
        )
        return KindExample(
            tests.workspace, tests.hidden, check, tests.reference, tests.stub, tests.tamper
        )
