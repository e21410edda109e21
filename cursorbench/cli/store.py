"""Opening the results database for the leaderboard's commands, and the `db` commands
(upgrade, current).

`--db URL` defaults to env `CURSORBENCH_DB`, else the same SQLite file `cursorbench run`
writes. `_store` opens a database to write (creating it with the current schema if empty:
`runs import`); `_reader` opens one to read and creates nothing, neither a SQLite file nor a
schema, refusing a missing, empty or out-of-date one with one line. Known errors are one
line on stderr and exit status 2 (`one_line_errors`). A run is named by its id or a unique
prefix of it (`_resolve`, i.e. `leaderboard.ids.resolve_run`).

Not covered here: the `runs`, `gate` and `dashboard` commands (`cursorbench.cli.leaderboard`).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from cursorbench.cli.common import EXIT_BAD_INPUT

if TYPE_CHECKING:
    from sqlalchemy.exc import SQLAlchemyError

    from leaderboard.store import SqlStore


def known_errors() -> tuple[type[Exception], ...]:
    """The leaderboard's errors a user can fix: one line on stderr, exit status 2."""
    from leaderboard.gate import GateError
    from leaderboard.migrate import SchemaOutOfDate
    from leaderboard.queries import QueryError
    from leaderboard.store import StoreError
    from leaderboard.transfer import TransferError

    return (StoreError, GateError, QueryError, TransferError, SchemaOutOfDate)


console = Console(width=None if sys.stdout.isatty() else 160)

db_app = typer.Typer(no_args_is_help=True, help="The results database: schema upgrades.")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="SQLAlchemy URL [env CURSORBENCH_DB, else the default SQLite file]."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(function: F) -> F:
    """Known errors become one line on stderr and exit status 2."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except known_errors() as error:
            print(f"error: {error}", file=sys.stderr)
            raise typer.Exit(EXIT_BAD_INPUT) from None

    return wrapper  # type: ignore[return-value]


def _url(db: str | None) -> str:
    from cursorbench.config import SqlStoreSpec

    return SqlStoreSpec(url=db).resolved_url()


def _store(db: str | None) -> SqlStore:
    """The store, created with the current schema if empty: for commands that write."""
    from leaderboard.store import open_store

    return open_store(_url(db))


def _reader(db: str | None) -> SqlStore:
    """The store for a command that only reads: nothing is created, neither a SQLite file
    nor the schema in an empty database (`StoreError` instead)."""
    from leaderboard.migrate import HEAD, out_of_date_message
    from leaderboard.store import SqlStore, StoreError, mask_url, open_engine

    url = _url(db)
    if not _sqlite_file_exists(url):
        raise StoreError(f"no database at '{mask_url(url)}' (`cursorbench run` records one)")
    engine = open_engine(url)
    try:
        revision = _revision(engine, mask_url(url))
    except StoreError:
        engine.dispose()
        raise
    if revision != HEAD:
        engine.dispose()
        raise StoreError(out_of_date_message(revision, mask_url(url)))
    return SqlStore(engine, url)


def _sqlite_file_exists(url: str) -> bool:
    """False only for a SQLite URL whose file is not there (other URLs: True)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return True  # open_engine words the bad URL
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return True
    return Path(parsed.database).is_file()


def _revision(engine: Any, shown: str) -> str:
    from sqlalchemy.exc import SQLAlchemyError

    from leaderboard.migrate import revision_of
    from leaderboard.store import StoreError

    try:
        with engine.connect() as conn:
            revision = revision_of(conn)
    except SQLAlchemyError as error:
        raise StoreError(f"cannot read '{shown}': {_reason(error)}") from None
    if revision is None:
        raise StoreError(f"'{shown}' holds no results yet (`cursorbench run` records one)")
    return str(revision)


def _resolve(conn: Any, given: str) -> str:
    """The run whose id is `given`, or the one run whose id starts with it."""
    from leaderboard.ids import resolve_run

    return resolve_run(conn, given)


def short_ids(ids: list[str], least: int = 8) -> dict[str, str]:
    """Each id's shortest prefix of at least `least` characters that no other id shares."""
    from leaderboard.ids import short_ids as shortest

    return shortest(ids, least)


def _reason(error: SQLAlchemyError) -> str:
    return " ".join(str(getattr(error, "orig", None) or error).split())[:300]


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


@db_app.command("upgrade")
@one_line_errors
def db_upgrade(db: DbOption = None) -> None:
    """Migrate the database to the schema this version writes (creating it if empty)."""
    from sqlalchemy.exc import SQLAlchemyError

    from leaderboard.migrate import upgrade
    from leaderboard.store import StoreError, mask_url, open_engine

    engine = open_engine(_url(db))
    try:
        before, after = upgrade(engine)
    except SQLAlchemyError as error:
        raise StoreError(f"cannot upgrade '{mask_url(_url(db))}': {_reason(error)}") from None
    finally:
        engine.dispose()
    if before == after:
        console.print(f"already at {after}")
    else:
        console.print(f"upgraded {before or 'empty database'} -> {after}")


@db_app.command("current")
@one_line_errors
def db_current(db: DbOption = None) -> None:
    """Print the database's schema revision and the one this version needs."""
    from sqlalchemy.exc import SQLAlchemyError

    from leaderboard.migrate import HEAD, revision_of
    from leaderboard.store import StoreError, mask_url, open_engine

    if not _sqlite_file_exists(_url(db)):
        raise StoreError(f"no database at '{mask_url(_url(db))}'; this version writes {HEAD}")
    engine = open_engine(_url(db))
    try:
        with engine.connect() as conn:
            revision = revision_of(conn)
    except SQLAlchemyError as error:
        raise StoreError(f"cannot read '{mask_url(_url(db))}': {_reason(error)}") from None
    finally:
        engine.dispose()
    console.print(f"database {revision or 'empty'}; this version writes {HEAD}")
