"""Databases for leaderboard tests: a SQLite file, or a fresh schema on a real PostgreSQL server.

PostgreSQL is reached at `CURSORBENCH_TEST_PG_URL` (default: the local trust-auth server); each
test gets its own schema, dropped afterwards. If the server is unreachable the PostgreSQL cases
are skipped, unless `CI` is set or `CURSORBENCH_REQUIRE_PG=1`, where they fail instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text

from harness.results import AttemptResult, Failure, RunInfo, Status, TestOutcome, Usage
from harness.run.summary import summarize
from leaderboard import SqlStore, open_store

PG_URL = os.environ.get(
    "CURSORBENCH_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _pg_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("CURSORBENCH_REQUIRE_PG") == "1"


@dataclass
class Database:
    """One empty database (a SQLite file, or a PostgreSQL schema) that stores can open."""

    url: str
    connect_args: dict[str, Any] | None = None
    dialect: str = "sqlite"
    opened: list[SqlStore] = field(default_factory=list)

    def open(self) -> SqlStore:
        store = open_store(self.url, connect_args=self.connect_args)
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    engine = create_engine(PG_URL, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(text("select 1"))
    except Exception as exc:
        engine.dispose()
        why = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
        reason = f"PostgreSQL not reachable at {PG_URL} ({why})"
        if _pg_required():
            pytest.fail(f"{reason}; required because CI or CURSORBENCH_REQUIRE_PG=1 is set")
        pytest.skip(f"{reason}; set CURSORBENCH_TEST_PG_URL to test PostgreSQL")
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'leaderboard.db'}")
        yield database
        database.close()
        return
    admin: Engine = request.getfixturevalue("pg_admin")
    schema = f"cb_test_{uuid.uuid4().hex}"
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    database = Database(PG_URL, {"options": f"-csearch_path={schema}"}, "postgresql")
    try:
        yield database
    finally:
        database.close()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def engine_for(database: Database) -> Engine:
    """A plain engine on the test database (no schema check), for setting up old schemas."""
    return create_engine(database.url, connect_args=database.connect_args or {})


T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def generated_run(
    store: SqlStore,
    run_id: str,
    outcomes: dict[str, list[bool]],
    *,
    model: str = "model-a",
    config_hash: str | None = None,
    cost: float = 0.01,
    suite_version: str = "0.1",
    categories: dict[str, str] | None = None,
    finish: bool = True,
    tamper: list[str] | None = None,
    sandbox: str = "bubblewrap",
    warnings: list[str] | None = None,
) -> None:
    """A run with the given outcome per task and epoch, written through the store (generated
    rows: no agent ran; for statistics and scale, not for end-to-end behaviour)."""
    epochs = max((len(runs) for runs in outcomes.values()), default=1)
    store.start_run(
        RunInfo(
            id=run_id,
            created_at=T0 + timedelta(minutes=len(run_id)),
            model=model,
            base_url="http://127.0.0.1:1/v1",
            endpoint_label="external",
            suite_version=suite_version,
            config_hash=config_hash or f"hash-{run_id}",
            config={"epochs": epochs, "tasks": dict.fromkeys(outcomes, "digest")},
            sandbox=sandbox,
            warnings=list(warnings or []),
        )
    )
    if categories:
        store.describe_tasks(suite_version, dict(categories))
    results = [
        AttemptResult(
            task_id=task,
            epoch=epoch,
            status=Status.RESOLVED if resolved else Status.FAILED,
            failure=None if resolved else Failure.TESTS_FAILED,
            tests={
                "t::a": TestOutcome.PASSED,
                "t::b": TestOutcome.PASSED if resolved else TestOutcome.FAILED,
            },
            usage=Usage(tokens_in=1000, tokens_out=100, cost_usd=cost, model_latency_s=2.0),
            started_at=T0,
            finished_at=T0 + timedelta(seconds=10),
        )
        for task, runs in outcomes.items()
        for epoch, resolved in enumerate(runs)
    ]
    for i, result in enumerate(results):
        if result.task_id in (tamper or []):
            results[i] = result.model_copy(
                update={
                    "status": Status.FAILED,
                    "failure": Failure.GRADER_TAMPERING,
                    "flags": ["frame-inspection: pkg/mod.py:3"],
                }
            )
    store.record_many(run_id, results)
    if finish:
        store.finish_run(run_id, summarize(results, len(results)))


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqlStore]:
    store = open_store(f"sqlite:///{tmp_path / 'lb.sqlite'}")
    yield store
    store.close()


@pytest.fixture(scope="session")
def fill() -> Any:
    """`generated_run`, for tests (they cannot import conftest)."""
    return generated_run
