"""What the harness needs to know about a task to run and grade one attempt.

The harness does not know how tasks are authored or built (that is
`cursorbench/`); it consumes a `PreparedTask`: a prompt, a prepared workspace
on disk, hidden tests kept outside it, and how to verify the result.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

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
    verification: Verification
    limits: Limits = Field(default_factory=Limits)
    secret_paths: list[Path] = Field(
        default_factory=list,
        description="Host paths the agent must not see (task sources, their git history).",
    )
