"""The `behaviour` kind: scored by registered graders (`harness.grading.scoring`) over the final
state and the trajectory; no tests run. The harness makes it (the evals' scenarios), a
task file does not name it.

The attempt reads the final state through the sandbox and scores the checks
(`harness.run.attempt`); the verdict is `low_scores`: resolved when every check scored
at or above its threshold.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from harness.kinds.base import FileKindDefaults, Files, Frozen, KindExample
from harness.results import Score

if TYPE_CHECKING:
    from harness.kinds.testrun import GradeReport
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask

# The grader the contract suite (tests/harness/kinds/) registers for the examples: 1.0
# when the touched files hold exactly `params["files"]`, else 0.0.
CONTRACT_GRADER = "kind_contract"


class BehaviourCheck(Frozen):
    """One behaviour check: a registered grader (`harness.grading.scoring`) and its parameters."""

    grader: str = Field(min_length=1, description="Name of a registered grader, e.g. 'intent'.")
    key: str | None = Field(
        default=None, description="Name of the score in the results [default: the grader's]."
    )
    params: dict[str, Any] = Field(default_factory=dict)
    threshold: float = Field(
        default=0.5, ge=0, le=1, description="Score at or above which the check counts as kept."
    )

    @property
    def score_key(self) -> str:
        return self.key or self.grader


class BehaviourVerification(Frozen):
    """Scored by registered graders over the final state and the trajectory; no tests run."""

    kind: Literal["behaviour"] = "behaviour"
    checks: list[BehaviourCheck] = Field(min_length=1)
    protected_paths: list[str] = Field(default_factory=list)

    @property
    def hidden_tests(self) -> list[str]:
        return []


def low_scores(check: BehaviourVerification, scores: dict[str, Score]) -> list[str]:
    """The checks scored below their threshold, one line each (none: resolved). A check
    with no score fails: an attempt nothing could be measured on is never resolved."""
    return [
        f"{item.score_key} not scored"
        if item.score_key not in scores
        else f"{item.score_key} {scores[item.score_key].value:.2f} < {item.threshold}"
        for item in check.checks
        if item.score_key not in scores or scores[item.score_key].value < item.threshold
    ]


class BehaviourKind(FileKindDefaults):
    name = "behaviour"
    model = BehaviourVerification
    in_task_files = False
    graded_by_run = False

    def grade(
        self,
        task: PreparedTask,
        check: BehaviourVerification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        return None  # the checks decide, over the final state the attempt reads

    def behaviour(self, check: BehaviourVerification) -> BehaviourVerification | None:
        return check

    def reference_files(self, check: BehaviourVerification, workspace: Path) -> Files | None:
        return None

    def stub_files(self, check: BehaviourVerification) -> Files | None:
        return None

    def solver_test_args(self, check: BehaviourVerification, written: list[str]) -> list[str]:
        return []

    def example(self) -> KindExample:
        reference = {"notes.md": "# Notes\n\nThe cache is per process.\n"}
        wanted = BehaviourCheck(grader=CONTRACT_GRADER, params={"files": reference})
        return KindExample(
            workspace={"notes.md": "# Notes\n"},
            hidden={},
            verification=BehaviourVerification(checks=[wanted]),
            reference=reference,
            stub={"notes.md": "# Notes\n\nTODO\n"},
        )
