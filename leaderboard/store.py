"""Where runs and their attempts are kept: the `Store` interface and its SQL implementation.

`open_store(url)` opens (and if needed creates) a database at any SQLAlchemy URL, e.g.
`sqlite:///runs/leaderboard.db` or `postgresql+psycopg://user:pass@host/db`, and returns a
`SqlStore`. Writes are idempotent, so an interrupted run can be resumed and several processes
(or machines, with PostgreSQL) can write to the same database:

- `start_run` inserts the run once; starting it again with the same config hash does nothing,
  with a different config hash it is refused.
- `record` upserts on (run, task, epoch): recording an attempt again replaces it.

SQLite files are opened in WAL mode with a busy timeout, so concurrent writers wait for each
other rather than fail; WAL needs a local filesystem (not NFS). Every failure to open, read or
write is raised as `StoreError` with a one-line message naming the URL, password masked.

Not covered here: the dashboard and CLI that read the store (only the read helpers they need
are), and schema migrations (no Alembic yet; missing tables are created, existing ones are never
altered, see `leaderboard.schema`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError
from sqlalchemy import URL, Engine, bindparam, create_engine, delete, event, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    ProgrammingError,
    SQLAlchemyError,
    StatementError,
)
from sqlalchemy.orm import Session

from harness.errors import CursorBenchError
from harness.results import AttemptResult, RunInfo
from leaderboard.schema import AttemptRow, Base, RunRow

BUSY_TIMEOUT_S = 30  # how long a SQLite writer waits for another one before giving up
CONNECT_TIMEOUT_S = 10  # how long to wait for a PostgreSQL server before giving up
MAX_REASON_CHARS = 300
CREATE_TRIES = 5  # see _create_tables


class StoreError(CursorBenchError):
    """The store could not be opened, read or written. The message is one line."""


@runtime_checkable
class Store(Protocol):
    """What a benchmark run needs from the place its results are kept."""

    def start_run(self, run: RunInfo) -> None: ...

    def record(self, run_id: str, result: AttemptResult) -> None: ...

    def attempt_keys(self, run_id: str) -> set[str]:
        """Keys (`task_id#epoch`) of the attempts already recorded for the run."""
        ...

    def finish_run(self, run_id: str, summary: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def open_store(url: str, *, connect_args: dict[str, Any] | None = None) -> SqlStore:
    """Open the database at `url`, creating its tables (and a SQLite file's folder) if missing.

    `connect_args` go to the driver's connect(), e.g. `{"options": "-csearch_path=myschema"}`
    for psycopg.
    """
    shown = mask_url(url)
    try:
        parsed = make_url(url)
    except (SQLAlchemyError, ValueError) as exc:
        raise StoreError(_message("open", shown, exc, url, "not a valid database URL: ")) from exc
    try:
        args = dict(connect_args or {})
        sqlite = parsed.get_backend_name() == "sqlite"
        if sqlite:
            _make_sqlite_folder(parsed)
            args.setdefault("timeout", BUSY_TIMEOUT_S)
        elif _takes_connect_timeout(parsed):
            args.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        engine = create_engine(parsed, connect_args=args, pool_pre_ping=not sqlite)
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        raise StoreError(_message("open", shown, exc, url)) from exc
    if sqlite:
        event.listen(engine, "connect", _set_sqlite_pragmas)
    try:
        _create_tables(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(_message("open", shown, exc, url)) from exc
    return SqlStore(engine, url)


class SqlStore:
    """A `Store` in a SQL database; see the module docstring for its semantics."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self.url = mask_url(url)  # safe to print

    @property
    def engine(self) -> Engine:
        return self._engine

    # --- writes ---------------------------------------------------------------------------

    def start_run(self, run: RunInfo) -> None:
        with self._errors("write to"):
            try:
                self._start_run_once(run)
            except IntegrityError:  # another writer inserted it between our select and insert
                self._start_run_once(run)

    def record(self, run_id: str, result: AttemptResult) -> None:
        values = _attempt_values(run_id, result)
        with self._errors("write to"):
            try:
                self._record_once(values)
            except IntegrityError:  # another writer inserted it: the retry finds it, updates
                self._record_once(values)

    def finish_run(self, run_id: str, summary: dict[str, Any]) -> None:
        with self._errors("write to"), self._engine.begin() as conn:
            done = conn.execute(
                update(RunRow)
                .where(RunRow.id == run_id)
                .values(finished_at=datetime.now(UTC), summary=summary)
            )
            if done.rowcount == 0:
                raise StoreError(f"cannot finish run {run_id!r}: no such run in '{self.url}'")

    def delete_attempts(self, run_id: str, keys: set[str]) -> None:
        """Forget the given attempts (`task_id#epoch` keys) of a run; unknown keys are ignored."""
        params = [{"b_task": task, "b_epoch": epoch} for task, epoch in map(_split_key, keys)]
        if not params:
            return
        statement = delete(AttemptRow).where(
            AttemptRow.run_id == run_id,
            AttemptRow.task_id == bindparam("b_task"),
            AttemptRow.epoch == bindparam("b_epoch"),
        )
        with self._errors("write to"), self._engine.begin() as conn:
            conn.execute(statement, params)

    def close(self) -> None:
        self._engine.dispose()

    # --- reads ----------------------------------------------------------------------------

    def attempt_keys(self, run_id: str) -> set[str]:
        query = select(AttemptRow.task_id, AttemptRow.epoch).where(AttemptRow.run_id == run_id)
        with self._errors("read from"), self._engine.connect() as conn:
            return {f"{task}#{epoch}" for task, epoch in conn.execute(query)}

    def runs(self) -> list[RunInfo]:
        """Every run, newest first."""
        with self._errors("read from"), Session(self._engine) as session:
            rows = session.scalars(select(RunRow)).all()
            infos = [_run_info(row) for row in rows]
        return sorted(infos, key=lambda run: (run.created_at, run.id), reverse=True)

    def run(self, run_id: str) -> RunInfo | None:
        with self._errors("read from"), Session(self._engine) as session:
            row = session.get(RunRow, run_id)
            return None if row is None else _run_info(row)

    def attempts(self, run_id: str) -> list[AttemptResult]:
        """The run's attempts as recorded, ordered by task id, then epoch."""
        query = select(AttemptRow.result).where(AttemptRow.run_id == run_id)
        with self._errors("read from"), self._engine.connect() as conn:
            stored = conn.scalars(query).all()
        try:
            results = [AttemptResult.model_validate(data) for data in stored]
        except ValidationError as exc:
            reason = _one_line(str(exc))
            raise StoreError(f"cannot read attempts of run {run_id!r}: {reason}") from exc
        return sorted(results, key=lambda result: (result.task_id, result.epoch))

    # --- internals ------------------------------------------------------------------------

    def _start_run_once(self, run: RunInfo) -> None:
        with self._engine.begin() as conn:
            found = conn.execute(select(RunRow.config_hash).where(RunRow.id == run.id)).first()
            if found is None:
                conn.execute(insert(RunRow).values(**_run_values(run)))
            elif found.config_hash != run.config_hash:
                raise StoreError(
                    f"run {run.id!r} already exists in '{self.url}' with config hash "
                    f"{found.config_hash!r}, not {run.config_hash!r}; use a new run id"
                )

    def _record_once(self, values: dict[str, Any]) -> None:
        run_id = values["run_id"]
        with self._engine.begin() as conn:
            found = conn.execute(
                select(AttemptRow.id).where(
                    AttemptRow.run_id == run_id,
                    AttemptRow.task_id == values["task_id"],
                    AttemptRow.epoch == values["epoch"],
                )
            ).scalar_one_or_none()
            if found is not None:
                conn.execute(update(AttemptRow).where(AttemptRow.id == found).values(**values))
                return
            if conn.execute(select(RunRow.id).where(RunRow.id == run_id)).first() is None:
                raise StoreError(
                    f"cannot record an attempt of run {run_id!r}: no such run in '{self.url}' "
                    "(start_run it first)"
                )
            conn.execute(insert(AttemptRow).values(**values))

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(_message(action, self.url, exc, self._url)) from exc


# --- rows <-> harness data ------------------------------------------------------------------


def _run_values(run: RunInfo) -> dict[str, Any]:
    as_json = run.model_dump(mode="json", include={"config", "warnings"})
    return {
        "id": run.id,
        "created_at": run.created_at,
        "model": run.model,
        "base_url": run.base_url,
        "endpoint_label": run.endpoint_label,
        "suite_version": run.suite_version,
        "config_hash": run.config_hash,
        "config": as_json["config"],
        "sandbox": run.sandbox,
        "warnings": as_json["warnings"],
        "out_dir": run.out_dir,
    }


def _run_info(row: RunRow) -> RunInfo:
    return RunInfo(
        id=row.id,
        created_at=row.created_at,
        model=row.model,
        base_url=row.base_url,
        endpoint_label=row.endpoint_label,
        suite_version=row.suite_version,
        config_hash=row.config_hash,
        config=row.config,
        sandbox=row.sandbox,
        warnings=row.warnings,
        out_dir=row.out_dir,
    )


def _attempt_values(run_id: str, result: AttemptResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "run_id": run_id,
        "task_id": result.task_id,
        "epoch": result.epoch,
        "status": result.status.value,
        "failure": None if result.failure is None else result.failure.value,
        "error": result.error,
        "resolved": result.resolved,
        "tests": {node: outcome.value for node, outcome in result.tests.items()},
        "diff_lines_added": result.diff_lines_added,
        "diff_lines_removed": result.diff_lines_removed,
        "tokens_in": usage.tokens_in,
        "tokens_out": usage.tokens_out,
        "cost_usd": usage.cost_usd,
        "model_calls": usage.model_calls,
        "model_latency_s": usage.model_latency_s,
        "retries": usage.retries,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "wall_time_s": result.wall_time_s,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "trajectory": result.trajectory,
        "result": result.model_dump(mode="json"),
    }


def _split_key(key: str) -> tuple[str, int]:
    task, sep, epoch = key.rpartition("#")
    if not sep or not task or not epoch.isdigit():
        raise ValueError(f"not an attempt key (task_id#epoch): {key!r}")
    return task, int(epoch)


# --- opening and error messages -------------------------------------------------------------


def _make_sqlite_folder(url: URL) -> None:
    database = url.database
    if not database or database == ":memory:" or url.query.get("uri") == "true":
        return
    folder = Path(database).expanduser().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"cannot create folder '{folder}': {exc.strerror or exc}") from exc


def _create_tables(engine: Engine) -> None:
    """Create missing tables, even while other processes open the same new database.

    `create_all` checks, then creates: two processes can both see no table and both create it.
    The loser gets "already exists" (or, on PostgreSQL, a duplicate key in its catalog) and
    simply checks again; connection errors are raised at once, without retrying.
    """
    with engine.connect() as conn:
        for attempt in range(1, CREATE_TRIES + 1):
            try:
                with conn.begin():
                    Base.metadata.create_all(conn)
                return
            except (OperationalError, ProgrammingError, IntegrityError):
                if attempt == CREATE_TRIES or conn.invalidated:
                    raise
                time.sleep(0.05 * attempt)


def _takes_connect_timeout(url: URL) -> bool:
    return (
        url.get_backend_name() == "postgresql"
        and url.get_driver_name() in ("psycopg", "psycopg2")
        and "connect_timeout" not in url.query
    )


def _set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


_PASSWORD_IN_URL = re.compile(r"(://[^:/@]*):[^@]*@")
_BACKGROUND = re.compile(r"\(Background on this error at: [^)]*\)")


def mask_url(url: str) -> str:
    """The URL with its password, if any, replaced by `***`."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError):
        return _PASSWORD_IN_URL.sub(r"\1:***@", url)


def _message(action: str, shown_url: str, exc: BaseException, url: str, prefix: str = "") -> str:
    if isinstance(exc, ImportError):
        reason = f"database driver not installed ({exc})"
    elif isinstance(exc, NoSuchModuleError):
        reason = f"unknown database dialect or driver ({exc})"
    elif isinstance(exc, StatementError) and exc.orig is not None:
        reason = str(exc.orig)  # the driver's words, without SQL text and parameters
    else:
        reason = str(exc)
    reason = _one_line(_BACKGROUND.sub("", reason)) or type(exc).__name__
    password = _password(url)
    if password:
        reason = reason.replace(password, "***")
    return f"cannot {action} database '{shown_url}': {prefix}{reason}"


def _password(url: str) -> str | None:
    try:
        return make_url(url).password
    except (SQLAlchemyError, ValueError):
        found = _PASSWORD_IN_URL.search(url)
        return found.group(0)[len(found.group(1)) + 1 : -1] if found else None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    if len(line) > MAX_REASON_CHARS:
        line = line[: MAX_REASON_CHARS - 1] + "…"
    return line
