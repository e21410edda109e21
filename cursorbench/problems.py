"""Keys a config gives that its model does not know, found before validation, with the
closest known key: `unknown key 'epoch' (did you mean 'epochs'?)`.

Pydantic reports a misspelt key as "Extra inputs are not permitted" and, where the
misspelt key was a required one, a missing field besides; walking the data against the
model's fields first names the key itself and what was meant. A field whose type is a
(discriminated) union of models accepts the keys of any of its kinds; which of those fit
the chosen kind is left to validation.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The paths of the keys of `data` (at any depth) that `model` has no field for."""
    return _unknown(models_of(model), data, ())


def _unknown(
    models: list[type[BaseModel]], data: Mapping[str, Any], prefix: tuple[str, ...]
) -> list[tuple[str, ...]]:
    known = sorted({name for model in models for name in model.model_fields})
    problems: list[tuple[str, ...]] = []
    for key, value in data.items():
        path = (*prefix, str(key))
        if key not in known:
            problems.append(path)
            continue
        inner = [
            m for model in models if key in model.model_fields for m in _field_models(model, key)
        ]
        if inner and isinstance(value, Mapping):
            problems += _unknown(inner, value, path)
    return problems


def unknown_key_problem(model: type[BaseModel], path: tuple[str, ...]) -> str:
    """`unknown key 'a.b' (did you mean 'a.c'?)`, or the keys known there."""
    models = models_of(model)
    for name in path[:-1]:
        models = [
            m
            for parent in models
            if name in parent.model_fields
            for m in _field_models(parent, name)
        ]
    known = sorted({name for m in models for name in m.model_fields})
    dotted = ".".join(path)
    close = difflib.get_close_matches(path[-1], known, n=1, cutoff=0.6)
    if close:
        return f"unknown key {dotted!r} (did you mean {'.'.join((*path[:-1], close[0]))!r}?)"
    return f"unknown key {dotted!r} (known here: {', '.join(known)})"


def _field_models(model: type[BaseModel], name: str) -> list[type[BaseModel]]:
    return models_of(model.model_fields[name].annotation)


def models_of(annotation: Any) -> list[type[BaseModel]]:
    """The model classes a field's type is made of: itself, or a union's members."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) is typing.Annotated:
        return models_of(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in models_of(arg)]
    return []
