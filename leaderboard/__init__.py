"""The leaderboard: where benchmark runs and their attempts are stored, compared and shown.

`schema` (tables), `migrate` and `migrations/` (Alembic), `store` (the runner's write path,
SQLite and PostgreSQL), `summaries` (per-run figures), `stats` (intervals, pass@k, McNemar,
paired bootstrap, ranks), `queries` (what the CLI and dashboard show), `gate` (candidate vs
baseline), `transfer` (import run folders, export tables and SWE-bench predictions) and
`dashboard` (the web page).
"""

from leaderboard.store import SqlStore, StoreError, open_store

__all__ = ["SqlStore", "StoreError", "open_store"]
