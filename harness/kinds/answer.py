"""The `answer` kind: an answer file (code review, understanding) graded against facts
the task knows.

The agent writes one JSON object to the task's `answer_file`; nothing of its code
runs. The file's text is taken from the patch itself (a new file's added lines:
pure text work, no tree is read), and `judge_answers` compares it with the facts:
a pure function. Each fact is one pseudo-test `answer:KEY` in the report.

What guessing cannot do: a location must be a narrow range (`max_span` lines) that
meets the defect's lines, so naming every line fails; a set of names must be exactly
the set, so listing every name fails; a value is one value.

An answer of any size or shape is judged and never crashes the judge: text that is not
JSON (a 5,000-digit integer, nesting too deep) is no answer; a value of the wrong type,
out of range (an integer no float holds), NaN or infinite fails its fact; and whatever a
fact's check still raises fails that fact alone, with the exception summarised.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, model_validator

from harness.grading.blame import harness_step, summary
from harness.kinds.base import FileKindDefaults, Files, Frozen, KindExample
from harness.kinds.testrun import GradeReport
from harness.patch import PatchFormatError, split_patch
from harness.results import Failure, Score, TestOutcome

if TYPE_CHECKING:
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask

MAX_ANSWER_CHARS = 64 * 1024
ANSWER_SCORE = "answer"


class TextFact(Frozen):
    """A name or value, compared after normalising case, quotes, spaces and a trailing `()`."""

    kind: Literal["text"] = "text"
    key: str = Field(min_length=1)
    accept: list[str] = Field(min_length=1, description="Right answers; the first is canonical.")


class NumberFact(Frozen):
    kind: Literal["number"] = "number"
    key: str = Field(min_length=1)
    value: float
    tolerance: float = Field(default=0.0, ge=0)


class NamesFact(Frozen):
    """A set of names: the answer's list must hold exactly these (order free)."""

    kind: Literal["names"] = "names"
    key: str = Field(min_length=1)
    names: list[str] = Field(min_length=1)


class LocationFact(Frozen):
    """Where something is: `anchor` occurs once in `file` of the prepared workspace; the
    answer's line range must be at most `max_span` lines and meet the anchor's lines
    widened by `slack`."""

    kind: Literal["location"] = "location"
    key: str = Field(min_length=1)
    file: str = Field(min_length=1)
    anchor: str = Field(min_length=1)
    slack: int = Field(default=2, ge=0)
    max_span: int = Field(default=8, ge=1)


Fact = Annotated[TextFact | NumberFact | NamesFact | LocationFact, Field(discriminator="kind")]


class AnswerVerification(Frozen):
    """The agent writes a JSON answer file; graded against facts the task knows. No code
    of the agent's runs."""

    kind: Literal["answer"] = "answer"
    answer_file: str = Field(min_length=1, description="Workspace-relative JSON file to write.")
    facts: list[Fact] = Field(min_length=1)
    min_score: float = Field(default=1.0, gt=0, le=1, description="Share of facts to get right.")

    @model_validator(mode="after")
    def _unique_keys(self) -> AnswerVerification:
        keys = [fact.key for fact in self.facts]
        if len(keys) != len(set(keys)):
            raise ValueError("fact keys must be unique")
        return self

    @property
    def hidden_tests(self) -> list[str]:
        return []

    @property
    def protected_paths(self) -> list[str]:
        return []


class AnswerFileError(ValueError):
    """The answer file is missing or unreadable (one line, for the agent's record)."""


@dataclass(frozen=True)
class Verdict:
    resolved: bool
    failure: Failure | None
    tests: dict[str, TestOutcome]
    score: Score
    error: str | None


def answer_text(patch: str, answer_file: str) -> str:
    """The text of `answer_file` as the change creates it (a new regular file)."""
    try:
        changes = [c for c in split_patch(patch) if c.path == answer_file]
    except PatchFormatError as error:
        raise AnswerFileError(f"unreadable change: {error}") from None
    if not changes:
        raise AnswerFileError(f"no {answer_file} in the change")
    change = changes[0]
    if change.deleted or change.new_mode not in ("100644", "100755"):
        raise AnswerFileError(f"{answer_file} is not a new regular file")
    lines: list[str] = []
    in_hunk = False
    for line in change.text.split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif line.startswith("GIT binary patch") or line.startswith("Binary files"):
            raise AnswerFileError(f"{answer_file} is binary")
        elif in_hunk and line.startswith("+"):
            lines.append(line[1:])
        elif in_hunk and line.startswith(("-", " ")):
            raise AnswerFileError(f"{answer_file} must be a new file, not an edit")
    text = "\n".join(lines)
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerFileError(f"{answer_file} is over {MAX_ANSWER_CHARS} characters")
    return text


def anchor_lines(workspace: Path, fact: LocationFact) -> tuple[int, int]:
    """The 1-based first and last line of the fact's anchor in the prepared workspace."""
    path = workspace / fact.file
    if not path.is_file():
        raise ValueError(f"location fact {fact.key}: no file {fact.file}")
    text = path.read_text(encoding="utf-8")
    count = text.count(fact.anchor)
    if count != 1:
        raise ValueError(f"location fact {fact.key}: anchor occurs {count} times in {fact.file}")
    start = text[: text.index(fact.anchor)].count("\n") + 1
    return start, start + fact.anchor.rstrip("\n").count("\n")


def truths(check: AnswerVerification, workspace: Path) -> dict[str, tuple[int, int]]:
    """Each location fact's anchor lines, read from the trusted prepared workspace."""
    return {
        fact.key: anchor_lines(workspace, fact)
        for fact in check.facts
        if isinstance(fact, LocationFact)
    }


def normal(value: Any) -> str:
    """Case, surrounding quotes and backticks, spaces and a trailing `()` do not matter."""
    text = re.sub(r"\s+", " ", str(value)).strip().strip("`'\"").strip()
    return text.removesuffix("()").casefold()


def _path(value: Any) -> str:
    return str(value).strip().removeprefix("./").replace("\\", "/")


MAX_LINE = 10**9  # no file has more lines: anything above is not a line number


def _int(value: Any) -> int | None:
    """A line number given as an int or a string of ASCII digits; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,10}", value.strip()):
        value = int(value.strip())
    if isinstance(value, int) and 0 <= value <= MAX_LINE:
        return value
    return None


def _number(value: Any) -> float | None:
    """A finite number given as a JSON number or a numeric string; None for anything else
    (booleans, NaN, infinities, integers too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, str) and len(value) > 100:
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def location_problem(fact: LocationFact, lines: tuple[int, int], given: Any) -> str | None:
    if not isinstance(given, dict):
        return "expected an object with file, start_line and end_line"
    start, end = _int(given.get("start_line")), _int(given.get("end_line"))
    if _path(given.get("file", "")) != fact.file:
        return f"wrong file {str(given.get('file'))[:80]!r}"
    if start is None or end is None or start < 1 or end < start:
        return "start_line and end_line must be line numbers, start first"
    if end - start + 1 > fact.max_span:
        return f"the range spans {end - start + 1} lines (at most {fact.max_span})"
    low, high = lines[0] - fact.slack, lines[1] + fact.slack
    if end < low or start > high:
        return f"lines {start}-{end} miss the place"
    return None


def fact_problem(fact: Any, given: Any, lines: tuple[int, int] | None) -> str | None:
    """Why the given answer to one fact is wrong; None when it is right."""
    if given is None:
        return "no answer"
    if isinstance(fact, TextFact):
        if isinstance(given, dict | list):
            return "expected one value"
        return None if normal(given) in {normal(a) for a in fact.accept} else "wrong"
    if isinstance(fact, NumberFact):
        number = _number(given)
        if number is None:
            return "expected a finite number"
        return None if abs(number - fact.value) <= fact.tolerance else "wrong"
    if isinstance(fact, NamesFact):
        if not isinstance(given, list) or not all(isinstance(x, str) for x in given):
            return "expected a list of names"
        wanted, named = {normal(n) for n in fact.names}, {normal(n) for n in given}
        missing, extra = len(wanted - named), len(named - wanted)
        return None if not (missing or extra) else f"{missing} missing, {extra} not right"
    assert isinstance(fact, LocationFact) and lines is not None
    return location_problem(fact, lines, given)


def checked_problem(fact: Any, given: Any, lines: tuple[int, int] | None) -> str | None:
    """`fact_problem`, where an answer that makes the check raise fails this fact."""
    try:
        return fact_problem(fact, given, lines)
    except Exception as error:  # any shape of answer is judged: it fails, the rest go on
        return f"the answer could not be judged ({summary(error, 120)})"


def loaded_answer(text: str) -> tuple[dict[str, Any], str | None]:
    """The answer file's object, or why it is not one (never raises)."""
    try:
        loaded = json.loads(text)
    except Exception as error:  # not JSON, digits over Python's limit, nesting too deep
        return {}, f"not readable JSON ({summary(error, 120)})"
    if not isinstance(loaded, dict):
        return {}, "not a JSON object"
    return loaded, None


def judge_answers(
    check: AnswerVerification, text: str | None, lines: dict[str, tuple[int, int]]
) -> Verdict:
    """The verdict on an answer file's text (None: absent or unreadable): pure, and total
    (any text is judged)."""
    data: dict[str, Any] = {}
    error = None
    if text is None:
        error = f"no readable {check.answer_file}"
    else:
        data, unreadable = loaded_answer(text)
        error = None if unreadable is None else f"{check.answer_file} is {unreadable}"
    tests: dict[str, TestOutcome] = {}
    reasons: list[str] = []
    for fact in check.facts:
        problem = checked_problem(fact, data.get(fact.key), lines.get(fact.key))
        tests[f"answer:{fact.key}"] = TestOutcome.FAILED if problem else TestOutcome.PASSED
        if problem:
            reasons.append(f"{fact.key}: {problem}")
    value = sum(o is TestOutcome.PASSED for o in tests.values()) / len(tests)
    resolved = value >= check.min_score - 1e-9
    if not resolved and error is None:
        error = f"{len(reasons)} of {len(tests)} answers wrong: " + "; ".join(reasons)[:300]
    failure = None if resolved else Failure.TESTS_FAILED
    return Verdict(resolved, failure, tests, Score(value=value, reasons=reasons), error)


def reference_answer(check: AnswerVerification, workspace: Path) -> str:
    """The right answer file, made from the facts (the task's reference solution)."""
    lines = truths(check, workspace)
    data: dict[str, Any] = {}
    for fact in check.facts:
        if isinstance(fact, TextFact):
            data[fact.key] = fact.accept[0]
        elif isinstance(fact, NumberFact):
            data[fact.key] = int(fact.value) if fact.value.is_integer() else fact.value
        elif isinstance(fact, NamesFact):
            data[fact.key] = list(fact.names)
        else:
            start, end = lines[fact.key]
            data[fact.key] = {"file": fact.file, "start_line": start, "end_line": end}
    return json.dumps(data, indent=2) + "\n"


def stub_answer(check: AnswerVerification) -> str:
    """Every key present, no knowledge: what a validation stub writes."""
    data: dict[str, Any] = {}
    for fact in check.facts:
        if isinstance(fact, LocationFact):
            data[fact.key] = {"file": fact.file, "start_line": 1, "end_line": 1}
        elif isinstance(fact, NamesFact):
            data[fact.key] = []
        elif isinstance(fact, NumberFact):
            data[fact.key] = 0
        else:
            data[fact.key] = "unknown"
    return json.dumps(data, indent=2) + "\n"


def grade_answer(check: AnswerVerification, patch: str, workspace: Path) -> GradeReport:
    """An answer file taken from the patch text, judged against the task's facts."""
    started = time.monotonic()
    try:
        text: str | None = answer_text(patch, check.answer_file)
        problem = None
    except AnswerFileError as error:
        text, problem = None, str(error)
    with harness_step("the task's location facts"):
        lines = truths(check, workspace)
    verdict = judge_answers(check, text, lines)
    return GradeReport(
        verdict.resolved, verdict.failure, verdict.tests, problem or verdict.error,
        time.monotonic() - started, scores={ANSWER_SCORE: verdict.score},
    )  # fmt: skip


class AnswerKind(FileKindDefaults):
    name = "answer"
    model = AnswerVerification

    def grade(
        self,
        task: PreparedTask,
        check: AnswerVerification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        return grade_answer(check, patch, task.workspace)  # no sandbox: nothing of it runs

    def reference_files(self, check: AnswerVerification, workspace: Path) -> Files | None:
        return {check.answer_file: reference_answer(check, workspace)}

    def stub_files(self, check: AnswerVerification) -> Files | None:
        return {check.answer_file: stub_answer(check)}

    def solver_test_args(self, check: AnswerVerification, written: list[str]) -> list[str]:
        return []

    def workspace_problems(self, check: AnswerVerification, workspace: Path) -> list[str]:
        if (workspace / check.answer_file).exists():
            return [f"the answer file {check.answer_file} already exists in the workspace"]
        try:
            truths(check, workspace)
        except ValueError as error:
            return [str(error)]
        return []

    def example(self) -> KindExample:
        code = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return w + h\n"
        check = AnswerVerification(
            answer_file="answer.json",
            facts=[
                TextFact(key="buggy", accept=["perimeter"]),
                LocationFact(key="where", file="shapes.py", anchor="return w + h"),
                NamesFact(key="functions", names=["area", "perimeter"]),
                NumberFact(key="count", value=2),
            ],
        )
        return KindExample(
            workspace={"shapes.py": code},
            hidden={},
            verification=check,
            reference={},  # made from the facts: `reference_files`
            stub={},  # `stub_files`
        )
