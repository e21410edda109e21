"""Behaviour graders as a plug-in point: a registry of pure functions and what they get.

A grader is a pure function of (task, final state, trajectory, its parameters)
that returns a `Score` in [0, 1] with a reason for every point it takes off.
It does no I/O: the harness reads the final state through the sandbox before
the sandbox closes (`FinalState`), and hands over the trajectory's records as
written. The same functions serve as RL rewards.

Graders register by name (`register`). Packages that bring graders declare a module
under the `cursorbench.graders` entry-point group (the built-in ones: `evals.graders`, in
`pyproject.toml`); those modules are imported the first time an unknown name is looked
up, so the engine names no package above it. This module does not cover grading by tests
or answer files (`harness/kinds/`) nor the evals themselves.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.results import Score
from harness.spec import BehaviourCheck, PreparedTask

GRADER_ENTRY_POINTS = "cursorbench.graders"  # each entry names a module that registers graders
MAX_STATE_FILE_CHARS = 1_000_000  # a touched file bigger than this is not handed to graders

Records = list[dict[str, Any]]  # trajectory records, as `Trajectory.write` made them


class FinalState(BaseModel):
    """What the agent left: its change as a patch, and the files it touched before and after.

    `before` comes from the prepared (trusted) workspace, `after` was read through the
    sandbox before it closed; None means the file did not exist. `resolved` is the pytest
    verdict when the task has tests, else None."""

    model_config = ConfigDict(frozen=True)

    patch: str = ""
    before: dict[str, str | None] = Field(default_factory=dict)
    after: dict[str, str | None] = Field(default_factory=dict)
    resolved: bool | None = None

    @property
    def touched(self) -> list[str]:
        return sorted(self.after)


# None: the check does not apply to this attempt (e.g. code quality of an unsolved one).
GraderFunction = Callable[[PreparedTask, FinalState, Records, Any], Score | None]


@dataclass(frozen=True)
class Grader:
    name: str
    params: type[BaseModel]
    function: GraderFunction


GRADERS: dict[str, Grader] = {}


class UnknownGrader(KeyError):
    pass


def register(name: str, params: type[BaseModel]) -> Callable[[GraderFunction], GraderFunction]:
    """Decorator: registers a grader under `name`, its parameters validated by `params`."""

    def add(function: GraderFunction) -> GraderFunction:
        GRADERS[name] = Grader(name, params, function)
        return function

    return add


def load_grader_plugins() -> None:
    """Imports every module the installed distributions declare as grader plug-ins."""
    for entry in entry_points(group=GRADER_ENTRY_POINTS):
        importlib.import_module(entry.value)


def get_grader(name: str) -> Grader:
    if name not in GRADERS:
        load_grader_plugins()
    if name not in GRADERS:
        known = ", ".join(sorted(GRADERS)) or "none"
        raise UnknownGrader(f"no grader named {name!r} (known: {known})")
    return GRADERS[name]


def run_check(
    task: PreparedTask, check: BehaviourCheck, state: FinalState, records: Records
) -> Score | None:
    """One check's score; parameters that do not validate are the task's fault (score 0)."""
    grader = get_grader(check.grader)
    try:
        params = grader.params.model_validate(check.params)
    except ValidationError as error:
        return Score(value=0.0, reasons=[f"bad parameters for {check.grader}: {error}"])
    return grader.function(task, state, records, params)


def score_checks(
    task: PreparedTask, checks: list[BehaviourCheck], state: FinalState, records: Records
) -> dict[str, Score]:
    """Scores by key; a check that does not apply to the attempt has none."""
    scores = {check.score_key: run_check(task, check, state, records) for check in checks}
    return {key: score for key, score in scores.items() if score is not None}


_DIFF_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$")


def touched_paths(patch: str) -> list[str]:
    """Workspace-relative paths a git patch (made with --no-renames) touches."""
    paths = []
    for line in patch.splitlines():
        match = _DIFF_HEADER.match(line)
        if match:
            paths.append(match.group(2))
    return sorted(set(paths))
