"""Verification kinds by name, and the one place that dispatches on a verification's kind.

A new kind is one module with a `VerificationKind` and one line in `KINDS`; the
verification unions of `harness.spec` are derived from it, and the contract suite
(`tests/harness/kinds/test_kind_contract.py`) runs over every entry.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Tag

from harness.kinds.answer import AnswerKind
from harness.kinds.base import KindSpec, VerificationKind
from harness.kinds.behaviour import BehaviourCheck, BehaviourKind, BehaviourVerification
from harness.kinds.both import BothKind, BothVerification
from harness.kinds.docs import DocsKind
from harness.kinds.harbor_kind import HarborKind
from harness.kinds.mutants import MutantsKind
from harness.kinds.pytest_kind import PytestKind, Verification

KINDS: dict[str, VerificationKind] = {
    "pytest": PytestKind(),
    "docs": DocsKind(),
    "mutants": MutantsKind(),
    "answer": AnswerKind(),
    "behaviour": BehaviourKind(),
    "both": BothKind(lambda check: kind_of(check)),  # kind_of is defined below
    "harbor": HarborKind(),
}
DEFAULT_KIND = "pytest"  # a verification without `kind` (every task file written before kinds)


class UnknownKind(ValueError):
    pass


def kind_name(value: Any) -> str:
    """The kind a verification (a model or its data) names."""
    if isinstance(value, dict):
        return str(value.get("kind", DEFAULT_KIND))
    return str(getattr(value, "kind", DEFAULT_KIND))


def kind_of(check: KindSpec) -> VerificationKind:
    """The kind of a verification model: the single dispatch on kinds."""
    kind = KINDS.get(check.kind)
    if kind is None:
        raise UnknownKind(f"no verification kind named {check.kind!r} (known: {', '.join(KINDS)})")
    return kind


def verification_union(in_task_files_only: bool) -> Any:
    """The discriminated union of the registered kinds' models (pydantic picks by `kind`)."""
    members = [
        Annotated[kind.model, Tag(name)]
        for name, kind in KINDS.items()
        if kind.in_task_files or not in_task_files_only
    ]
    union = members[0]
    for member in members[1:]:
        union = union | member
    return Annotated[union, Discriminator(kind_name)]


def task_file_kinds() -> list[str]:
    return [name for name, kind in KINDS.items() if kind.in_task_files]


def graded_by_run(check: KindSpec) -> bool:
    """Whether `harness.grading.grade.grade` decides the verdict (every kind but behaviour)."""
    return kind_of(check).graded_by_run


def pytest_part(check: KindSpec) -> Verification | None:
    """The pytest verification with FAIL_TO_PASS lists of any kind, if it has one."""
    return kind_of(check).listed_tests(check)


def behaviour_part(check: KindSpec) -> BehaviourVerification | None:
    """The behaviour checks of any kind, if it has some."""
    return kind_of(check).behaviour(check)


def with_behaviour_checks(verification: Any, graders: list[str]) -> KindSpec:
    """A verification plus behaviour checks by grader name (`Task.behaviour_checks`); the
    task file's kind must take them (`takes_behaviour_checks`, checked at load)."""
    if not graders:
        return verification
    if not kind_of(verification).takes_behaviour_checks:
        raise ValueError(f"a {verification.kind} verification takes no behaviour checks")
    checks = [BehaviourCheck(grader=name) for name in graders]
    return BothVerification(pytest=verification, behaviour=BehaviourVerification(checks=checks))
