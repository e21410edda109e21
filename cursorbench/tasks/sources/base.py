"""What every task source provides (`TaskSource`), and what they share.

A source is the model of a task file's `source:` (a `SourceSpec`, whose `kind` names the
source) and a `TaskSource` that knows what to do with one: the tree a task is made from,
what of it the task digest covers, what the sandbox must hide, how a task of it is built
and solved where the mutation's reverse does not do, and which of a task file's fields go
with it. `registry.SOURCES` names them; `registry.source_of` is the one dispatch on them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from cursorbench.tasks.task import Task
    from cursorbench.tasks.workspace import BuiltTask
    from harness.model.openai_server import Reply


class SourceSpec(BaseModel):
    """What a task file's `source:` holds; `kind` names the source (`registry.SOURCES`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str


class SourceError(RuntimeError):
    """The source cannot be had or used (one line for the user; exit 2 at the CLI)."""


@dataclass(frozen=True)
class LocatedTask:
    """A task read from a folder in a source's own format: the fields of its task file, the
    file it counts as (`Task.path`), and how messages name it."""

    fields: dict[str, Any]
    path: Path
    where: str


@dataclass(frozen=True)
class SourceLocation:
    """`--tasks PREFIX:DIR`: a folder of tasks in a source's own format. `read` gives the
    tasks at DIR and one line per folder there that cannot be one."""

    prefix: str  # `harbor:`
    what: str  # what DIR is, for messages: `Harbor task folder`
    read: Callable[[Path], tuple[list[LocatedTask], list[str]]]


@dataclass(frozen=True)
class SourceExample:
    """A small task of a source, for the contract suite: the task file's fields that are the
    source's to say (`source`, `mutation`, `verification`); the suite fills in the rest."""

    fields: dict[str, Any]


class TaskSource(Protocol):
    """One task source. `spec` is always an instance of `model`; `task` is the task whose
    source it is."""

    @property
    def name(self) -> str:
        """What `kind:` says."""
        ...

    @property
    def model(self) -> type[SourceSpec]: ...

    @property
    def mutated(self) -> bool:
        """Its tasks are a mutation of its tree: the builder derives the build from the tree
        (and scans it for leaks), and the reference is the mutation's reverse. Else the
        source lays the build out itself (`build_into`) and brings its own solution
        (`solution_steps`), and its tasks have no mutation."""
        ...

    @property
    def own_verification(self) -> str | None:
        """A verification kind its tasks have, and no other source's tasks may."""
        ...

    @property
    def takes_environment(self) -> bool:
        """Its tasks may name a Python environment of their own (`environment:`)."""
        ...

    @property
    def location(self) -> SourceLocation | None:
        """Where `--tasks` finds tasks in its own format; None: in task files only."""
        ...

    def tree(self, spec: Any, task: Task, cache: Path) -> Path:
        """The original tree, which the task's build is made from (SourceError if it cannot
        be had)."""
        ...

    def digest(self, spec: Any, task: Task) -> str:
        """What the task digest covers beyond the task file: the bytes of whatever the spec
        does not pin itself (SourceError if they cannot be read)."""
        ...

    def secret_paths(self, spec: Any, task: Task) -> list[Path]:
        """Host paths the sandbox must hide, beyond the task file's folder."""
        ...

    def build_into(self, spec: Any, task: Task, tree: Path, staging: Path) -> None:
        """Only where not `mutated`: lays the build out in `staging` (workspace/, hidden/,
        original/, reference.patch, and what its solution needs)."""
        ...

    def solution_steps(self, spec: Any, built: BuiltTask) -> list[Reply] | None:
        """The reference solver's script where the source brings its own solution; None:
        the mutation's reverse, written file by file (`reference.py`)."""
        ...

    def distribution(self, spec: Any) -> str | None:
        """The distribution its tree is a release of, which no environment of the task may
        hold (it would hold the answer); None: none."""
        ...

    def package_name(self, spec: Any) -> str:
        """What `tasks stats` counts the task under: its package, or its folder's name."""
        ...

    def label(self, spec: Any) -> str:
        """The source in a validation record: `NAME==VERSION`, `folder:NAME`, ..."""
        ...

    def example(self, root: Path, cache: Path) -> SourceExample:
        """A small task of this source for the contract suite, its files written under
        `root` (or into the build cache `cache`, as if fetched)."""
        ...


class MutatedSource:
    """Defaults for the sources whose tasks are a mutation of their tree."""

    mutated = True
    own_verification: str | None = None
    takes_environment = True
    location: SourceLocation | None = None

    def secret_paths(self, spec: Any, task: Task) -> list[Path]:
        return []

    def build_into(self, spec: Any, task: Task, tree: Path, staging: Path) -> None:
        raise NotImplementedError(f"a {spec.kind} task's build is derived from its mutation")

    def solution_steps(self, spec: Any, built: BuiltTask) -> list[Reply] | None:
        return None

    def distribution(self, spec: Any) -> str | None:
        return None
