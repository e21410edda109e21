"""Schema revisions: check that a database is current, create a new one, upgrade an old one.

The schema is managed by Alembic (`leaderboard/migrations`, one head: `HEAD`). Three kinds of
database meet this code:

- empty: `ensure_current` creates every table (`create_all`) and stamps it `HEAD`;
- current (its `alembic_version` is `HEAD`): used as is;
- older: a database with a `runs` table but no `alembic_version` was written by the
  pre-migration `create_all` schema (revision `0000_v0`); writers and the dashboard refuse it,
  and any other old revision, with `SchemaOutOfDate`, one line naming the command that fixes
  it: `cursorbench db upgrade --db URL`, which is `upgrade` here.

Creating and upgrading hold a lock, so processes opening one new database at once neither
race nor see half a schema: `BEGIN IMMEDIATE` on SQLite, a transaction-scoped advisory lock on
PostgreSQL. On SQLite, foreign keys are off while migrating, so batch mode's table copy
(create new, copy, drop old, rename) cascades to nothing.

Not covered here: what the tables are (`leaderboard.schema`) and reading or writing rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, select, text

from leaderboard.schema import Base

MIGRATIONS = Path(__file__).parent / "migrations"
V0_REVISION = "0000_v0"
PG_LOCK_KEY = 0x637572736F72  # "cursor": one lock for every leaderboard schema change


class SchemaOutOfDate(Exception):
    """The database's schema is not the one this code writes (one line, says what to run)."""


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def heads() -> list[str]:
    return list(script_directory().get_heads())


def current_head() -> str:
    """The one head revision of the migrations (alembic says None only for an empty folder)."""
    head = script_directory().get_current_head()
    if head is None:
        raise RuntimeError("the leaderboard's migrations folder has no revisions")
    return head


HEAD = current_head()


def revision_of(conn: Connection) -> str | None:
    """The database's revision: `HEAD`, an older one, `0000_v0`, or None when it is empty."""
    found = MigrationContext.configure(conn).get_current_revision()
    if found is not None:
        return found
    return V0_REVISION if inspect(conn).has_table("runs") else None


def ensure_current(engine: Engine, shown_url: str) -> None:
    """Create the schema in an empty database; refuse one at another revision."""
    with _locked(engine) as conn:
        revision = revision_of(conn)
        if revision is None:
            Base.metadata.create_all(conn)
            MigrationContext.configure(conn).stamp(script_directory(), "heads")
            conn.commit()
            return
        conn.rollback()
    if revision != HEAD:
        raise SchemaOutOfDate(out_of_date_message(revision, shown_url))


def out_of_date_message(revision: str, shown_url: str) -> str:
    if revision not in {script.revision for script in script_directory().walk_revisions()}:
        return (
            f"database '{shown_url}' has schema revision {revision}, which this version of "
            f"cursorbench does not know (it needs {HEAD}): upgrade cursorbench"
        )
    return (
        f"database '{shown_url}' has schema revision {revision}, this version needs {HEAD}: "
        f"run `cursorbench db upgrade --db {shown_url}`"
    )


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Bring the database to `HEAD`; returns (revision before, revision after)."""
    with _locked(engine, migrating=True) as conn:
        before = revision_of(conn)
        if before is None:
            Base.metadata.create_all(conn)
            MigrationContext.configure(conn).stamp(script_directory(), "heads")
        else:
            if (
                before == V0_REVISION
                and MigrationContext.configure(conn).get_current_revision() is None
            ):
                MigrationContext.configure(conn).stamp(script_directory(), V0_REVISION)
            command.upgrade(alembic_config(conn), "heads")
            _summarise_finished_runs(conn)
        conn.commit()
    return before, HEAD


def _summarise_finished_runs(conn: Connection) -> None:
    """Finished runs from before summaries existed get theirs; summaries from before pass@k
    was kept (0003) are computed again."""
    from leaderboard import summaries
    from leaderboard.schema import RunRow, RunSummaryRow

    complete = select(RunSummaryRow.run_id).where(
        RunSummaryRow.run_id == RunRow.id, RunSummaryRow.pass_k.is_not(None)
    )
    missing = select(RunRow.id).where(RunRow.finished_at.is_not(None), ~complete.exists())
    for run_id in conn.scalars(missing).all():
        summaries.refresh(conn, run_id)


@contextmanager
def _locked(engine: Engine, migrating: bool = False) -> Iterator[Connection]:
    """A connection inside a transaction that holds the schema lock."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            if migrating:
                conn.exec_driver_sql("PRAGMA foreign_keys = OFF")
            conn.commit()
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
        try:
            yield conn
        finally:
            if conn.in_transaction():
                conn.rollback()
            if engine.dialect.name == "sqlite" and migrating:
                conn.exec_driver_sql("PRAGMA foreign_keys = ON")
                conn.commit()
