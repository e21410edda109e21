"""The public Python surface is `cursorbench`: what a user imports is there, and only that.

A name added to (or dropped from) `cursorbench.__all__` must be added here too, on purpose.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import cursorbench

EXPECTED = [
    "REFERENCE_SOLVER",
    "AttemptResult",
    "BuildError",
    "BuiltTask",
    "Category",
    "ConfigError",
    "CursorBenchError",
    "Failure",
    "Mutation",
    "ReferenceSolver",
    "RunInfo",
    "RunOutcome",
    "RunSpec",
    "RunSummary",
    "SetupError",
    "Status",
    "Task",
    "TaskFileError",
    "Usage",
    "build",
    "bundled_suite",
    "load_spec",
    "load_task",
    "load_tasks",
    "prepare",
    "run",
    "select_tasks",
    "validate_task",
]


def test_all_is_the_expected_list() -> None:
    assert cursorbench.__all__ == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_every_exported_name_is_importable_and_public(name: str) -> None:
    assert not name.startswith("_")
    value = getattr(cursorbench, name)
    assert value is not None
    module = getattr(value, "__module__", None)
    if module is not None:  # defined in the project, not re-exported from a dependency
        assert module.split(".")[0] in ("cursorbench", "harness"), module
        assert not any(part.startswith("_") for part in module.split("."))
    exec(f"from cursorbench import {name}", {})


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = cursorbench.nothing_here
    with pytest.raises(ImportError):
        exec("from cursorbench import nothing_here", {})


def test_submodules_still_import_through_the_lazy_package() -> None:
    assert (
        importlib.import_module("cursorbench.validation.leaks").__name__
        == "cursorbench.validation.leaks"
    )
    assert "run" in dir(cursorbench) and "validation" in dir(cursorbench)


HEAVY = ("openai", "sqlalchemy", "torch", "ray")


@pytest.mark.parametrize("module", ["harness.spec", "cursorbench.cli.app", "cursorbench"])
def test_light_imports_do_not_load_heavy_dependencies(module: str) -> None:
    """In a fresh interpreter: what `cursorbench --help` and the task spec import."""
    check = f"import sys, {module}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
