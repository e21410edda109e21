"""What every verification kind provides (`VerificationKind`), and what they share."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from harness.kinds.behaviour import BehaviourVerification
    from harness.kinds.pytest_kind import Verification
    from harness.kinds.testrun import GradeReport
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    "tests/**",
    "test/**",
    "**/conftest.py",
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
)

Files = dict[str, str | None]  # workspace-relative path -> text (None: deleted)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KindSpec(Protocol):
    """What every kind's spec model has (a field or a property)."""

    @property
    def kind(self) -> str: ...
    @property
    def hidden_tests(self) -> list[str]: ...
    @property
    def protected_paths(self) -> list[str]: ...


class ListedCounts(NamedTuple):
    """What `tasks list` and `tasks stats` print: tests listed as FAIL_TO_PASS/PASS_TO_PASS."""

    fail_to_pass: int = 0
    pass_to_pass: int = 0


@dataclass(frozen=True)
class KindExample:
    """A small task of a kind, for the contract suite: its workspace, hidden files and
    verification; what the reference and a stub write where the kind does not make them
    itself (`reference_files`, `stub_files` give None); and what a cheat writes into
    protected paths (laid over the stub, the task must still not resolve)."""

    workspace: dict[str, str]
    hidden: dict[str, str]
    verification: KindSpec
    reference: dict[str, str]
    stub: dict[str, str]
    tamper: dict[str, str] = field(default_factory=dict)


class VerificationKind(Protocol):
    """One verification kind. `check` is always an instance of `model`."""

    @property
    def name(self) -> str:
        """What `kind:` says."""
        ...

    @property
    def model(self) -> type[BaseModel]:
        """The spec model."""
        ...

    @property
    def in_task_files(self) -> bool:
        """A task file may name it (the others are made by the harness)."""
        ...

    @property
    def takes_behaviour_checks(self) -> bool:
        """A task file's `behaviour_checks` may be added to it."""
        ...

    @property
    def graded_by_run(self) -> bool:
        """`grade` decides the verdict (else the behaviour checks do)."""
        ...

    def grade(
        self,
        task: PreparedTask,
        check: Any,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        """The verdict on a change; None when no run decides it (behaviour checks do)."""
        ...

    def behaviour(self, check: Any) -> BehaviourVerification | None:
        """Behaviour checks scored next to (or instead of) the run's verdict."""
        ...

    def listed_tests(self, check: Any) -> Verification | None:
        """The pytest run with FAIL_TO_PASS/PASS_TO_PASS lists, when the kind has one."""
        ...

    def test_counts(self, check: Any) -> ListedCounts: ...

    def reference_files(self, check: Any, workspace: Path) -> Files | None:
        """What the reference solution writes; None: the reverse of the task's mutation."""
        ...

    def stub_files(self, check: Any) -> Files | None:
        """What a no-knowledge stub writes; None: the reference's functions stubbed."""
        ...

    def solver_test_args(self, check: Any, written: list[str]) -> list[str]:
        """What the reference solver runs to check its work, having written `written`."""
        ...

    def workspace_problems(self, check: Any, workspace: Path) -> list[str]:
        """Why the prepared workspace cannot carry this verification (validation)."""
        ...

    def reference_problems(self, check: Any, report: GradeReport) -> list[str]:
        """What is wrong with the reference's grade report beyond not resolving."""
        ...

    def failing_by_design(self, check: Any) -> set[str]:
        """Files whose tests may fail on the broken tree without counting as spill."""
        ...

    def needs_coverage(self, check: Any) -> bool:
        """Whether validation requires coverage of the removed lines to be measured."""
        ...

    def example(self) -> KindExample:
        """A small task of this kind for the contract suite."""
        ...


class FileKindDefaults:
    """Defaults for the kinds graded from the change alone, without FAIL_TO_PASS lists."""

    in_task_files = True
    takes_behaviour_checks = False
    graded_by_run = True

    def behaviour(self, check: Any) -> BehaviourVerification | None:
        return None

    def listed_tests(self, check: Any) -> Verification | None:
        return None

    def test_counts(self, check: Any) -> ListedCounts:
        return ListedCounts()

    def workspace_problems(self, check: Any, workspace: Path) -> list[str]:
        return []

    def reference_problems(self, check: Any, report: GradeReport) -> list[str]:
        return []

    def failing_by_design(self, check: Any) -> set[str]:
        return set(check.hidden_tests)

    def needs_coverage(self, check: Any) -> bool:
        return False
