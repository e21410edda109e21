"""The fast write of many attempt fact rows, used by `SqlStore.record_many` (and so `record`).

Each `AttemptResult` becomes one tuple of column values, built cheaply: the whole result is
serialised to JSON once by pydantic (`model_dump_json`, in Rust), the queryable fields are read
off the model, and the tuples go to the database driver directly, in batches:

- SQLite: `INSERT ... ON CONFLICT DO NOTHING` through the driver's `executemany`;
- PostgreSQL: `COPY` straight into `attempts` under a savepoint; if a key exists already, back
  to the savepoint, `COPY` into a temporary table and `INSERT ... SELECT ... ON CONFLICT DO
  NOTHING` from it (small batches use the driver's pipelined `executemany`).

Both keep the store's insert-only semantics: a row whose UNIQUE(run, task, epoch) key exists
already (written before, by another writer meanwhile, or twice in the same batch) is skipped,
the first write stands. The caller owns the transaction.

Not covered here: the metric, score and trajectory rows (`leaderboard.rows`), transactions and
error messages (`leaderboard.store`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic_core import to_json
from sqlalchemy import Connection

from harness.results import AttemptResult, Failure, Status, TestOutcome
from leaderboard.schema import AttemptRow

BATCH_ROWS = 10_000  # rows per executemany / COPY
COPY_MIN_ROWS = 64  # below this, PostgreSQL gets a pipelined executemany instead of COPY

COLUMNS = (
    "run_id",
    "task_id",
    "epoch",
    "status",
    "failure",
    "error",
    "resolved",
    "tests",
    "diff_lines_added",
    "diff_lines_removed",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "model_calls",
    "model_latency_s",
    "retries",
    "turns",
    "tool_calls",
    "wall_time_s",
    "started_at",
    "finished_at",
    "trajectory",
    "result",
    "flags",
    "tests_passed",
    "tests_total",
)
_VALUES: dict[Any, str] = {member: member.value for member in (*Status, *Failure)}
_TABLE = AttemptRow.__tablename__
_COLUMN_LIST = ", ".join(COLUMNS)


def attempt_tuple(
    run_id: str, result: AttemptResult, as_time: Callable[[datetime], Any]
) -> tuple[Any, ...]:
    """The attempt's row in `COLUMNS` order, its JSON columns already serialised."""
    usage = result.usage
    tests = result.tests
    failure = result.failure
    return (
        run_id,
        result.task_id,
        result.epoch,
        _VALUES[result.status],
        None if failure is None else _VALUES[failure],
        result.error,
        result.status is Status.RESOLVED,
        to_json(tests).decode() if tests else "{}",
        result.diff_lines_added,
        result.diff_lines_removed,
        usage.tokens_in,
        usage.tokens_out,
        usage.cost_usd,
        usage.model_calls,
        usage.model_latency_s,
        usage.retries,
        result.turns,
        result.tool_calls,
        result.wall_time_s,
        as_time(result.started_at),
        as_time(result.finished_at),
        result.trajectory,
        _result_json(result),
        to_json(result.flags).decode() if result.flags else "[]",
        sum(outcome is TestOutcome.PASSED for outcome in tests.values()),
        len(tests),
    )


def _result_json(result: AttemptResult) -> str:
    """The whole result as JSON. pydantic writes a non-finite float as null, which would not
    read back; such rare results go through json.dumps (NaN, Infinity), as the ORM did."""
    usage = result.usage
    floats = (usage.cost_usd, usage.model_latency_s, usage.wait_s, result.wall_time_s)
    if all(map(math.isfinite, floats)) and all(
        math.isfinite(score.value) for score in result.scores.values()
    ):
        return result.model_dump_json()
    return json.dumps(result.model_dump(mode="json"))


def insert_attempts(conn: Connection, run_id: str, results: Sequence[AttemptResult]) -> None:
    """Insert the results' fact rows, skipping any whose key exists (see module docstring)."""
    if not results:
        return
    dialect = conn.dialect
    as_time = AttemptRow.__table__.c.started_at.type.bind_processor(dialect) or _same
    raw = conn.connection.driver_connection
    for batch in _batches(results, BATCH_ROWS):
        values = [attempt_tuple(run_id, result, as_time) for result in batch]
        if dialect.name == "postgresql":
            _insert_postgresql(raw, values)
        else:
            _insert_sqlite(raw, values)


def _insert_sqlite(raw: Any, values: list[tuple[Any, ...]]) -> None:
    marks = ", ".join("?" * len(COLUMNS))
    statement = f"INSERT INTO {_TABLE} ({_COLUMN_LIST}) VALUES ({marks}) ON CONFLICT DO NOTHING"
    cursor = raw.cursor()
    try:
        cursor.executemany(statement, values)
    finally:
        cursor.close()


def _insert_postgresql(raw: Any, values: list[tuple[Any, ...]]) -> None:
    from psycopg.errors import UniqueViolation  # psycopg is an extra: only PostgreSQL needs it

    with raw.cursor() as cursor:
        if len(values) < COPY_MIN_ROWS:
            marks = ", ".join(["%s"] * len(COLUMNS))
            cursor.executemany(
                f"INSERT INTO {_TABLE} ({_COLUMN_LIST}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                values,
            )
            return
        # The common bulk case, a new run: straight COPY, all or nothing. A key already there
        # (a retried import, another writer) undoes it and the staged insert below skips it.
        cursor.execute("SAVEPOINT cb_bulk_copy")
        try:
            with cursor.copy(f"COPY {_TABLE} ({_COLUMN_LIST}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
        except UniqueViolation:
            cursor.execute("ROLLBACK TO SAVEPOINT cb_bulk_copy")
        else:
            cursor.execute("RELEASE SAVEPOINT cb_bulk_copy")
            return
        staging = "cb_attempts_in"
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} ON COMMIT DELETE ROWS AS "
            f"SELECT {_COLUMN_LIST} FROM {_TABLE} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {staging}")
        with cursor.copy(f"COPY {staging} ({_COLUMN_LIST}) FROM STDIN") as copy:
            for row in values:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO {_TABLE} ({_COLUMN_LIST}) SELECT {_COLUMN_LIST} FROM {staging} "
            "ON CONFLICT DO NOTHING"
        )


def _batches(items: Sequence[AttemptResult], size: int) -> Iterator[Sequence[AttemptResult]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _same(value: Any) -> Any:
    return value
