"""What the harness needs to know about a task to run and grade one attempt.

The harness does not know how tasks are authored or built (that is
`cursorbench/`); it consumes a `PreparedTask`: a prompt, a prepared workspace
on disk, hidden tests kept outside it, and how to verify the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import Field, model_validator

from harness.kinds.answer import (
    AnswerVerification,
    Fact,
    LocationFact,
    NamesFact,
    NumberFact,
    TextFact,
)
from harness.kinds.base import DEFAULT_PROTECTED_PATHS, Frozen, KindSpec
from harness.kinds.behaviour import BehaviourCheck, BehaviourVerification
from harness.kinds.both import BothVerification
from harness.kinds.docs import DocsVerification
from harness.kinds.mutants import Mutant, MutantsVerification
from harness.kinds.pytest_kind import Verification
from harness.kinds.registry import (
    behaviour_part,
    graded_by_run,
    pytest_part,
    verification_union,
    with_behaviour_checks,
)

__all__ = [
    "DEFAULT_PROTECTED_PATHS", "AnswerVerification", "AnyVerification", "BehaviourCheck",
    "BehaviourVerification", "BothVerification", "DocsVerification", "Fact", "Frozen",
    "Interruption", "Limits", "LocationFact", "Mutant", "MutantsVerification", "NamesFact",
    "NumberFact", "PreparedTask", "TaskVerification", "TextFact", "Verification",
    "behaviour_part", "graded_by_run", "pytest_part", "with_behaviour_checks",
]  # fmt: skip

if TYPE_CHECKING:  # the registry derives the unions at run time; a checker sees the protocol
    TaskVerification: TypeAlias = KindSpec
    AnyVerification: TypeAlias = KindSpec
else:
    TaskVerification = verification_union(in_task_files_only=True)
    """What a task file may name: the kinds of `harness.kinds.registry.KINDS` that
    `in_task_files` (pytest, the default, docs, mutants, answer)."""
    AnyVerification = verification_union(in_task_files_only=False)


class Turn(Frozen):
    """A turn of the session before the task's prompt (an iterate-on-feature task's earlier
    request and the answer to it): the model sees it as if it had happened."""

    role: Literal["user", "assistant"]
    content: str = Field(min_length=1)


def check_earlier_turns(turns: list[Turn]) -> list[Turn]:
    """Earlier turns alternate, from a user's request to an assistant's answer, so that the
    task's prompt follows as the next user turn."""
    for at, turn in enumerate(turns):
        wanted = "user" if at % 2 == 0 else "assistant"
        if turn.role != wanted:
            raise ValueError(f"earlier turn {at + 1} is the {turn.role}'s; want the {wanted}'s")
    if turns and turns[-1].role != "assistant":
        raise ValueError("the earlier turns end with the user's: the prompt is the next one")
    return turns


class Interruption(Frozen):
    """A user message the harness injects mid-run: after the model's turn `after_turn`, or
    right after the first turn that edited a file. If the agent tries to end before it
    was delivered, it is delivered then and the agent goes on.

    With `on_question` it is a simulated user's answer: delivered only when the agent ends
    a turn asking (a reply without tool calls whose text has a '?'), and dropped when the
    agent ends or calls `finish` without asking, so an agent that guesses hears nothing."""

    message: str = Field(min_length=1)
    after_turn: int | None = Field(default=None, ge=1)
    after_first_edit: bool = False
    on_question: bool = False

    @model_validator(mode="after")
    def _one_trigger(self) -> Interruption:
        triggers = [self.after_turn is not None, self.after_first_edit, self.on_question]
        if sum(triggers) != 1:
            raise ValueError(
                "an interruption needs exactly one of after_turn, after_first_edit, on_question"
            )
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
        default=None,
        description="Names of the tools offered (harness/agent/tools.py) [default: all].",
    )
    interruptions: list[Interruption] = Field(default_factory=list)
    earlier_turns: list[Turn] = Field(
        default_factory=list, description="The session before the prompt (`Turn`)."
    )
    secret_paths: list[Path] = Field(
        default_factory=list,
        description="Host paths the agent must not see (task sources, their git history).",
    )
    python_env: Path | None = Field(
        default=None,
        description="The task's own Python environment (harness/envs.py), shown in its "
        "sandboxes instead of the harness's [default: the harness's].",
    )
    restored_functions: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Functions the reference restores, by file (`f`, `C.m`): the twin run "
        "stubs them (harness/grading/twin.py).",
    )
