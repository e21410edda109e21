"""Migrations: one head; a database written by the pre-migration `create_all` schema (v0) is
refused until upgraded, and upgrading keeps every row and yields exactly the current schema."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    insert,
    select,
    text,
)

from harness.results import AttemptResult, RunInfo, Status, TestOutcome
from leaderboard import StoreError, open_store
from leaderboard.migrate import HEAD, V0_REVISION, heads, revision_of, upgrade
from leaderboard.schema import (
    AttemptRow,
    Base,
    CheckpointRow,
    ModelRow,
    RunRow,
    RunSummaryRow,
    SuiteRow,
)

# v0: the tables as leaderboard/schema.py defined them before migrations (git history),
# as `create_all` made them (`Mapped[X]` is NOT NULL, `Mapped[X | None]` nullable).
V0 = MetaData()
K = 255
V0_RUNS = Table(
    "runs",
    V0,
    Column("id", String(K), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("model", String(K), nullable=False),
    Column("base_url", Text, nullable=False),
    Column("endpoint_label", String(K), nullable=False),
    Column("suite_version", String(K), nullable=False),
    Column("config_hash", String(K), nullable=False),
    Column("config", JSON, nullable=False),
    Column("sandbox", String(K), nullable=False),
    Column("warnings", JSON, nullable=False),
    Column("out_dir", Text),
    Column("finished_at", DateTime(timezone=True)),
    Column("summary", JSON(none_as_null=True)),
)
V0_ATTEMPTS = Table(
    "attempts",
    V0,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "run_id", String(K), ForeignKey("runs.id", ondelete="CASCADE"), index=True, nullable=False
    ),
    Column("task_id", String(K), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("status", String(32), nullable=False),
    Column("failure", String(64)),
    Column("error", Text),
    Column("resolved", Boolean, nullable=False),
    Column("tests", JSON, nullable=False),
    Column("diff_lines_added", Integer, nullable=False),
    Column("diff_lines_removed", Integer, nullable=False),
    Column("tokens_in", BigInteger, nullable=False),
    Column("tokens_out", BigInteger, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("model_calls", Integer, nullable=False),
    Column("model_latency_s", Float, nullable=False),
    Column("retries", Integer, nullable=False),
    Column("turns", Integer, nullable=False),
    Column("tool_calls", Integer, nullable=False),
    Column("wall_time_s", Float, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    Column("trajectory", Text),
    Column("result", JSON, nullable=False),
    UniqueConstraint("run_id", "task_id", "epoch", name="uq_attempts_key"),
)
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def v0_run(run_id: str, model: str, finished: bool) -> dict[str, Any]:
    return {
        "id": run_id,
        "created_at": T0,
        "model": model,
        "base_url": "http://127.0.0.1:1/v1",
        "endpoint_label": "external",
        "suite_version": "0.1",
        "config_hash": f"hash-{run_id}",
        "config": {"epochs": 2, "tasks": {"task-a": "d1", "task-b": "d2"}},
        "sandbox": "bubblewrap",
        "warnings": [],
        "out_dir": None,
        "finished_at": T0 + timedelta(hours=1) if finished else None,
        "summary": {"complete": True} if finished else None,
    }


def v0_attempt(run_id: str, task: str, epoch: int, resolved: bool) -> dict[str, Any]:
    result = AttemptResult(
        task_id=task,
        epoch=epoch,
        status=Status.RESOLVED if resolved else Status.FAILED,
        tests={
            "t::one": TestOutcome.PASSED,
            "t::two": TestOutcome.PASSED if resolved else TestOutcome.FAILED,
        },
        started_at=T0,
        finished_at=T0 + timedelta(seconds=5),
        flags=["frame-inspection: a.py:3"] if task == "task-b" else [],
    )
    return {
        "run_id": run_id,
        "task_id": task,
        "epoch": epoch,
        "status": result.status.value,
        "failure": None,
        "error": None,
        "resolved": resolved,
        "tests": result.model_dump(mode="json")["tests"],
        "diff_lines_added": 3,
        "diff_lines_removed": 1,
        "tokens_in": 100,
        "tokens_out": 10,
        "cost_usd": 0.25,
        "model_calls": 2,
        "model_latency_s": 1.5,
        "retries": 0,
        "turns": 2,
        "tool_calls": 3,
        "wall_time_s": 5.0,
        "started_at": T0,
        "finished_at": T0 + timedelta(seconds=5),
        "trajectory": None,
        "result": result.model_dump(mode="json"),
    }


def make_v0_database(engine: Any) -> tuple[int, int]:
    V0.create_all(engine)
    runs = [v0_run("old-run-1", "model-a", True), v0_run("old-run-2", "model-b", False)]
    attempts = [
        v0_attempt(run["id"], task, epoch, resolved=(task == "task-a" or epoch == 0))
        for run in runs
        for task in ("task-a", "task-b")
        for epoch in (0, 1)
    ]
    with engine.begin() as conn:
        conn.execute(insert(V0_RUNS), runs)
        conn.execute(insert(V0_ATTEMPTS), attempts)
    return len(runs), len(attempts)


def test_there_is_one_head() -> None:
    assert heads() == [HEAD]


def test_a_v0_database_is_refused_then_upgraded_without_losing_a_row(db: Any) -> None:
    engine = db_engine(db)
    n_runs, n_attempts = make_v0_database(engine)
    with engine.connect() as conn:
        assert revision_of(conn) == V0_REVISION

    with pytest.raises(StoreError) as refused:
        open_store(db.url, connect_args=db.connect_args)
    message = str(refused.value)
    assert "\n" not in message
    assert f"revision {V0_REVISION}" in message and "cursorbench db upgrade --db" in message

    before, after = upgrade(engine)
    assert (before, after) == (V0_REVISION, HEAD)
    with engine.connect() as conn:
        assert revision_of(conn) == HEAD
        assert conn.scalar(select(func.count()).select_from(RunRow)) == n_runs
        assert conn.scalar(select(func.count()).select_from(AttemptRow)) == n_attempts
        runs = {row.id: row for row in conn.execute(select(RunRow))}
        models = dict(conn.execute(select(ModelRow.id, ModelRow.name)).all())
        suites = conn.execute(select(SuiteRow.name, SuiteRow.version)).all()
        flagged = conn.scalar(
            select(func.count()).select_from(AttemptRow).where(AttemptRow.task_id == "task-b")
        )
        attempt = conn.execute(
            select(AttemptRow).where(
                AttemptRow.run_id == "old-run-1",
                AttemptRow.task_id == "task-b",
                AttemptRow.epoch == 1,
            )
        ).one()
        summary = conn.execute(select(RunSummaryRow)).all()
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert models[runs["old-run-1"].model_id] == "model-a"
    assert (runs["old-run-1"].status, runs["old-run-2"].status) == ("complete", "running")
    assert runs["old-run-1"].epochs == 2 and suites == [("cursorbench", "0.1")]
    assert runs["old-run-1"].planned == 4  # 0004: the config's 2 tasks x 2 epochs, filled in
    assert flagged == 4 and attempt.flags == ["frame-inspection: a.py:3"]
    assert (attempt.tests_passed, attempt.tests_total) == (1, 2)
    assert [(row.run_id, row.attempts, row.resolved) for row in summary] == [("old-run-1", 4, 3)]
    assert diff == [], "the migrated schema differs from leaderboard.schema"

    store = open_store(db.url, connect_args=db.connect_args)
    try:
        assert len(store.attempts("old-run-1")) == 4
        assert {run.id for run in store.runs()} == {"old-run-1", "old-run-2"}
        store.start_run(RunInfo(**(v0_run("new-run", "model-a", False) | {"config": {}})))
        with store.engine.connect() as conn:
            new = conn.execute(select(RunRow.planned).where(RunRow.id == "new-run")).scalar()
        assert new is None  # a config that names no tasks plans nothing known
    finally:
        store.close()
    engine.dispose()


def test_a_new_database_gets_the_current_schema(db: Any) -> None:
    store = db.open()
    with store.engine.connect() as conn:
        assert revision_of(conn) == HEAD
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    assert upgrade(store.engine) == (HEAD, HEAD)  # nothing to do


def test_an_older_revision_is_refused_with_one_line(db: Any) -> None:
    store = db.open()
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    with pytest.raises(StoreError, match="does not know") as refused:
        open_store(db.url, connect_args=db.connect_args)
    assert "\n" not in str(refused.value)


def db_engine(db: Any) -> Any:
    from sqlalchemy import create_engine

    return create_engine(db.url, connect_args=db.connect_args or {})


def test_checkpoints_of_revision_0001_are_kept_unpromoted(db: Any) -> None:
    from alembic import command

    from leaderboard.migrate import alembic_config

    engine = db_engine(db)
    make_v0_database(engine)
    with engine.begin() as conn:
        command.stamp(alembic_config(conn), V0_REVISION)
        command.upgrade(alembic_config(conn), "0001_leaderboard")
        conn.execute(
            text("INSERT INTO training_runs (id, name, created_at) VALUES ('t', 'train', :at)"),
            {"at": datetime.now(UTC)},
        )
        conn.execute(
            text(
                "INSERT INTO checkpoints (id, training_run_id, step, created_at, gate_decision) "
                "VALUES ('c', 't', 100, :at, 'pass')"
            ),
            {"at": datetime.now(UTC)},
        )
    assert upgrade(engine) == ("0001_leaderboard", HEAD)
    with engine.connect() as conn:
        row = conn.execute(select(CheckpointRow)).one()
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert (row.step, row.gate_decision, row.promoted, row.path) == (100, "pass", False, None)
    assert diff == []
    engine.dispose()
