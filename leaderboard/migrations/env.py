"""Alembic environment: migrations run on the connection `leaderboard.migrate` hands over.

Batch mode is on (`render_as_batch`), so on SQLite a change SQLite's ALTER TABLE cannot make is
done by copying the table; `leaderboard.migrate` turns foreign keys off around that copy, so
dropping the old table cascades to nothing.
"""

from alembic import context

from leaderboard.schema import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
