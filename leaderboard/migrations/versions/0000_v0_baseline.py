"""v0 baseline: the `runs` and `attempts` tables as the harness spine's `create_all` made them.

A database written before migrations existed has these tables and no `alembic_version`;
`leaderboard.migrate.upgrade` stamps it with this revision, then runs the ones after it.
The definitions are a frozen copy: never change them.

Revision ID: 0000_v0
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0000_v0"
down_revision = None
branch_labels = None
depends_on = None

KEY = 255


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(KEY), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("model", sa.String(KEY), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("endpoint_label", sa.String(KEY), nullable=False),
        sa.Column("suite_version", sa.String(KEY), nullable=False),
        sa.Column("config_hash", sa.String(KEY), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("sandbox", sa.String(KEY), nullable=False),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("out_dir", sa.Text(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("summary", sa.JSON(none_as_null=True), nullable=True),
    )
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "run_id",
            sa.String(KEY),
            sa.ForeignKey("runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("task_id", sa.String(KEY), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("failure", sa.String(64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("resolved", sa.Boolean(), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("diff_lines_added", sa.Integer(), nullable=False),
        sa.Column("diff_lines_removed", sa.Integer(), nullable=False),
        sa.Column("tokens_in", sa.BigInteger(), nullable=False),
        sa.Column("tokens_out", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("model_latency_s", sa.Float(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("wall_time_s", sa.Float(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("trajectory", sa.Text(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.UniqueConstraint("run_id", "task_id", "epoch", name="uq_attempts_key"),
    )
    op.create_index("ix_attempts_run_id", "attempts", ["run_id"])


def downgrade() -> None:
    op.drop_table("attempts")
    op.drop_table("runs")
