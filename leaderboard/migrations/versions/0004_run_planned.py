"""Runs keep their planned attempts in a column of their own.

`runs.planned` is the config's tasks x epochs (NULL when the config does not say). The
leaderboard's lists (coverage, cost per task, partial runs) read it for every run; reading it
out of `config`, which holds the run's whole task list, cost a JSON decode of tens of
kilobytes per run per page (and on SQLite, a walk of the row's overflow pages). Existing runs
are filled in from their config here; the arithmetic is written out in this file, as a
migration must not depend on code that may change.

Revision ID: 0004_run_planned
Revises: 0003_summary_pass_at_k
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004_run_planned"
down_revision = "0003_summary_pass_at_k"
branch_labels = None
depends_on = None

BATCH = 500


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("planned", sa.Integer(), nullable=True))
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.String), sa.column("planned", sa.Integer))
    found = conn.execute(sa.text("SELECT id, config FROM runs")).all()
    updates = []
    for run_id, config in found:
        planned = _planned(json.loads(config) if isinstance(config, str | bytes) else config)
        if planned is not None:
            updates.append({"run": run_id, "value": planned})
    statement = (
        runs.update().where(runs.c.id == sa.bindparam("run")).values(planned=sa.bindparam("value"))
    )
    for start in range(0, len(updates), BATCH):
        conn.execute(statement, updates[start : start + BATCH])


def _planned(config: Any) -> int | None:
    if not isinstance(config, dict):
        return None
    tasks, epochs = config.get("tasks"), config.get("epochs")
    if not isinstance(tasks, dict | list) or not isinstance(epochs, int):
        return None
    return len(tasks) * epochs


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("planned")
