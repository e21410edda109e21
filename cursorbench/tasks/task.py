"""The task file format: a frozen, versioned pydantic model.

A task names where its code comes from (`source`, one of the sources of
`sources/registry.py`), how the task was made from it (`mutation`, e.g. feature
deletion), and how an attempt is verified. The reference solution is never written by
hand: it is the reverse of the mutation (or, for a source that brings its own, that
source's solution). Building a workspace from a task lives in `workspace.py`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from cursorbench.tasks.category import Category
from cursorbench.tasks.sources.registry import Source, source_of, verification_owner
from harness.kinds.registry import KINDS, kind_of
from harness.spec import Limits, TaskVerification, Turn, check_earlier_turns

TASK_FORMAT_VERSION: Literal[1] = 1


class Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class RemoveFile(Spec):
    op: Literal["remove_file"] = "remove_file"
    file: str


class RemoveSymbol(Spec):
    """Delete a top-level function or class, or a method as `Class.method`."""

    op: Literal["remove_symbol"] = "remove_symbol"
    file: str
    symbol: str


class ReplaceText(Spec):
    """Replace exactly one occurrence of `old` with `new` in `file`."""

    op: Literal["replace_text"] = "replace_text"
    file: str
    old: str = Field(min_length=1)
    new: str


class MoveSymbol(Spec):
    """Move a top-level function or class (or `Class.method`) to the end of another file
    (made if missing): the code moves, nothing of it is written into the task file."""

    op: Literal["move_symbol"] = "move_symbol"
    file: str
    symbol: str
    into: str


Operation = Annotated[
    RemoveFile | RemoveSymbol | ReplaceText | MoveSymbol, Field(discriminator="op")
]


class Mutation(Spec):
    """How the workspace was made from the original: a feature deleted, bugs or a slower
    implementation injected, or code rewritten into the shape a refactor, migration or
    packaging task starts from (the original is always the target)."""

    kind: Literal["feature_deletion", "bug_injection", "rewrite"] = "feature_deletion"
    operations: list[Operation] = Field(min_length=1)


PINNED = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?==[A-Za-z0-9][A-Za-z0-9.+!_-]*$"


class Environment(Spec):
    """A Python environment of the task's own (`harness/envs.py`): its sandboxes show it
    instead of the harness's, so the package's test dependencies need not be the harness's.
    pytest and coverage, at the harness's versions, are always added."""

    requirements: list[Annotated[str, Field(pattern=PINNED)]] = Field(
        default_factory=list, description="Pinned `name==version`: the tests' dependencies."
    )


class Task(Spec):
    format_version: Literal[1] = TASK_FORMAT_VERSION
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    suite_version: str
    category: Category
    prompt: str = Field(min_length=1)
    source: Source
    # Fixes applied to the pristine tree before anything else (e.g. a conftest hook written
    # for an older pytest): part of the original, so never part of the answer.
    setup: list[Operation] = Field(default_factory=list)
    mutation: Mutation | None = None  # required but for a Harbor task
    # Test files the task's author wrote (structure, absence of an old idiom, operation
    # counts, ...): read from the folder named like the task next to its file
    # (`tasks/ID/tests/test_x.py` for `tests/test_x.py`), laid into the original tree
    # after `setup`, and hidden like the package's own hidden tests.
    authored_tests: list[str] = Field(default_factory=list)
    verification: TaskVerification
    limits: Limits = Field(default_factory=Limits)
    behaviour_checks: list[str] = Field(default_factory=list)
    # Files of the workspace that may still describe the deleted API (a stub, a docs page,
    # a changelog entry), each with why it stays: glob (relative to the workspace) -> reason.
    leak_allow: dict[str, Annotated[str, Field(min_length=1)]] = Field(default_factory=dict)
    # When the source's release came out (a task factory's freshness record, ISO date): a
    # model can be scored on tasks newer than its training cutoff. Not part of the build.
    released: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    # The task's own Python environment; absent: the harness's (the v1 suite's tasks).
    environment: Environment | None = None
    # The session before the prompt (an iterate-on-feature task: the request for the
    # feature's first part and the answer; the workspace holds that part): user and
    # assistant turns alternating, ending with the assistant's.
    earlier_turns: list[Turn] = Field(default_factory=list)

    # Where the file was loaded from; not part of the file itself.
    path: Path | None = Field(default=None, exclude=True)

    @field_validator("behaviour_checks")
    @classmethod
    def _kind_takes_behaviour_checks(cls, graders: list[str], info: ValidationInfo) -> list[str]:
        check = info.data.get("verification")  # absent when it did not validate
        if graders and check is not None and not kind_of(check).takes_behaviour_checks:
            takers = [n for n, k in KINDS.items() if k.in_task_files and k.takes_behaviour_checks]
            raise PydanticCustomError(
                "kind_without_behaviour_checks",
                "a {kind} verification takes no behaviour checks (only {takers} do)",
                {"kind": check.kind, "takers": ", ".join(takers)},
            )
        return graders

    @model_validator(mode="after")
    def _fits_its_source(self) -> Task:
        source, kind = source_of(self.source), self.verification.kind
        owner = verification_owner(kind)
        if source.own_verification not in (None, kind) or owner not in (None, source):
            pair = owner or source
            raise ValueError(
                f"a {pair.name} source and a {pair.own_verification} verification go together"
            )
        if source.mutated and self.mutation is None:
            raise ValueError("mutation: required")
        if not source.mutated and self.mutation is not None:
            raise ValueError(f"mutation: a {source.name} task has none (it brings its solution)")
        if self.environment is not None and not source.takes_environment:
            raise ValueError(f"environment: a {source.name} task takes none (its source has one)")
        return self

    @model_validator(mode="after")
    def _authored_tests_are_hidden(self) -> Task:
        hidden = set(self.verification.hidden_tests)
        missing = [path for path in self.authored_tests if path not in hidden]
        if missing:
            raise ValueError(f"authored test {missing[0]} is not in verification.hidden_tests")
        unsafe = [p for p in self.authored_tests if p.startswith("/") or ".." in p.split("/")]
        if unsafe:
            raise ValueError(f"authored test {unsafe[0]} is not a relative path inside the tree")
        return self

    @field_validator("earlier_turns")
    @classmethod
    def _turns_alternate(cls, turns: list[Turn]) -> list[Turn]:
        return check_earlier_turns(turns)

    @model_validator(mode="after")
    def _environment_lacks_the_package(self) -> Task:
        package = source_of(self.source).distribution(self.source)
        if self.environment is None or package is None:
            return self
        own = _canonical(package)
        for requirement in self.environment.requirements:
            if _canonical(requirement.split("==")[0]) == own:
                raise ValueError(
                    f"environment: {requirement} is the task's own package (the answer)"
                )
        return self

    def base_dir(self) -> Path:
        """The folder of the task file, where its relative paths start (for a task made in
        memory, the working folder)."""
        return self.path.parent if self.path else Path.cwd()

    def authored_dir(self) -> Path:
        """The folder holding the task's authored test files."""
        return self.base_dir() / self.id
