"""The leaderboard: dimensions (models, suites, tasks, training runs, checkpoints), run
identity columns, attempt scores, metrics and trajectories, per-run summaries; every
constraint named.

Takes a v0 database (the harness spine's `create_all` tables) forward without losing a row:
`runs` gets its model, suite, epochs and status filled from what it already holds, and
`attempts` its flags and test counts from the stored result. Run summaries are computed
afterwards by `leaderboard.migrate.upgrade` (they need the statistics code, which may change;
a migration must not).

Revision ID: 0001_leaderboard
Revises: 0000_v0
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001_leaderboard"
down_revision = "0000_v0"
branch_labels = None
depends_on = None

KEY = 255
SUITE_NAME = "cursorbench"
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
ATTEMPT_KEY = ["run_id", "task_id", "epoch"]


def _utc() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def _attempt_key_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("run_id", sa.String(KEY), nullable=False),
        sa.Column("task_id", sa.String(KEY), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
    ]


def _attempt_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ATTEMPT_KEY,
        [f"attempts.{c}" for c in ATTEMPT_KEY],
        name=f"fk_{table}_attempts",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    _create_dimensions()
    if postgres:  # name what create_all left to PostgreSQL's default names
        op.execute("ALTER TABLE runs RENAME CONSTRAINT runs_pkey TO pk_runs")
        op.execute("ALTER TABLE attempts RENAME CONSTRAINT attempts_pkey TO pk_attempts")
        op.execute(
            "ALTER TABLE attempts RENAME CONSTRAINT attempts_run_id_fkey TO fk_attempts_run_id_runs"
        )
    with op.batch_alter_table("runs", naming_convention=NAMING) as batch:
        batch.add_column(sa.Column("model_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("suite_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("checkpoint_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("harness_version", sa.String(KEY), nullable=True))
        batch.add_column(sa.Column("git_sha", sa.String(64), nullable=True))
        batch.add_column(sa.Column("epochs", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("status", sa.String(16), nullable=False, server_default="running")
        )
        batch.create_foreign_key("fk_runs_model_id_models", "models", ["model_id"], ["id"])
        batch.create_foreign_key("fk_runs_suite_id_suites", "suites", ["suite_id"], ["id"])
        batch.create_foreign_key(
            "fk_runs_checkpoint_id_checkpoints",
            "checkpoints",
            ["checkpoint_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch.create_index("ix_runs_config_hash", ["config_hash"])
        batch.create_index("ix_runs_created_at", ["created_at"])
    with op.batch_alter_table("attempts", naming_convention=NAMING) as batch:
        batch.add_column(sa.Column("flags", sa.JSON(none_as_null=True), nullable=True))
        batch.add_column(sa.Column("tests_passed", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("tests_total", sa.Integer(), nullable=True))
    _create_facts()
    _fill_runs(bind)
    _fill_attempts(bind)


def _create_dimensions() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(KEY), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_models"),
        sa.UniqueConstraint("name", name="uq_models_name"),
    )
    op.create_table(
        "suites",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(KEY), nullable=False),
        sa.Column("version", sa.String(KEY), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_suites"),
        sa.UniqueConstraint("name", "version", name="uq_suites_name_version"),
    )
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("suite_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(KEY), nullable=False),
        sa.Column("category", sa.String(KEY), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
        sa.ForeignKeyConstraint(
            ["suite_id"], ["suites.id"], name="fk_tasks_suite_id_suites", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("suite_id", "task_id", name="uq_tasks_suite_id_task_id"),
    )
    op.create_table(
        "training_runs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(KEY), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_training_runs"),
        sa.UniqueConstraint("name", name="uq_training_runs_name"),
    )
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("training_run_id", sa.String(36), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("tokens_seen", sa.BigInteger(), nullable=True),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("gate_decision", sa.String(16), nullable=True),
        sa.Column("gate_baseline", sa.String(KEY), nullable=True),
        sa.Column("gate_detail", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("gated_at", _utc(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_checkpoints"),
        sa.ForeignKeyConstraint(
            ["training_run_id"],
            ["training_runs.id"],
            name="fk_checkpoints_training_run_id_training_runs",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("training_run_id", "step", name="uq_checkpoints_training_run_id_step"),
    )


def _create_facts() -> None:
    op.create_table(
        "attempt_scores",
        *_attempt_key_columns(),
        sa.Column("name", sa.String(KEY), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint(*ATTEMPT_KEY, "name", name="pk_attempt_scores"),
        _attempt_fk("attempt_scores"),
    )
    op.create_table(
        "attempt_metrics",
        *_attempt_key_columns(),
        sa.Column("key", sa.String(KEY), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint(*ATTEMPT_KEY, "key", name="pk_attempt_metrics"),
        _attempt_fk("attempt_metrics"),
    )
    op.create_table(
        "trajectories",
        *_attempt_key_columns(),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint(*ATTEMPT_KEY, name="pk_trajectories"),
        _attempt_fk("trajectories"),
    )
    op.create_table(
        "run_summaries",
        sa.Column("run_id", sa.String(KEY), nullable=False),
        sa.Column("computed_at", _utc(), nullable=False),
        *[
            sa.Column(name, sa.Integer(), nullable=False)
            for name in ("attempts", "tasks", "resolved", "errors")
        ],
        *[
            sa.Column(name, sa.Float(), nullable=False)
            for name in ("resolved_rate", "rate_low", "rate_high", "pass_at_1", "cost_usd")
        ],
        sa.Column("tokens_in", sa.BigInteger(), nullable=False),
        sa.Column("tokens_out", sa.BigInteger(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=False),
        sa.Column("wall_time_s", sa.Float(), nullable=False),
        sa.Column("tampering", sa.Integer(), nullable=False),
        sa.Column("flagged", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_run_summaries"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_summaries_run_id_runs", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "run_breakdowns",
        sa.Column("run_id", sa.String(KEY), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("key", sa.String(KEY), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("mean", sa.Float(), nullable=False),
        sa.Column("low", sa.Float(), nullable=False),
        sa.Column("high", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "kind", "key", name="pk_run_breakdowns"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_breakdowns_run_id_runs", ondelete="CASCADE"
        ),
    )


def _fill_runs(bind: sa.Connection) -> None:
    runs = sa.table(
        "runs",
        sa.column("id", sa.String()),
        sa.column("model", sa.String()),
        sa.column("suite_version", sa.String()),
        sa.column("config", sa.JSON()),
        sa.column("finished_at", _utc()),
        sa.column("summary", sa.JSON()),
        sa.column("model_id", sa.Integer()),
        sa.column("suite_id", sa.Integer()),
        sa.column("epochs", sa.Integer()),
        sa.column("status", sa.String()),
    )
    models = sa.table("models", sa.column("id", sa.Integer()), sa.column("name", sa.String()))
    suites = sa.table(
        "suites",
        sa.column("id", sa.Integer()),
        sa.column("name", sa.String()),
        sa.column("version", sa.String()),
    )
    rows = bind.execute(
        sa.select(
            runs.c.id,
            runs.c.model,
            runs.c.suite_version,
            runs.c.config,
            runs.c.finished_at,
            runs.c.summary,
        )
    ).all()
    for name in sorted({row.model for row in rows}):
        bind.execute(sa.insert(models).values(name=name))
    for version in sorted({row.suite_version for row in rows}):
        bind.execute(sa.insert(suites).values(name=SUITE_NAME, version=version))
    model_ids = dict(bind.execute(sa.select(models.c.name, models.c.id)).all())
    suite_ids = dict(bind.execute(sa.select(suites.c.version, suites.c.id)).all())
    for row in rows:
        epochs = (row.config or {}).get("epochs")
        complete = bool((row.summary or {}).get("complete", True))
        status = "running" if row.finished_at is None else "complete" if complete else "partial"
        bind.execute(
            sa.update(runs)
            .where(runs.c.id == row.id)
            .values(
                model_id=model_ids[row.model],
                suite_id=suite_ids[row.suite_version],
                epochs=epochs if isinstance(epochs, int) else None,
                status=status,
            )
        )


def _fill_attempts(bind: sa.Connection) -> None:
    attempts = sa.table(
        "attempts",
        sa.column("id", sa.Integer()),
        sa.column("result", sa.JSON()),
        sa.column("tests", sa.JSON()),
        sa.column("flags", sa.JSON()),
        sa.column("tests_passed", sa.Integer()),
        sa.column("tests_total", sa.Integer()),
    )
    rows = bind.execute(sa.select(attempts.c.id, attempts.c.result, attempts.c.tests)).all()
    for row in rows:
        tests = row.tests or {}
        bind.execute(
            sa.update(attempts)
            .where(attempts.c.id == row.id)
            .values(
                flags=list((row.result or {}).get("flags") or []),
                tests_passed=sum(outcome == "passed" for outcome in tests.values()),
                tests_total=len(tests),
            )
        )


def downgrade() -> None:
    for table in ("run_breakdowns", "run_summaries", "trajectories", "attempt_metrics"):
        op.drop_table(table)
    op.drop_table("attempt_scores")
    with op.batch_alter_table("attempts", naming_convention=NAMING) as batch:
        batch.drop_column("tests_total")
        batch.drop_column("tests_passed")
        batch.drop_column("flags")
    with op.batch_alter_table("runs", naming_convention=NAMING) as batch:
        batch.drop_index("ix_runs_created_at")
        batch.drop_index("ix_runs_config_hash")
        batch.drop_constraint("fk_runs_checkpoint_id_checkpoints", type_="foreignkey")
        batch.drop_constraint("fk_runs_suite_id_suites", type_="foreignkey")
        batch.drop_constraint("fk_runs_model_id_models", type_="foreignkey")
        for column in ("status", "epochs", "git_sha", "harness_version", "checkpoint_id"):
            batch.drop_column(column)
        batch.drop_column("suite_id")
        batch.drop_column("model_id")
    for table in ("checkpoints", "training_runs", "tasks", "suites", "models"):
        op.drop_table(table)
