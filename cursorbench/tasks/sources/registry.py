"""Task sources by name, and the one place that dispatches on a task's source.

A new source is one module with a `TaskSource` and one line in `SOURCES`: a task file's
`source:` is read as the model of the source its `kind` names (`Source`, which asks
`SOURCES` when it validates, so a source is known as soon as it is registered), and the
contract suite (`tests/cursorbench/tasks/sources/test_source_contract.py`) runs over every
entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, SerializeAsAny
from pydantic_core import PydanticCustomError

from cursorbench.tasks.sources.base import SourceSpec, TaskSource
from cursorbench.tasks.sources.folder import FolderTaskSource
from cursorbench.tasks.sources.harbor import HarborTaskSource
from cursorbench.tasks.sources.package import PackageTaskSource

SOURCES: dict[str, TaskSource] = {
    "folder": FolderTaskSource(),
    "package": PackageTaskSource(),
    "harbor": HarborTaskSource(),
}


class UnknownSource(ValueError):
    pass


def source_named(name: str) -> TaskSource:
    source = SOURCES.get(name)
    if source is None:
        raise UnknownSource(f"no task source named {name!r} (known: {', '.join(SOURCES)})")
    return source


def source_of(spec: SourceSpec) -> TaskSource:
    """The source of a task's `source:` model: the single dispatch on sources."""
    return source_named(spec.kind)


def verification_owner(kind: str) -> TaskSource | None:
    """The source whose own verification kind `kind` is, if one is."""
    return next((s for s in SOURCES.values() if s.own_verification == kind), None)


def _as_model(value: Any) -> Any:
    """A `source:` mapping as the model of the source its `kind` names (a model stays one)."""
    if isinstance(value, SourceSpec):
        if not isinstance(value, source_named(value.kind).model):
            raise PydanticCustomError("source_model", "not a {kind} source", {"kind": value.kind})
        return value
    if not isinstance(value, Mapping):
        return value  # SourceSpec's own validation says what is wrong with it
    kind = value.get("kind")
    if kind not in SOURCES:
        known = ", ".join(SOURCES)
        if kind is None:
            raise PydanticCustomError("source_kind", "no kind (one of: {known})", {"known": known})
        message = "no task source named '{kind}' (known: {known})"
        raise PydanticCustomError("source_kind", message, {"kind": kind, "known": known})
    return SOURCES[kind].model.model_validate(value)


# A task's `source:`: the registered source's model its `kind` picks, dumped as that model.
Source = Annotated[SourceSpec, BeforeValidator(_as_model), SerializeAsAny()]
