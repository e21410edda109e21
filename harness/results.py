"""Attempts and their results: the plain data every other part passes around."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

RESULT_FORMAT_VERSION = 1


class Status(StrEnum):
    RESOLVED = "resolved"
    FAILED = "failed"  # the model's attempt did not solve the task
    ERROR = "error"  # the attempt could not be judged (endpoint down, harness fault)


class Failure(StrEnum):
    """Why an attempt did not resolve. Each maps to exactly one `Status`."""

    TESTS_FAILED = "tests_failed"
    EMPTY_DIFF = "empty_diff"
    AGENT_TIMEOUT = "agent_timeout"
    TURN_LIMIT = "turn_limit"
    TOKEN_LIMIT = "token_limit"
    CONTEXT_OVERFLOW = "context_overflow"
    FORMAT_ERROR = "format_error"
    TOOL_CALL_LIMIT = "tool_call_limit"
    TEST_TIMEOUT = "test_timeout"
    RESOURCE_LIMIT = "resource_limit"  # memory, processes, disk or change size
    GRADER_TAMPERING = "grader_tampering"  # a canary test that must fail passed
    PATCH_REJECTED = "patch_rejected"  # the change could not be taken or applied
    BEHAVIOUR_FAILED = "behaviour_failed"  # a behaviour-only task: a check scored under its bar
    UNJUDGEABLE = "unjudgeable"  # judging what the agent produced raised (`harness.grading.blame`)
    MODEL_API_ERROR = "model_api_error"
    INFRA_ERROR = "infra_error"

    @property
    def status(self) -> Status:
        if self in (Failure.MODEL_API_ERROR, Failure.INFRA_ERROR):
            return Status.ERROR
        return Status.FAILED


class TestOutcome(StrEnum):
    __test__ = False  # a result, not a test class for pytest to collect

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    MISSING = "missing"  # not reported at all, e.g. the file failed to import


class Attempt(BaseModel):
    """One (task, epoch) of a run."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    epoch: int = Field(ge=0)

    @property
    def key(self) -> str:
        return f"{self.task_id}#{self.epoch}"


class Usage(BaseModel):
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    model_latency_s: float = 0.0
    retries: int = 0
    wait_s: float = Field(
        default=0.0,
        description="Seconds spent waiting on the endpoint: failed tries, retry backoff, a free "
        "connection (--max-connections). Not charged to the agent's wall time.",
    )
    estimated_calls: int = Field(
        default=0, description="Model calls whose endpoint reported no usage (estimated)."
    )
    truncated_replies: int = Field(
        default=0, description="Replies cut off at the output token limit (finish_reason length)."
    )

    def add(self, other: Usage) -> None:
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.cost_usd += other.cost_usd
        self.model_calls += other.model_calls
        self.model_latency_s += other.model_latency_s
        self.retries += other.retries
        self.wait_s += other.wait_s
        self.estimated_calls += other.estimated_calls
        self.truncated_replies += other.truncated_replies

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_estimated(self) -> bool:
        """Whether part of `cost_usd` was priced from estimated token counts."""
        return self.estimated_calls > 0 and self.cost_usd > 0


class Score(BaseModel):
    """One graded aspect of an attempt (an eval, a behaviour check): a value in [0, 1] and
    every point taken off, in words. `judged` marks a score given by an LLM judge rather
    than by a program; the two are never averaged together."""

    model_config = ConfigDict(frozen=True)

    value: float = Field(ge=0.0, le=1.0)
    reasons: list[str] = Field(default_factory=list)
    judged: bool = False


class Verdict(BaseModel):
    """How an attempt ended: resolved, or failed (or errored) and why; what grading saw."""

    model_config = ConfigDict(frozen=True)

    status: Status
    failure: Failure | None = None
    error: str | None = None
    tests: dict[str, TestOutcome] = Field(default_factory=dict)
    scores: dict[str, Score] = Field(default_factory=dict)

    @classmethod
    def failed(cls, failure: Failure, message: str) -> Verdict:
        """`failure`'s status, with the message's first line (at most 500 characters)."""
        first_line = message.strip().splitlines()[0] if message.strip() else failure.value
        return cls(status=failure.status, failure=failure, error=first_line[:500])


class AttemptTally(BaseModel):
    """What an attempt did, filled in as it goes: the agent's figures and its change's."""

    turns: int = 0
    tool_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    diff_lines_added: int = 0
    diff_lines_removed: int = 0
    flags: list[str] = Field(default_factory=list)


class AttemptResult(BaseModel):
    format_version: int = RESULT_FORMAT_VERSION
    task_id: str
    epoch: int
    status: Status
    failure: Failure | None = None
    error: str | None = Field(default=None, description="One line saying what went wrong.")
    tests: dict[str, TestOutcome] = Field(default_factory=dict)
    diff_lines_added: int = 0
    diff_lines_removed: int = 0
    usage: Usage = Field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0
    wall_time_s: float = 0.0
    started_at: datetime
    finished_at: datetime
    trajectory: str | None = Field(default=None, description="Path relative to the run folder.")
    flags: list[str] = Field(
        default_factory=list,
        description="Tells of tampering found in the change (`tell: path:line`); for review.",
    )
    scores: dict[str, Score] = Field(
        default_factory=dict,
        description="Scores of the task's behaviour checks by key (e.g. 'intent'), besides "
        "`status`, which says whether the task was solved.",
    )
    sandbox: str | None = Field(
        default=None,
        description="The sandbox backend the attempt ran on, as the harness that ran it saw "
        "it (None: written before the field existed); `runs verify` compares it with run.json.",
    )

    @classmethod
    def of(
        cls,
        attempt: Attempt,
        tally: AttemptTally,
        verdict: Verdict,
        started_at: datetime,
        finished_at: datetime,
        trajectory: str | None,
    ) -> AttemptResult:
        """The result of `attempt`, from what it did and how it ended."""
        return cls(
            task_id=attempt.task_id,
            epoch=attempt.epoch,
            status=verdict.status,
            failure=verdict.failure,
            error=verdict.error,
            tests=verdict.tests,
            scores=verdict.scores,
            diff_lines_added=tally.diff_lines_added,
            diff_lines_removed=tally.diff_lines_removed,
            usage=tally.usage,
            turns=tally.turns,
            tool_calls=tally.tool_calls,
            flags=tally.flags,
            wall_time_s=(finished_at - started_at).total_seconds(),
            started_at=started_at,
            finished_at=finished_at,
            trajectory=trajectory,
        )

    @property
    def resolved(self) -> bool:
        return self.status is Status.RESOLVED

    @property
    def key(self) -> str:
        return f"{self.task_id}#{self.epoch}"


CONFINED_BACKENDS = ("bubblewrap", "docker")  # the backends that confine a command


def is_confined(sandbox: str) -> bool:
    """Whether a run on this sandbox backend was confined (`subprocess` is not)."""
    return sandbox in CONFINED_BACKENDS


# A run warning that starts so: some verdicts of the run could be steered by the agent's code
# unseen (an imported Harbor task whose tests get no canary run: harness/kinds/harbor_kind.py).
# The leaderboard and the gate treat such a run as they treat an unconfined one.
NOT_TAMPER_EVIDENT = "verdicts not tamper-evident"


def tamper_evident(warnings: Iterable[str] | None) -> bool:
    """Whether a run's warnings leave its verdicts tamper-evident (none says otherwise)."""
    return not any(warning.startswith(NOT_TAMPER_EVIDENT) for warning in warnings or ())


# A run warning that starts so: the run came into a store from a folder `runs import
# --unverified` did not replay (`cursorbench/verify.py`); it is never gated or ranked.
UNVERIFIED = "unverified"


def verified(warnings: Iterable[str] | None) -> bool:
    """Whether a stored run is not marked `UNVERIFIED` (imported without replaying it)."""
    return not any(warning.startswith(UNVERIFIED) for warning in warnings or ())


class RunInfo(BaseModel):
    """Who ran what, how: the identity of a run (model, suite, config) x tasks x epochs."""

    id: str
    created_at: datetime
    model: str
    base_url: str
    endpoint_label: str = Field(
        description="Who answered: 'reference-solver' for the embedded solver, else 'external'."
    )
    suite_version: str
    config_hash: str
    config: dict[str, object]
    sandbox: str = Field(description="Sandbox backend actually used, e.g. 'bubblewrap'.")
    confined: bool = Field(
        default=False,  # never used: `_confined_from_backend` fills it from `sandbox`
        description="Whether agent commands and grading ran confined (bubblewrap, docker); an "
        "unconfined run is never ranked beside confined ones.",
    )
    warnings: list[str] = Field(default_factory=list)
    out_dir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _confined_from_backend(cls, data: object) -> object:
        """Records written before the field existed: confined follows from the backend."""
        if isinstance(data, dict) and data.get("confined") is None:
            return {**data, "confined": is_confined(str(data.get("sandbox", "")))}
        return data


def in_order(results: Iterable[AttemptResult]) -> list[AttemptResult]:
    """Results by task id, then epoch: the order tables and summaries list them in."""
    return sorted(results, key=lambda result: (result.task_id, result.epoch))
