"""What the harness needs to know about a task to run and grade one attempt.

The harness does not know how tasks are authored or built (that is
`cursorbench/`); it consumes a `PreparedTask`: a prompt, a prepared workspace
on disk, hidden tests kept outside it, and how to verify the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    "tests/**",
    "test/**",
    "**/conftest.py",
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Verification(Frozen):
    """How an attempt is scored: pytest over the workspace plus hidden tests."""

    kind: Literal["pytest"] = "pytest"

    test_args: list[str] = Field(
        default_factory=lambda: ["tests"],
        description="Arguments to pytest (paths or node ids), run from the workspace root.",
    )
    fail_to_pass: list[str] = Field(
        min_length=1, description="pytest node ids that fail before and must pass after."
    )
    pass_to_pass: list[str] = Field(
        default_factory=list, description="pytest node ids that pass before and must still pass."
    )
    hidden_tests: list[str] = Field(
        default_factory=list,
        description="Workspace-relative test files hidden from the agent, added at grading.",
    )
    protected_paths: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PROTECTED_PATHS),
        description="Globs of test files and runner config restored from the task before grading.",
    )


class BehaviourCheck(Frozen):
    """One behaviour check: a registered grader (`harness.scoring`) and its parameters."""

    grader: str = Field(min_length=1, description="Name of a registered grader, e.g. 'intent'.")
    key: str | None = Field(
        default=None, description="Name of the score in the results [default: the grader's]."
    )
    params: dict[str, Any] = Field(default_factory=dict)
    threshold: float = Field(
        default=0.5, ge=0, le=1, description="Score at or above which the check counts as kept."
    )

    @property
    def score_key(self) -> str:
        return self.key or self.grader


class BehaviourVerification(Frozen):
    """Scored by registered graders over the final state and the trajectory; no tests run."""

    kind: Literal["behaviour"] = "behaviour"
    checks: list[BehaviourCheck] = Field(min_length=1)
    protected_paths: list[str] = Field(default_factory=list)


class BothVerification(Frozen):
    """pytest decides `resolved`; the behaviour checks add scores next to it."""

    kind: Literal["both"] = "both"
    pytest: Verification
    behaviour: BehaviourVerification

    @property
    def protected_paths(self) -> list[str]:
        return self.pytest.protected_paths


def _verification_kind(value: Any) -> str:
    """A verification without `kind` is pytest (every task file written before the union)."""
    if isinstance(value, dict):
        return str(value.get("kind", "pytest"))
    return str(getattr(value, "kind", "pytest"))


class DocsVerification(Verification):
    """pytest (the module's doctests among the tests) plus a structural check: each named
    function's docstring has an example that calls it (`harness/doctests.py`)."""

    kind: Literal["docs"] = "docs"  # type: ignore[assignment]
    documented_file: str = Field(min_length=1, description="The module whose API is documented.")
    documented: list[str] = Field(
        min_length=1, description="Functions (`name` or `Class.method`) that need an example."
    )


class Mutant(Frozen):
    """One hidden mutant: `old` replaced by `new` (exactly one occurrence) in `file`."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    file: str = Field(min_length=1)
    old: str = Field(min_length=1)
    new: str


class MutantsVerification(Frozen):
    """The agent writes tests; graded by the hidden mutants they kill (`harness/mutants.py`).

    Only the agent's test files cross into grading; they must pass on the workspace's own
    code and on a behaviour-preserving rewrite of it, and fail on at least
    `min_kill_share` of the mutants."""

    kind: Literal["mutants"] = "mutants"
    test_files: list[str] = Field(
        default_factory=lambda: ["tests/**/test_*.py"],
        description="Globs of the test files the agent writes; nothing else of the change is used.",
    )
    mutants: list[Mutant] = Field(min_length=1)
    min_kill_share: float = Field(default=0.8, gt=0, le=1)
    min_tests: int = Field(default=3, ge=1, description="Agent tests that must pass unmutated.")

    @model_validator(mode="after")
    def _unique_ids(self) -> MutantsVerification:
        ids = [mutant.id for mutant in self.mutants]
        if len(ids) != len(set(ids)):
            raise ValueError("mutant ids must be unique")
        return self

    @property
    def hidden_tests(self) -> list[str]:
        return []  # the deleted tests are the reference answer, not hidden tests

    @property
    def protected_paths(self) -> list[str]:
        return list(DEFAULT_PROTECTED_PATHS)


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
    """The agent writes a JSON answer file; graded against facts the task knows
    (`harness/answers.py`). No code of the agent's runs."""

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


TaskVerification = Annotated[
    Annotated[Verification, Tag("pytest")]
    | Annotated[DocsVerification, Tag("docs")]
    | Annotated[MutantsVerification, Tag("mutants")]
    | Annotated[AnswerVerification, Tag("answer")],
    Discriminator(_verification_kind),
]
"""What a task file may name: pytest (the default), docs, mutants or answer."""

AnyVerification = Annotated[
    Annotated[Verification, Tag("pytest")]
    | Annotated[DocsVerification, Tag("docs")]
    | Annotated[MutantsVerification, Tag("mutants")]
    | Annotated[AnswerVerification, Tag("answer")]
    | Annotated[BehaviourVerification, Tag("behaviour")]
    | Annotated[BothVerification, Tag("both")],
    Discriminator(_verification_kind),
]


def graded_by_run(verification: AnyVerification) -> bool:
    """Whether `harness.grading.grade` decides the verdict (every kind but behaviour)."""
    return not isinstance(verification, BehaviourVerification)


def pytest_part(verification: AnyVerification) -> Verification | None:
    """The pytest verification of any kind, if it has one."""
    if isinstance(verification, BothVerification):
        return verification.pytest
    return verification if isinstance(verification, Verification) else None


def behaviour_part(verification: AnyVerification) -> BehaviourVerification | None:
    """The behaviour checks of any kind, if it has some."""
    if isinstance(verification, BothVerification):
        return verification.behaviour
    return verification if isinstance(verification, BehaviourVerification) else None


def with_behaviour_checks(verification: Verification, graders: list[str]) -> AnyVerification:
    """A pytest verification plus behaviour checks by grader name (`Task.behaviour_checks`)."""
    if not graders:
        return verification
    checks = [BehaviourCheck(grader=name) for name in graders]
    return BothVerification(pytest=verification, behaviour=BehaviourVerification(checks=checks))


class Interruption(Frozen):
    """A user message the harness injects mid-run: after the model's turn `after_turn`, or
    right after the first turn that edited a file. If the agent tries to end before it
    was delivered, it is delivered then and the agent goes on."""

    message: str = Field(min_length=1)
    after_turn: int | None = Field(default=None, ge=1)
    after_first_edit: bool = False

    @model_validator(mode="after")
    def _one_trigger(self) -> Interruption:
        if (self.after_turn is None) == (not self.after_first_edit):
            raise ValueError("an interruption needs exactly one of after_turn, after_first_edit")
        return self


class Limits(Frozen):
    """Budgets for one attempt."""

    max_turns: int = Field(default=50, ge=1, description="Model calls per attempt.")
    max_tokens: int = Field(
        default=2_000_000, ge=1, description="Prompt plus completion tokens per attempt."
    )
    wall_time_s: float = Field(default=1800.0, gt=0, description="Wall time for the agent.")
    command_timeout_s: float = Field(
        default=120.0, gt=0, description="Default timeout of one `run` tool command."
    )
    test_timeout_s: float = Field(default=300.0, gt=0, description="Timeout of the grading run.")


class PreparedTask(Frozen):
    """A task ready to attempt: everything lives on disk under the harness's cache."""

    id: str
    prompt: str
    workspace: Path = Field(description="Prepared workspace, copied per attempt, never modified.")
    hidden_dir: Path = Field(description="Hidden test files, laid out as in the workspace.")
    verification: AnyVerification
    limits: Limits = Field(default_factory=Limits)
    system_prompt: str | None = Field(
        default=None, description="Replaces the agent's system prompt; `{root}` is filled in."
    )
    tools: list[str] | None = Field(
        default=None, description="Names of the tools offered (harness/tools.py) [default: all]."
    )
    interruptions: list[Interruption] = Field(default_factory=list)
    secret_paths: list[Path] = Field(
        default_factory=list,
        description="Host paths the agent must not see (task sources, their git history).",
    )
