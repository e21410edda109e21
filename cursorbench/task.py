"""The task file format: a frozen, versioned pydantic model.

A task names where its code comes from (`source`), how the task was made from
it (`mutation`, e.g. feature deletion), and how an attempt is verified. The
reference solution is never written by hand: it is the reverse of the
mutation. Building a workspace from a task lives in `workspace.py`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.spec import Limits, TaskVerification

TASK_FORMAT_VERSION = 1


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


Source = Annotated[FolderSource | PackageSource, Field(discriminator="kind")]


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


Operation = Annotated[RemoveFile | RemoveSymbol | ReplaceText, Field(discriminator="op")]


class Mutation(Spec):
    kind: Literal["feature_deletion", "bug_injection"] = "feature_deletion"
    operations: list[Operation] = Field(min_length=1)


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
    mutation: Mutation
    verification: TaskVerification
    limits: Limits = Field(default_factory=Limits)
    behaviour_checks: list[str] = Field(default_factory=list)

    # Where the file was loaded from; not part of the file itself.
    path: Path | None = Field(default=None, exclude=True)

    def source_dir(self) -> Path:
        """The folder a `FolderSource` points to."""
        if not isinstance(self.source, FolderSource):
            raise ValueError(f"task {self.id}: source is a package, not a folder")
        base = self.path.parent if self.path else Path.cwd()
        return (base / self.source.path).resolve()
