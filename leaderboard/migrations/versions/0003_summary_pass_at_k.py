"""Run summaries keep pass@k and whether the interval is degenerate, so the leaderboard by
model reads one row per run instead of grouping every chosen run's attempts by task.

`run_summaries.pass_at_k` is the mean over tasks of pass@k for `pass_k` = the run's epochs
(its fewest attempts of a task); `degenerate` says every task scored the same (the interval
was not measured). Rows from before are NULL until `leaderboard.migrate.upgrade` recomputes
them (the statistics code may change; a migration must not hold it).

Revision ID: 0003_summary_pass_at_k
Revises: 0002_checkpoint_promotion
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_summary_pass_at_k"
down_revision = "0002_checkpoint_promotion"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run_summaries") as batch:
        batch.add_column(sa.Column("pass_at_k", sa.Float(), nullable=True))
        batch.add_column(sa.Column("pass_k", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("degenerate", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_summaries") as batch:
        batch.drop_column("degenerate")
        batch.drop_column("pass_k")
        batch.drop_column("pass_at_k")
