"""Run ids as people type and read them: a unique prefix names a run, the shortest unique
prefix is what lists show.

`resolve_run(conn, given)` is the run whose id is `given`, or the one run whose id starts
with it (`QueryError` when none does, or when several do: the message names some and asks
for more characters). `short_ids(ids)` maps each id to its shortest prefix of at least 8
characters that no other id shares, so a shown id can always be typed back. The CLI and the
dashboard both use these; `ShortIds` caches the prefixes of every run in the store for one
page.

Not covered here: tasks and training runs (named in full).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, select

from leaderboard.schema import RunRow
from leaderboard.standings import QueryError

LEAST = 8  # characters a short id has at least


def resolve_run(conn: Connection, given: str) -> str:
    """The run whose id is `given`, or the one run whose id starts with it."""
    if conn.execute(select(RunRow.id).where(RunRow.id == given)).first():
        return given
    query = select(RunRow.id).where(RunRow.id.startswith(given, autoescape=True)).limit(6)
    found = list(conn.scalars(query)) if given else []
    if not found:
        raise QueryError(f"no run {given!r} (by id or id prefix)")
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise QueryError(f"run id prefix {given!r} is ambiguous: {shown}; give more characters")
    return str(found[0])


def short_ids(ids: Iterable[str], least: int = LEAST) -> dict[str, str]:
    """Each id's shortest prefix of at least `least` characters that no other id shares."""
    ordered = sorted(set(ids))
    short = {}
    for index, run_id in enumerate(ordered):
        neighbours = ordered[max(0, index - 1) : index] + ordered[index + 1 : index + 2]
        common = max((_common(run_id, other) for other in neighbours), default=0)
        short[run_id] = run_id[: max(least, common + 1)]
    return short


def _common(one: str, two: str) -> int:
    length = 0
    for a, b in zip(one, two, strict=False):
        if a != b:
            break
        length += 1
    return length


class ShortIds:
    """The short id of any run in the store, from one read of every run id (ids only)."""

    def __init__(self, conn: Connection) -> None:
        self._short = short_ids(conn.scalars(select(RunRow.id)))

    def __call__(self, run_id: str) -> str:
        return self._short.get(run_id, run_id)
