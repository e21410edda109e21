"""The leaderboard's database tables (SQLAlchemy 2.x ORM), revision `HEAD` of the migrations.

Dimensions: `models`, `suites` (name + version; scores compare only within a version),
`tasks` (category, suite), `training_runs` and their `checkpoints` (step, tokens seen, the
gate's decision, promoted or not, the folder). Facts: `runs` (model, checkpoint, suite,
harness version, git sha, config and its hash, epochs, status, start and end) and one
insert-only `attempts` row per (run, task, epoch), with its eval scores (`attempt_scores`),
extra metrics by key (`attempt_metrics`) and trajectory reference (`trajectories`: a path
and/or a blob, with its sha256). `run_summaries` and `run_breakdowns` are computed from the
facts when a run finishes, so the leaderboard reads a row per run instead of every attempt.

Run ids are text: new runs get a UUID (32 hex digits), so runs made on different machines
merge; older 12-digit ids stay valid. Every constraint is named (`NAMING`). Only portable
column types are used, so the same tables work on SQLite and PostgreSQL; datetimes are stored
in UTC and read back timezone-aware.

Not covered here: creating or altering tables (`leaderboard.migrate`, Alembic in
`leaderboard/migrations`), and reading or writing rows (`leaderboard.store`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.expression import false

KEY_LENGTH = 255  # for columns that are keys or indexed (MySQL-friendly, generous elsewhere)

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

RUN_STATUSES = ("running", "complete", "partial")
# "baseline": a training run's first evaluated checkpoint, promoted with nothing to compare to
GATE_DECISIONS = ("pass", "fail", "inconclusive", "error", "baseline")


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored in UTC on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else _as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else _as_utc(value)


def _as_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


# --- dimensions ---------------------------------------------------------------------------


class ModelRow(Base):
    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(KEY_LENGTH))


class SuiteRow(Base):
    __tablename__ = "suites"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(KEY_LENGTH))
    version: Mapped[str] = mapped_column(String(KEY_LENGTH))


class TaskRow(Base):
    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("suite_id", "task_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id", ondelete="CASCADE"))
    task_id: Mapped[str] = mapped_column(String(KEY_LENGTH))
    category: Mapped[str | None] = mapped_column(String(KEY_LENGTH))


class TrainingRunRow(Base):
    __tablename__ = "training_runs"
    __table_args__ = (UniqueConstraint("name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(KEY_LENGTH))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class CheckpointRow(Base):
    __tablename__ = "checkpoints"
    __table_args__ = (UniqueConstraint("training_run_id", "step"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    training_run_id: Mapped[str] = mapped_column(ForeignKey("training_runs.id", ondelete="CASCADE"))
    step: Mapped[int] = mapped_column(BigInteger)
    tokens_seen: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    gate_decision: Mapped[str | None] = mapped_column(String(16))
    gate_baseline: Mapped[str | None] = mapped_column(String(KEY_LENGTH))
    gate_detail: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    gated_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # promoted by the training run's gate: the first checkpoint evaluated, then each that
    # passed against the promoted one before it; the latest promoted is the run's best
    promoted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    path: Mapped[str | None] = mapped_column(Text)  # the folder it was served from


# --- facts ----------------------------------------------------------------------------------


class RunRow(Base):
    """A `RunInfo`, its dimensions, and `finished_at`, `status` and `summary` once it ends."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_config_hash", "config_hash"),
        Index("ix_runs_created_at", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    model: Mapped[str] = mapped_column(String(KEY_LENGTH))
    base_url: Mapped[str] = mapped_column(Text)
    endpoint_label: Mapped[str] = mapped_column(String(KEY_LENGTH))
    suite_version: Mapped[str] = mapped_column(String(KEY_LENGTH))
    config_hash: Mapped[str] = mapped_column(String(KEY_LENGTH))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    sandbox: Mapped[str] = mapped_column(String(KEY_LENGTH))
    warnings: Mapped[list[str]] = mapped_column(JSON)
    out_dir: Mapped[str | None] = mapped_column(Text)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id"))
    suite_id: Mapped[int | None] = mapped_column(ForeignKey("suites.id"))
    checkpoint_id: Mapped[str | None] = mapped_column(
        ForeignKey("checkpoints.id", ondelete="SET NULL")
    )
    harness_version: Mapped[str | None] = mapped_column(String(KEY_LENGTH))
    git_sha: Mapped[str | None] = mapped_column(String(64))
    epochs: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="running", server_default="running")
    # attempts planned: the config's tasks x epochs (None when it does not say); kept apart
    # from `config` so lists read one integer per run, not every run's task list (0004)
    planned: Mapped[int | None] = mapped_column(Integer)


class AttemptRow(Base):
    """One `AttemptResult`, written once: queryable fields as columns, the whole in `result`."""

    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("run_id", "task_id", "epoch", name="uq_attempts_key"),
        Index("ix_attempts_run_id", "run_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    task_id: Mapped[str] = mapped_column(String(KEY_LENGTH))
    epoch: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))
    failure: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    resolved: Mapped[bool] = mapped_column(Boolean)
    tests: Mapped[dict[str, str]] = mapped_column(JSON)
    diff_lines_added: Mapped[int] = mapped_column(Integer)
    diff_lines_removed: Mapped[int] = mapped_column(Integer)
    tokens_in: Mapped[int] = mapped_column(BigInteger)
    tokens_out: Mapped[int] = mapped_column(BigInteger)
    cost_usd: Mapped[float] = mapped_column(Float)
    model_calls: Mapped[int] = mapped_column(Integer)
    model_latency_s: Mapped[float] = mapped_column(Float)
    retries: Mapped[int] = mapped_column(Integer)
    turns: Mapped[int] = mapped_column(Integer)
    tool_calls: Mapped[int] = mapped_column(Integer)
    wall_time_s: Mapped[float] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime)
    finished_at: Mapped[datetime] = mapped_column(UtcDateTime)
    trajectory: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    flags: Mapped[list[str] | None] = mapped_column(JSON(none_as_null=True))
    tests_passed: Mapped[int | None] = mapped_column(Integer)
    tests_total: Mapped[int | None] = mapped_column(Integer)


ATTEMPT_KEY = ("run_id", "task_id", "epoch")
ATTEMPT_REF = ("attempts.run_id", "attempts.task_id", "attempts.epoch")


class AttemptScoreRow(Base):
    """One eval's score of an attempt (0..1): `resolved`, `tests_passed`, a judge, ..."""

    __tablename__ = "attempt_scores"
    __table_args__ = (
        ForeignKeyConstraint(
            ATTEMPT_KEY, ATTEMPT_REF, name="fk_attempt_scores_attempts", ondelete="CASCADE"
        ),
    )

    run_id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    task_id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    value: Mapped[float] = mapped_column(Float)


class AttemptMetricRow(Base):
    """A metric of an attempt that has no column of its own (`wait_s`, `retries`, ...)."""

    __tablename__ = "attempt_metrics"
    __table_args__ = (
        ForeignKeyConstraint(
            ATTEMPT_KEY, ATTEMPT_REF, name="fk_attempt_metrics_attempts", ondelete="CASCADE"
        ),
    )

    run_id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    task_id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    value: Mapped[float] = mapped_column(Float)


class TrajectoryRow(Base):
    """Where an attempt's trajectory is: a path (relative to the run folder) and/or its bytes."""

    __tablename__ = "trajectories"
    __table_args__ = (
        ForeignKeyConstraint(
            ATTEMPT_KEY, ATTEMPT_REF, name="fk_trajectories_attempts", ondelete="CASCADE"
        ),
    )

    run_id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    task_id: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str | None] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    blob: Mapped[bytes | None] = mapped_column(LargeBinary)


# --- computed when a run finishes ------------------------------------------------------------


class RunSummaryRow(Base):
    __tablename__ = "run_summaries"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    computed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    attempts: Mapped[int] = mapped_column(Integer)
    tasks: Mapped[int] = mapped_column(Integer)
    resolved: Mapped[int] = mapped_column(Integer)
    errors: Mapped[int] = mapped_column(Integer)
    resolved_rate: Mapped[float] = mapped_column(Float)
    rate_low: Mapped[float] = mapped_column(Float)
    rate_high: Mapped[float] = mapped_column(Float)
    pass_at_1: Mapped[float] = mapped_column(Float)
    cost_usd: Mapped[float] = mapped_column(Float)
    tokens_in: Mapped[int] = mapped_column(BigInteger)
    tokens_out: Mapped[int] = mapped_column(BigInteger)
    latency_s: Mapped[float] = mapped_column(Float)  # mean model latency per attempt
    wall_time_s: Mapped[float] = mapped_column(Float)  # mean per attempt
    tampering: Mapped[int] = mapped_column(Integer)
    flagged: Mapped[int] = mapped_column(Integer)
    # the mean over tasks of pass@k, k = pass_k (the run's epochs); degenerate: every task
    # scored the same, so the rate's interval was not measured (NULL: summarised before 0003)
    pass_at_k: Mapped[float | None] = mapped_column(Float)
    pass_k: Mapped[int | None] = mapped_column(Integer)
    degenerate: Mapped[bool | None] = mapped_column(Boolean)


class RunBreakdownRow(Base):
    """A run's mean per category or per eval, with its 95% interval."""

    __tablename__ = "run_breakdowns"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # category | eval
    key: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    mean: Mapped[float] = mapped_column(Float)
    low: Mapped[float] = mapped_column(Float)
    high: Mapped[float] = mapped_column(Float)
