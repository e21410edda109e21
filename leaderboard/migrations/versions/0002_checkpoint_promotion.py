"""Checkpoint gating: whether each checkpoint was promoted, and where its files are.

`checkpoints.promoted` is true for the checkpoints a training run's gate promoted (the first
one evaluated, and each one that passed the gate against the promoted one before it); the
training run's best checkpoint is its latest promoted one. `checkpoints.path` is the folder
the checkpoint was served from. Existing checkpoints are not promoted and have no path.

Revision ID: 0002_checkpoint_promotion
Revises: 0001_leaderboard
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_checkpoint_promotion"
down_revision = "0001_leaderboard"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.add_column(
            sa.Column("promoted", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("path", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("path")
        batch.drop_column("promoted")
