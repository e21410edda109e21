"""The leaderboard: where benchmark runs and their attempts are stored, for later comparison.

So far this package is only the storage layer (`leaderboard.store`, `leaderboard.schema`):
SQLite or PostgreSQL through SQLAlchemy. There is no dashboard yet, and no Alembic migrations
yet (tables are created when missing, never altered).
"""

from leaderboard.store import SqlStore, Store, StoreError, open_store

__all__ = ["SqlStore", "Store", "StoreError", "open_store"]
