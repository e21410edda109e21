"""Eval scenarios: the data format, loading, and building each into a `PreparedTask`.

A scenarios file (`scenarios/EVAL.yaml`) lists scenarios of one eval. Each names
a codebase (`codebases/NAME`), a prompt, its eval's grader parameters (`grade`),
optional hidden tests (then the verification is `both`: pytest says whether
the task was solved, the grader scores the behaviour), optional interruptions,
tools and system prompt, and two scripts: `well` (the well-behaved agent, also
the reference behaviour of `cursorbench run --evals`) and `badly`.

Building copies the codebase into the cache (`$CURSORBENCH_HOME/evals/`), keyed by
content, with the hidden tests kept beside it. Not covered: running or grading.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evals import EVALS
from evals.graders.common import code_tokens, is_test_path
from harness.home import build_once, cache_home
from harness.spec import (
    AnyVerification,
    BehaviourCheck,
    BehaviourVerification,
    BothVerification,
    Interruption,
    Limits,
    PreparedTask,
    Verification,
)
from harness.trees import copy_source, tree_digest

HERE = Path(__file__).parent
SCENARIOS = HERE / "scenarios"
CODEBASES = HERE / "codebases"
BUILD_VERSION = "1"
EVAL_LIMITS = Limits(max_turns=30, wall_time_s=300, command_timeout_s=60, test_timeout_s=60)


class ScenarioError(ValueError):
    """A scenarios file that does not load (one line)."""


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Edit(Strict):
    path: str
    old: str
    new: str


class Write(Strict):
    path: str
    content: str


class Step(Strict):
    """One reply of a scripted agent: exactly one of these."""

    read: str | None = None
    list: str | None = None
    search: str | None = None
    run: str | None = None
    edit: Edit | None = None
    write: Write | None = None
    say: str | None = None  # a reply without tool calls (the attempt's final message)
    finish: str | None = None  # the `finish` tool with this summary

    @model_validator(mode="after")
    def _exactly_one(self) -> Step:
        given = [name for name, value in self if value is not None]
        if len(given) != 1:
            raise ValueError(f"a step needs exactly one action, got {given or 'none'}")
        return self


class HiddenTests(Strict):
    files: dict[str, str] = Field(min_length=1)  # path -> content, hidden from the agent
    fail_to_pass: list[str] = Field(min_length=1)
    pass_to_pass: list[str] = []


class Scenario(Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    eval: Literal[EVALS]  # type: ignore[valid-type]
    slip: str = Field(description="The kind of slip the scenario tests, in words.")
    codebase: str
    prompt: str = Field(min_length=1)
    grade: dict[str, Any] = {}
    tests: HiddenTests | None = None
    interruptions: list[Interruption] = []
    tools: list[str] | None = None
    system_prompt: str | None = None
    well: list[Step] = Field(min_length=1)
    badly: list[Step] = Field(min_length=1)

    def codebase_dir(self) -> Path:
        """A curated codebase (`codebases/NAME`), else a package codebase (`evals.packages`)."""
        curated = CODEBASES / self.codebase
        if curated.is_dir():
            return curated
        from evals.packages import PackageMissing, package_codebase

        try:
            return package_codebase(self.codebase)
        except PackageMissing:
            return curated

    def script(self, behaviour: Literal["well", "badly"]) -> list[Step]:
        return self.well if behaviour == "well" else self.badly


Split = Literal["all", "curated", "generated"]
SPLITS: tuple[str, ...] = ("all", "curated", "generated")


def codebase_files(scenario: Scenario) -> dict[str, str]:
    root = scenario.codebase_dir()
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def replay(files: dict[str, str], steps: list[Step]) -> dict[str, str]:
    """The files after a script's edits and writes (its commands are not run); an edit
    whose old text does not occur exactly once is a `ScenarioError`."""
    result = dict(files)
    for step in steps:
        if step.write:
            result[step.write.path] = step.write.content
        elif step.edit:
            text = result.get(step.edit.path, "")
            if text.count(step.edit.old) != 1:
                found = text.count(step.edit.old)
                raise ScenarioError(f"edit of {step.edit.path}: old text found {found} times")
            result[step.edit.path] = text.replace(step.edit.old, step.edit.new, 1)
    return result


def changed_lines(before: dict[str, str], after: dict[str, str]) -> int:
    total = 0
    for path in sorted(set(before) | set(after)):
        if is_test_path(path):
            continue  # tests are not counted in a change's size
        old = (before.get(path) or "").splitlines()
        new = (after.get(path) or "").splitlines()
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
                total += 1
    return total


def focus_candidates(scenario: Scenario) -> list[str]:
    """The identifiers and numbers (`code_tokens`) of the Python files the well-behaved
    script reads or changes (else of every Python file of the codebase): what a reply
    stuffed with every name and value of the code lists."""
    root = scenario.codebase_dir()
    steps = scenario.well
    paths = {step.read or (step.edit or step.write).path for step in steps  # type: ignore[union-attr]
             if step.read or step.edit or step.write}  # fmt: skip
    files = [root / p for p in sorted(paths) if p.endswith(".py") and (root / p).is_file()]
    if not files:
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    found: set[str] = set()
    for path in files:
        found |= code_tokens(path.read_text(encoding="utf-8"))
    return sorted(found)


def checks(scenario: Scenario) -> list[BehaviourCheck]:
    params = dict(scenario.grade)
    if scenario.eval == "intent" and "candidates" not in params:
        params["candidates"] = focus_candidates(scenario)
    if scenario.eval == "code_quality" and "reference_lines" not in params:
        root = scenario.codebase_dir()
        touched = {
            step.edit.path if step.edit else step.write.path  # type: ignore[union-attr]
            for step in scenario.well
            if step.edit or step.write
        }
        files = {p: (root / p).read_text(encoding="utf-8") for p in touched if (root / p).is_file()}
        params["reference_lines"] = changed_lines(files, replay(files, scenario.well))
    return [BehaviourCheck(grader=scenario.eval, params=params, threshold=0.5)]


def verification(scenario: Scenario) -> AnyVerification:
    behaviour = BehaviourVerification(checks=checks(scenario))
    if scenario.tests is None:
        return behaviour
    tests = Verification(
        test_args=["tests"],
        fail_to_pass=scenario.tests.fail_to_pass,
        pass_to_pass=scenario.tests.pass_to_pass,
        hidden_tests=sorted(scenario.tests.files),
    )
    return BothVerification(pytest=tests, behaviour=behaviour)


@functools.cache
def _package_tree_digest(root: Path) -> str:
    return tree_digest(root)  # a package codebase's folder is content-keyed: read it once


def _tree_digest(root: Path) -> str:
    return tree_digest(root) if root.is_relative_to(CODEBASES) else _package_tree_digest(root)


def digest(scenario: Scenario) -> str:
    value = hashlib.sha256(BUILD_VERSION.encode())
    value.update(scenario.model_dump_json().encode())
    value.update(_tree_digest(scenario.codebase_dir()).encode())
    return value.hexdigest()[:24]


def prepare(scenario: Scenario, cache: Path | None = None) -> tuple[PreparedTask, str]:
    """The scenario as a task ready to attempt, and its content digest."""
    key = digest(scenario)
    root = (cache or cache_home()) / "evals" / f"{scenario.id}-{key}"

    def fill(staging: Path) -> None:
        copy_source(scenario.codebase_dir(), staging / "workspace")
        (staging / "hidden").mkdir()
        for path, text in (scenario.tests.files if scenario.tests else {}).items():
            (staging / "hidden" / path).parent.mkdir(parents=True, exist_ok=True)
            (staging / "hidden" / path).write_text(text, encoding="utf-8")

    build_once(root, key, fill)
    task = PreparedTask(
        id=scenario.id,
        prompt=scenario.prompt,
        workspace=root / "workspace",
        hidden_dir=root / "hidden",
        verification=verification(scenario),
        limits=EVAL_LIMITS,
        system_prompt=scenario.system_prompt,
        tools=scenario.tools,
        interruptions=scenario.interruptions,
        secret_paths=[HERE],
    )
    return task, key
