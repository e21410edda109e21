"""The leaderboard's database tables: one row per run, one row per attempt.

The tables hold what `harness.results` produces: `runs` holds a `RunInfo` plus when the run
finished and its summary; `attempts` holds one `AttemptResult` per (run, task, epoch), spread
into columns that can be queried and kept whole as JSON in `result`, so nothing is lost.

Only portable column types are used, so the same tables work on SQLite and PostgreSQL.
Datetimes are stored in UTC (a naive datetime is taken to be UTC) and read back timezone-aware.

Not covered here: schema migrations. There is no Alembic yet; `Base.metadata.create_all`
creates missing tables but never alters existing ones, so a change to these columns needs a
fresh database (or a hand-written migration) until migrations exist.
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
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

KEY_LENGTH = 255  # for columns that are keys or indexed (MySQL-friendly, generous elsewhere)


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored in UTC on every backend.

    SQLite keeps no offset, so values are converted to UTC before writing and read back as UTC;
    PostgreSQL's `timestamptz` values are likewise returned in UTC, whatever the session zone.
    """

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
    pass


class RunRow(Base):
    """A `RunInfo`, plus `finished_at` and `summary` once the run is over."""

    __tablename__ = "runs"

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


class AttemptRow(Base):
    """One `AttemptResult`: its queryable fields as columns, and the whole of it in `result`."""

    __tablename__ = "attempts"
    __table_args__ = (UniqueConstraint("run_id", "task_id", "epoch", name="uq_attempts_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(
        String(KEY_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), index=True
    )
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
