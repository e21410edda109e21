"""The leaderboard: where benchmark runs and their attempts are stored, compared and shown.

`schema` (tables), `migrate` and `migrations/` (Alembic), `store` (the runner's write path,
SQLite and PostgreSQL), `summaries` (per-run figures), `stats` (intervals, pass@k, McNemar,
paired bootstrap, ranks), `queries` (what the CLI and dashboard show), `gate` (candidate vs
baseline), `transfer` (import run folders, export tables and SWE-bench predictions) and
`dashboard` (the web page).

The names below are imported when first used (`harness.lazy`), so importing a part of the
leaderboard does not load SQLAlchemy unless that part needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import exports

if TYPE_CHECKING:
    from leaderboard.store import SqlStore, StoreError, open_store

_EXPORTS = {name: "leaderboard.store" for name in ("SqlStore", "StoreError", "open_store")}
__getattr__, __dir__ = exports(__name__, _EXPORTS)

__all__ = ["SqlStore", "StoreError", "open_store"]
