"""The task file format: a frozen, versioned pydantic model.

A task names where its code comes from (`source`), how the task was made from
it (`mutation`, e.g. feature deletion), and how an attempt is verified. The
reference solution is never written by hand: it is the reverse of the
mutation. Building a workspace from a task lives in `workspace.py`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from harness.kinds.registry import KINDS, kind_of
from harness.spec import Limits, TaskVerification, Turn, check_earlier_turns

TASK_FORMAT_VERSION: Literal[1] = 1


class Category(StrEnum):
    ITERATE_ON_FEATURE = "iterate_on_feature"
    DEBUGGING = "debugging"
    NEW_FEATURE = "new_feature"
    REFACTOR = "refactor"
    UNDERSTANDING = "understanding"
    DOCUMENTATION = "documentation"
    TESTING = "testing"
    CODE_REVIEW = "code_review"
    OPTIMIZE = "optimize"
    DEVOPS = "devops"
    MIGRATION = "migration"


class Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FolderSource(Spec):
    """A source tree kept in this repository, relative to the task file."""

    kind: Literal["folder"] = "folder"
    path: str


class PackageSource(Spec):
    """A pinned release of a package: an sdist verified by its sha256."""

    kind: Literal["package"] = "package"
    name: str
    version: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class HarborSource(Spec):
    """A Harbor task folder (`--tasks harbor:DIR`, `cursorbench/harbor/importer.py`): the
    workspace is what its environment copies in; its own verifier (`tests/`) and solution
    decide and solve, so it has no mutation."""

    kind: Literal["harbor"] = "harbor"
    path: str = Field(description="The Harbor task folder (absolute).")
    workspace: str = Field(description="The folder its Dockerfile copies in, relative to it.")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


Source = Annotated[FolderSource | PackageSource | HarborSource, Field(discriminator="kind")]


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
    def _harbor_only_with_harbor(self) -> Task:
        harbor_source = isinstance(self.source, HarborSource)
        if harbor_source != (self.verification.kind == "harbor"):
            raise ValueError("a harbor source and a harbor verification go together")
        if self.mutation is None and not harbor_source:
            raise ValueError("mutation: required")
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
        if self.environment is None or not isinstance(self.source, PackageSource):
            return self
        own = _canonical(self.source.name)
        for requirement in self.environment.requirements:
            if _canonical(requirement.split("==")[0]) == own:
                raise ValueError(
                    f"environment: {requirement} is the task's own package (the answer)"
                )
        return self

    def authored_dir(self) -> Path:
        """The folder holding the task's authored test files."""
        base = self.path.parent if self.path else Path.cwd()
        return base / self.id

    def source_dir(self) -> Path:
        """The folder a `FolderSource` points to."""
        if not isinstance(self.source, FolderSource):
            raise ValueError(f"task {self.id}: source is a package, not a folder")
        base = self.path.parent if self.path else Path.cwd()
        return (base / self.source.path).resolve()
