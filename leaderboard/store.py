"""Where runs and their attempts are kept: `SqlStore`, the SQL `harness.run.store.ResultStore`.

`open_store(url)` opens a database at any SQLAlchemy URL, e.g. `sqlite:///runs/lb.db` or
`postgresql+psycopg://user:pass@host/db`, and returns a `SqlStore`. An empty database gets the
current schema; one at an older schema revision is refused with one line saying to run
`cursorbench db upgrade --db URL` (see `leaderboard.migrate`). Writes are idempotent, so an
interrupted run can be resumed and several processes (or machines, with PostgreSQL) can write
to the same database:

- `start_run` inserts the run once (with its model and suite rows); starting it again with the
  same config hash does nothing, with a different config hash it is refused.
- `record` writes an attempt's fact row once, the protocol's one write rule: the row is
  insert-only and keyed by UNIQUE(run, task, epoch), so recording the same attempt again
  changes nothing (the first write stands). `delete_attempts` removes attempts to be run
  again (`--retry-errors`), which may then be recorded anew.
- `finish_run` stores the runner's summary, sets the status (complete or partial) and
  computes the run's summary rows (`leaderboard.summaries`); on PostgreSQL it first refreshes
  the planner's statistics of the attempts and tasks tables (ANALYZE).

SQLite files are opened in WAL mode with a busy timeout and foreign keys on, so concurrent
writers wait for each other rather than fail; WAL needs a local filesystem (not NFS). Every
failure to open, read or write is raised as `StoreError` with a one-line message naming the
URL, password masked.

Not covered here: the queries behind the CLI and the dashboard (`leaderboard.queries`).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import URL, Engine, bindparam, create_engine, delete, event, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    IntegrityError,
    NoSuchModuleError,
    SQLAlchemyError,
    StatementError,
)
from sqlalchemy.orm import Session

from harness.errors import CursorBenchError
from harness.results import AttemptResult, RunInfo
from harness.run.summary import RunSummary
from leaderboard import bulk, rows, summaries
from leaderboard.migrate import (
    HEAD,
    SchemaOutOfDate,
    ensure_current,
    out_of_date_message,
    revision_of,
)
from leaderboard.schema import AttemptRow, CheckpointRow, RunRow, TaskRow

BUSY_TIMEOUT_S = 30  # how long a SQLite writer waits for another one before giving up
CONNECT_TIMEOUT_S = 10  # how long to wait for a PostgreSQL server before giving up
# SQLite's page cache per connection, at most (KiB; its default is 2 MiB): a dashboard over a
# store of a million attempts re-reads the runs table (each row holds its config's task list)
# and the pages of the runs it shows on every request, which 2 MiB cannot hold
SQLITE_CACHE_KIB = 64 * 1024
MAX_REASON_CHARS = 300


class StoreError(CursorBenchError):
    """The store could not be opened, read or written. The message is one line."""


def parse_url(url: str) -> URL:
    """`url` parsed, with its dialect and driver loaded; `StoreError` (one line) when no
    engine could be made from it. Touches nothing, so a run checks it before its slow
    set-up and opens the store only once the endpoint has answered."""
    shown = mask_url(url)
    try:
        parsed = make_url(url)
    except (SQLAlchemyError, ValueError) as exc:
        raise StoreError(_message("open", shown, exc, url, "not a valid database URL: ")) from exc
    try:
        parsed.get_dialect()
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise StoreError(_message("open", shown, exc, url)) from exc
    return parsed


def open_engine(url: str, *, connect_args: dict[str, Any] | None = None) -> Engine:
    """An engine for `url` with the settings every user of the store needs (SQLite: WAL,
    busy timeout, foreign keys; PostgreSQL: a connect timeout). Nothing is checked yet."""
    shown = mask_url(url)
    parsed = parse_url(url)
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
    return engine


def check_store(url: str) -> None:
    """Refuses a database a run could not write to (an unparsable URL, a server that does not
    answer, a schema that needs `cursorbench db upgrade`) before the run's slow set-up, with
    the message `open_store` would give later. Creates nothing: a missing SQLite file or an
    empty database passes (the run creates its schema once the endpoint has answered)."""
    parsed = parse_url(url)
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and (
        not database or database == ":memory:" or not Path(database).expanduser().exists()
    ):
        return
    shown = mask_url(url)
    engine = open_engine(url)
    try:
        with engine.connect() as conn:
            revision = revision_of(conn)
    except SQLAlchemyError as exc:
        raise StoreError(_message("open", shown, exc, url)) from exc
    finally:
        engine.dispose()
    if revision is not None and revision != HEAD:
        raise StoreError(out_of_date_message(revision, shown))


def open_store(url: str, *, connect_args: dict[str, Any] | None = None) -> SqlStore:
    """Open the database at `url`; an empty one gets the current schema, an out-of-date one
    is refused (`StoreError` saying to run `cursorbench db upgrade`).

    `connect_args` go to the driver's connect(), e.g. `{"options": "-csearch_path=myschema"}`
    for psycopg.
    """
    engine = open_engine(url, connect_args=connect_args)
    shown = mask_url(url)
    try:
        ensure_current(engine, shown)
    except SchemaOutOfDate as exc:
        engine.dispose()
        raise StoreError(str(exc)) from exc
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(_message("open", shown, exc, url)) from exc
    return SqlStore(engine, url)


class SqlStore:
    """A `ResultStore` in a SQL database; see the module docstring for its semantics."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self.url = mask_url(url)  # safe to print
        self._folders: dict[str, Path | None] = {}

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
        folder = rows.absolute_folder(run.out_dir)
        self._folders[run.id] = Path(folder) if folder else None

    def record(self, run_id: str, result: AttemptResult) -> None:
        """Write the attempt's fact row, its metrics and trajectory reference, once."""
        self.record_many(run_id, [result])

    def record_many(
        self, run_id: str, results: Iterable[AttemptResult], keep_trajectories: bool = False
    ) -> None:
        """`record` for many attempts in one transaction (imports, bulk loads), written in
        large batches by `leaderboard.bulk` (COPY on PostgreSQL), insert-only like `record`;
        with `keep_trajectories` the trajectory files' bytes are stored too, also for attempts
        recorded before without them (the same file: its sha256 must match)."""
        folder = self._folder(run_id)
        attempts = list(results)
        metrics, scores, trajectories = [], [], []
        for result in attempts:
            metrics.extend(rows.metric_rows(run_id, result))
            scores.extend(rows.score_rows(run_id, result))
            found = rows.trajectory_row(run_id, result, folder, keep_trajectories)
            if found is not None:
                trajectories.append(found)
        with self._errors("write to"), self._engine.begin() as conn:
            if conn.execute(select(RunRow.id).where(RunRow.id == run_id)).first() is None:
                raise StoreError(
                    f"cannot record an attempt of run {run_id!r}: no such run in '{self.url}' "
                    "(start_run it first)"
                )
            bulk.insert_attempts(conn, run_id, attempts)
            rows.insert_ignoring(conn, rows.METRICS_TABLE, metrics)
            rows.insert_ignoring(conn, rows.SCORES_TABLE, scores)
            rows.insert_ignoring(conn, rows.TRAJECTORIES_TABLE, trajectories)
            if keep_trajectories:
                rows.fill_blobs(conn, [row for row in trajectories if row["blob"] is not None])

    def finish_run(self, run_id: str, summary: RunSummary) -> None:
        status = "complete" if summary.complete else "partial"
        stored = summary.as_json()
        with self._errors("write to"), self._engine.begin() as conn:
            done = conn.execute(
                update(RunRow)
                .where(RunRow.id == run_id)
                .values(finished_at=datetime.now(UTC), summary=stored, status=status)
            )
            if done.rowcount == 0:
                raise StoreError(f"cannot finish run {run_id!r}: no such run in '{self.url}'")
            if conn.dialect.name == "postgresql":
                # fresh planner statistics after a run's rows landed: with stale ones (a bulk
                # load) PostgreSQL picks nested loops over the attempts x tasks join (seconds)
                conn.exec_driver_sql(f"ANALYZE {AttemptRow.__tablename__}, {TaskRow.__tablename__}")
            summaries.refresh(conn, run_id)

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

    def delete_run(self, run_id: str) -> bool:
        """Delete a run and everything recorded for it; False if there was no such run."""
        with self._errors("write to"), self._engine.begin() as conn:
            return conn.execute(delete(RunRow).where(RunRow.id == run_id)).rowcount > 0

    def describe_tasks(self, suite_version: str, categories: dict[str, str | None]) -> None:
        """Record the category of each task of a suite version (the runner knows them)."""
        with self._errors("write to"), self._engine.begin() as conn:
            rows.describe_tasks(conn, rows.suite_id(conn, suite_version), categories)

    def attach_checkpoint(
        self,
        run_id: str,
        training_run: str,
        step: int,
        tokens_seen: int | None = None,
        path: str | None = None,
    ) -> str:
        """Mark a run as the evaluation of a training run's checkpoint (served from the folder
        `path`, if given); returns the checkpoint's id."""
        with self._errors("write to"), self._engine.begin() as conn:
            if conn.execute(select(RunRow.id).where(RunRow.id == run_id)).first() is None:
                raise StoreError(f"no run {run_id!r} in '{self.url}'")
            checkpoint = rows.checkpoint_id(conn, training_run, step, tokens_seen)
            conn.execute(update(RunRow).where(RunRow.id == run_id).values(checkpoint_id=checkpoint))
            if path is not None:
                conn.execute(
                    update(CheckpointRow).where(CheckpointRow.id == checkpoint).values(path=path)
                )
            return checkpoint

    def promote_checkpoint(self, checkpoint_id: str, promoted: bool = True) -> None:
        """Mark a checkpoint as promoted by its training run's gate (or not)."""
        with self._errors("write to"), self._engine.begin() as conn:
            done = conn.execute(
                update(CheckpointRow)
                .where(CheckpointRow.id == checkpoint_id)
                .values(promoted=promoted)
            )
            if done.rowcount == 0:
                raise StoreError(f"no checkpoint {checkpoint_id!r} in '{self.url}'")

    def record_gate(
        self, checkpoint_id: str, baseline: str | None, decision: str, detail: dict
    ) -> None:
        """Store a gate decision on a checkpoint (`baseline`: the run it was compared with)."""
        with self._errors("write to"), self._engine.begin() as conn:
            conn.execute(
                update(CheckpointRow)
                .where(CheckpointRow.id == checkpoint_id)
                .values(
                    gate_decision=decision,
                    gate_baseline=baseline,
                    gate_detail=detail,
                    gated_at=datetime.now(UTC),
                )
            )

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
            found = session.scalars(select(RunRow)).all()
            infos = [rows.run_info(row) for row in found]
        return sorted(infos, key=lambda run: (run.created_at, run.id), reverse=True)

    def run(self, run_id: str) -> RunInfo | None:
        with self._errors("read from"), Session(self._engine) as session:
            row = session.get(RunRow, run_id)
            return None if row is None else rows.run_info(row)

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

    def _folder(self, run_id: str) -> Path | None:
        if run_id not in self._folders:
            with self._errors("read from"), self._engine.connect() as conn:
                out = conn.execute(select(RunRow.out_dir).where(RunRow.id == run_id)).scalar()
            self._folders[run_id] = Path(out) if out else None
        return self._folders[run_id]

    def _start_run_once(self, run: RunInfo) -> None:
        with self._engine.begin() as conn:
            found = conn.execute(select(RunRow.config_hash).where(RunRow.id == run.id)).first()
            if found is None:
                values = rows.run_values(run)
                values["model_id"] = rows.model_id(conn, run.model)
                values["suite_id"] = rows.suite_id(conn, run.suite_version)
                values |= _provenance()
                conn.execute(insert(RunRow).values(**values))
                tasks = run.config.get("tasks")
                if isinstance(tasks, dict):
                    known = dict.fromkeys(map(str, tasks))
                    rows.describe_tasks(conn, values["suite_id"], known)
            elif found.config_hash != run.config_hash:
                raise StoreError(
                    f"run {run.id!r} already exists in '{self.url}' with config hash "
                    f"{found.config_hash!r}, not {run.config_hash!r}; use a new run id"
                )

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(_message(action, self.url, exc, self._url)) from exc


def _provenance() -> dict[str, str | None]:
    """The harness version and, in a git checkout, its commit: who wrote the run."""
    return {"harness_version": _harness_version(), "git_sha": _git_sha()}


_CACHED: dict[str, str | None] = {}


def _harness_version() -> str | None:
    if "version" not in _CACHED:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _CACHED["version"] = version("cursorbench")
        except PackageNotFoundError:
            _CACHED["version"] = None
    return _CACHED["version"]


def _git_sha() -> str | None:
    if "sha" not in _CACHED:
        import subprocess

        root = Path(__file__).resolve().parent.parent
        try:
            done = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            sha = done.stdout.strip()
            _CACHED["sha"] = sha if done.returncode == 0 and len(sha) == 40 else None
        except (OSError, subprocess.SubprocessError):
            _CACHED["sha"] = None
    return _CACHED["sha"]


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
        _use_wal(cursor)
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    finally:
        cursor.close()


def _use_wal(cursor: Any) -> None:
    """WAL mode, kept in the file once set. Switching to it takes an exclusive lock, and
    SQLite answers "database is locked" at once, without waiting out the busy timeout, when
    other connections opening a new file at the same moment hold theirs: so it is tried
    again, for as long as the busy timeout, unless another connection set it meanwhile."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


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
