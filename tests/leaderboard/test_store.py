"""The leaderboard store, against SQLite (a file) and a real PostgreSQL server.

PostgreSQL is reached at `CURSORBENCH_TEST_PG_URL` (default: the local trust-auth server); each
test gets its own schema, dropped afterwards. If the server is unreachable the PostgreSQL cases
are skipped, unless `CI` is set or `CURSORBENCH_REQUIRE_PG=1`, where they fail instead.
"""

from __future__ import annotations

import multiprocessing
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from harness.results import AttemptResult, Failure, RunInfo, Status, Usage
from harness.results import TestOutcome as Outcome  # aliased: pytest would try to collect it
from harness.run.store import ResultStore
from harness.run.summary import RunSummary, summarize
from leaderboard import SqlStore, StoreError, open_store
from leaderboard.schema import AttemptRow, RunRow

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))


@pytest.fixture
def store(db: Any) -> SqlStore:
    return db.open()


def make_run(run_id: str = "run-1", config_hash: str = "hash-a", **changes: Any) -> RunInfo:
    values: dict[str, Any] = {
        "id": run_id,
        "created_at": T0,
        "model": "gpt-test",
        "base_url": "http://127.0.0.1:8000/v1",
        "endpoint_label": "reference-solver",
        "suite_version": "2025.03",
        "config_hash": config_hash,
        "config": {"epochs": 2, "limits": {"turns": 50, "tokens": None}, "tags": ["a", "b"]},
        "sandbox": "bubblewrap",
        "warnings": ["sandbox has network"],
        "out_dir": "/data/runs/run-1",
    }
    return RunInfo(**(values | changes))


def make_result(task_id: str = "task-a", epoch: int = 0, **changes: Any) -> AttemptResult:
    values: dict[str, Any] = {
        "task_id": task_id,
        "epoch": epoch,
        "status": Status.FAILED,
        "failure": Failure.TESTS_FAILED,
        "error": "2 of 3 tests failed — see ünïcode",
        "tests": {
            "tests/test_a.py::test_one": Outcome.PASSED,
            "tests/test_a.py::test_two[x-1]": Outcome.FAILED,
            "tests/test_b.py::test_three": Outcome.MISSING,
        },
        "diff_lines_added": 12,
        "diff_lines_removed": 3,
        "usage": Usage(
            tokens_in=12_345,
            tokens_out=678,
            cost_usd=0.1 + 0.2,
            model_calls=7,
            model_latency_s=3.25,
            retries=1,
        ),
        "turns": 9,
        "tool_calls": 14,
        "wall_time_s": 42.5,
        "started_at": T0,
        "finished_at": T0 + timedelta(seconds=42.5),
        "trajectory": f"trajectories/{task_id}#{epoch}.jsonl",
    }
    return AttemptResult(**(values | changes))


def count_attempts(store: SqlStore) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(AttemptRow)).scalar_one()


def assert_one_line(message: str) -> None:
    assert message
    assert "\n" not in message and "\r" not in message
    assert "Traceback" not in message and "[SQL:" not in message


# --- runs -----------------------------------------------------------------------------------


def test_sql_store_is_the_harness_s_result_store(store: SqlStore) -> None:
    assert isinstance(store, ResultStore)


def test_start_run_is_idempotent(store: SqlStore) -> None:
    run = make_run()
    store.start_run(run)
    store.start_run(run)
    store.start_run(make_run(model="ignored: same config hash, so nothing changes"))

    assert store.runs() == [run]
    got = store.run(run.id)
    assert got == run
    assert got is not None and got.created_at.tzinfo is not None
    assert store.run("no-such-run") is None


def test_a_relative_run_folder_is_stored_absolute(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `--out runs/x` (the default) is relative to where it ran
    store.start_run(make_run(out_dir="runs/run-1"))
    monkeypatch.chdir("/")
    got = store.run("run-1")
    assert got is not None and got.out_dir == str(tmp_path / "runs" / "run-1")


def test_start_run_refuses_a_different_config(store: SqlStore) -> None:
    store.start_run(make_run(config_hash="hash-a"))

    with pytest.raises(StoreError, match="config hash") as caught:
        store.start_run(make_run(config_hash="hash-b"))

    assert_one_line(str(caught.value))
    assert "hash-a" in str(caught.value) and "hash-b" in str(caught.value)
    assert store.run("run-1") == make_run(config_hash="hash-a")


def test_runs_are_listed_newest_first(store: SqlStore) -> None:
    for run_id, hours in [("middle", 1), ("oldest", 0), ("newest", 2)]:
        store.start_run(make_run(run_id, created_at=T0 + timedelta(hours=hours)))
    # Same instant, written in another zone: ordered by the instant, then id.
    store.start_run(make_run("newest-too", created_at=(T0 + timedelta(hours=2)).astimezone(UTC)))

    assert [run.id for run in store.runs()] == ["newest-too", "newest", "middle", "oldest"]


def test_naive_created_at_is_taken_as_utc(store: SqlStore) -> None:
    store.start_run(make_run(created_at=datetime(2025, 1, 2, 3, 4, 5)))

    got = store.run("run-1")
    assert got is not None
    assert got.created_at == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_finish_run_sets_finished_at_and_summary(store: SqlStore) -> None:
    store.start_run(make_run())
    summary = summarize([make_result("task-a", 0), make_result("task-a", 1)], planned=4)
    before = datetime.now(UTC)

    store.finish_run("run-1", summary)

    with store.engine.connect() as conn:
        row = conn.execute(select(RunRow.finished_at, RunRow.summary, RunRow.status)).one()
    assert row.summary == summary.as_json() and RunSummary.read(row.summary) == summary
    assert row.status == "partial"  # 2 of 4 planned
    assert row.finished_at is not None
    assert before - timedelta(seconds=5) <= row.finished_at <= datetime.now(UTC)


def test_finish_run_of_an_unknown_run_is_an_error(store: SqlStore) -> None:
    with pytest.raises(StoreError, match="no such run") as caught:
        store.finish_run("nope", summarize([], planned=0))
    assert_one_line(str(caught.value))


# --- attempts -------------------------------------------------------------------------------


def test_record_is_insert_only_and_a_retried_write_changes_nothing(store: SqlStore) -> None:
    store.start_run(make_run())
    first = make_result()
    retried = make_result(
        status=Status.RESOLVED,
        failure=None,
        error=None,
        tests={"tests/test_a.py::test_one": Outcome.PASSED},
        usage=Usage(tokens_in=1, tokens_out=2, cost_usd=0.5),
        trajectory=None,
    )

    store.record("run-1", first)
    store.record("run-1", first)
    store.record("run-1", retried)

    assert count_attempts(store) == 1
    assert store.attempts("run-1") == [first]
    with store.engine.connect() as conn:
        row = conn.execute(select(AttemptRow)).one()
    assert (row.status, row.failure, row.resolved) == ("failed", "tests_failed", False)
    assert (row.tests_passed, row.tests_total, row.flags) == (1, 3, [])
    assert (row.tokens_in, row.tokens_out, row.trajectory) == (12_345, 678, first.trajectory)


def test_record_of_an_unknown_run_is_an_error(store: SqlStore) -> None:
    with pytest.raises(StoreError, match="no such run") as caught:
        store.record("nope", make_result())
    assert_one_line(str(caught.value))
    assert count_attempts(store) == 0


def test_attempt_keys(store: SqlStore) -> None:
    store.start_run(make_run("run-1"))
    store.start_run(make_run("run-2"))
    for task_id, epoch in [("task-a", 0), ("task-a", 1), ("repo#weird", 0)]:
        store.record("run-1", make_result(task_id, epoch))
    store.record("run-2", make_result("task-z", 3))

    assert store.attempt_keys("run-1") == {"task-a#0", "task-a#1", "repo#weird#0"}
    assert store.attempt_keys("run-2") == {"task-z#3"}
    assert store.attempt_keys("no-such-run") == set()


def test_attempts_round_trip_exactly(store: SqlStore) -> None:
    store.start_run(make_run())
    originals = [
        make_result("task-b", 1),
        make_result("task-b", 0, status=Status.RESOLVED, failure=None, error=None),
        make_result(
            "task-a",
            0,
            status=Status.ERROR,
            failure=Failure.MODEL_API_ERROR,
            error="HTTP 503 from endpoint",
            tests={},
            usage=Usage(),
            started_at=datetime(2025, 1, 1, 0, 0, 0),  # naive stays naive in the JSON copy
            finished_at=datetime(2025, 1, 1, 0, 0, 1),
        ),
        make_result("task-a", 1, started_at=T0.astimezone(UTC), wall_time_s=1e-9),
    ]
    for result in originals:
        store.record("run-1", result)

    got = store.attempts("run-1")

    expected = sorted(originals, key=lambda result: (result.task_id, result.epoch))
    assert got == expected
    assert [result.model_dump() for result in got] == [r.model_dump() for r in expected]
    assert got[2].usage.cost_usd == 0.1 + 0.2
    assert store.attempts("no-such-run") == []


def test_delete_attempts(store: SqlStore) -> None:
    store.start_run(make_run())
    for task_id, epoch in [("task-a", 0), ("task-a", 1), ("task-b", 0)]:
        store.record("run-1", make_result(task_id, epoch))

    store.delete_attempts("run-1", {"task-a#1", "task-b#0", "never-recorded#4"})
    store.delete_attempts("run-1", set())

    assert store.attempt_keys("run-1") == {"task-a#0"}
    with pytest.raises(ValueError, match="not an attempt key"):
        store.delete_attempts("run-1", {"no-epoch"})


def test_an_attempt_is_replaced_only_by_deleting_it_first(store: SqlStore) -> None:
    """The protocol's one write rule: the first record stands; delete, then record anew."""
    store.start_run(make_run())
    errored = make_result(status=Status.ERROR, failure=Failure.INFRA_ERROR, error="boom")
    rerun = make_result(status=Status.RESOLVED, failure=None, error=None)
    store.record("run-1", errored)
    store.record("run-1", rerun)
    assert store.attempts("run-1") == [errored]

    store.delete_attempts("run-1", {errored.key})
    store.record("run-1", rerun)
    assert store.attempts("run-1") == [rerun]


# --- several writers ------------------------------------------------------------------------


def test_two_stores_on_one_database_both_write(db: Any) -> None:
    one, two = db.open(), db.open()  # two engines, as two processes would have
    run = make_run()
    one.start_run(run)
    two.start_run(run)
    one.record("run-1", make_result("task-a", 0))
    two.record("run-1", make_result("task-b", 0))
    two.record("run-1", make_result("task-a", 0, turns=99))  # one's attempt: the first stands

    assert one.attempt_keys("run-1") == two.attempt_keys("run-1") == {"task-a#0", "task-b#0"}
    assert [result.turns for result in one.attempts("run-1")] == [9, 9]


def test_concurrent_writers_leave_one_row_per_attempt(db: Any) -> None:
    stores = [db.open(), db.open()]
    stores[0].start_run(make_run())
    keys = [(f"task-{i % 10}", i % 3) for i in range(60)]  # overlapping keys, many repeats
    errors: list[BaseException] = []

    def write(store: SqlStore, offset: int) -> None:
        try:
            store.start_run(make_run())
            for task_id, epoch in keys[offset:] + keys[:offset]:
                store.record("run-1", make_result(task_id, epoch))
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=write, args=(store, offset))
        for store, offset in zip(stores * 2, [0, 7, 13, 29], strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert stores[1].attempt_keys("run-1") == {f"{task}#{epoch}" for task, epoch in keys}
    assert count_attempts(stores[0]) == len(set(keys))


def _open_and_write(url: str, connect_args: dict[str, Any] | None, start: Any, k: int) -> None:
    """One writer process: open a brand-new database at the same time as the others, write."""
    start.wait()
    store = open_store(url, connect_args=connect_args)
    try:
        store.start_run(make_run())
        for i in range(40):
            store.record("run-1", make_result(f"task-{(i * 7 + k) % 20}", i % 2))
    finally:
        store.close()


@pytest.mark.slow
def test_processes_opening_a_new_database_at_once(db: Any) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    workers = [
        context.Process(target=_open_and_write, args=(db.url, db.connect_args, start, k))
        for k in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)

    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    assert len(db.open().attempt_keys("run-1")) == 40


# --- opening ----------------------------------------------------------------------------------


def test_sqlite_folder_is_created_and_wal_is_on(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "lb.db"
    store = open_store(f"sqlite:///{path}")
    try:
        store.start_run(make_run())
        assert path.exists()
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert (conn.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0) > 0
    finally:
        store.close()


def test_reopening_keeps_the_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    first = open_store(url)
    first.start_run(make_run())
    first.record("run-1", make_result())
    first.close()

    second = open_store(url)
    try:
        assert second.attempts("run-1") == [make_result()]
    finally:
        second.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("nosuchdb://alice:s3cr3t-pw@db.example/leaderboard", "unknown database dialect"),
        ("postgresql+psycopg://alice:s3cr3t-pw@127.0.0.1:1/leaderboard", "refused"),
        ("sqlite:////proc/x/y.db", "cannot create folder"),
        ("postgresql://alice:s3cr3t-pw@host:notaport/db", "not a valid database URL"),
        ("mysql+nosuchdriver://alice:s3cr3t-pw@host/db", "unknown database dialect"),
    ],
)
def test_open_failures_are_one_line_store_errors(url: str, says: str) -> None:
    with pytest.raises(StoreError) as caught:
        open_store(url)

    message = str(caught.value)
    assert_one_line(message)
    assert message.startswith("cannot open database '")
    assert says in message
    assert "s3cr3t-pw" not in message
    if "alice" in url:
        assert "alice:***@" in message


def test_a_missing_driver_is_a_one_line_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_psycopg(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "psycopg" or name.startswith("psycopg."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    with pytest.raises(StoreError, match="driver not installed") as caught:
        open_store("postgresql+psycopg://alice:s3cr3t-pw@127.0.0.1/db")
    assert_one_line(str(caught.value))
    assert "s3cr3t-pw" not in str(caught.value)


def test_eval_scores_land_in_their_own_rows(store: SqlStore) -> None:
    from harness.results import Score
    from leaderboard.schema import AttemptScoreRow

    store.start_run(make_run())
    scores = {"intent": Score(value=0.5, reasons=["edited when asked a question"])}
    store.record("run-1", make_result(scores=scores))
    store.record("run-1", make_result(scores=scores))  # a retried write adds nothing
    with store._engine.connect() as conn:
        rows = conn.execute(select(AttemptScoreRow.name, AttemptScoreRow.value)).all()
    assert [(row.name, row.value) for row in rows] == [("intent", 0.5)]


def test_record_many_in_bulk_matches_the_row_values_and_stays_insert_only(
    store: SqlStore,
) -> None:
    """A batch big enough for the bulk path (COPY on PostgreSQL), with a key written before and
    a key twice in the batch: every column as `rows.attempt_values` says, first write stands."""
    from leaderboard import bulk, rows

    store.start_run(make_run())
    earlier = make_result("task-0000", 0)
    store.record("run-1", earlier)
    batch = [
        make_result(f"task-{i:04d}", i % 2, flags=[f"tell: f{i}.py:1"] if i % 7 == 0 else [])
        for i in range(bulk.COPY_MIN_ROWS * 3)
    ]
    batch[0] = make_result("task-0000", 0, status=Status.RESOLVED, failure=None, error=None)
    batch.append(make_result("task-0001", 1, turns=99))  # the same key twice in one batch

    store.record_many("run-1", batch)

    originals = {(r.task_id, r.epoch): r for r in reversed(batch[1:])} | {("task-0000", 0): earlier}
    assert count_attempts(store) == len(originals)
    columns = [c for c in AttemptRow.__table__.c if c.name != "id"]
    with store.engine.connect() as conn:
        stored = {(row.task_id, row.epoch): row for row in conn.execute(select(*columns))}
    for key, original in originals.items():
        expected = rows.attempt_values("run-1", original)
        assert dict(stored[key]._mapping) == expected, key
    assert stored[("task-0001", 1)].turns == 9  # the first of the two in the batch
    read = {(r.task_id, r.epoch): r for r in store.attempts("run-1")}
    assert read[("task-0000", 0)] == earlier
    assert read[("task-0002", 0)] == originals[("task-0002", 0)]


def test_bulk_result_json_keeps_non_finite_floats() -> None:
    """pydantic would write inf as null (unreadable); the bulk path falls back to json.dumps."""
    import json

    from leaderboard import bulk

    plain = make_result()
    assert json.loads(bulk._result_json(plain)) == plain.model_dump(mode="json")
    odd = make_result(usage=Usage(wait_s=float("inf")))
    assert json.loads(bulk._result_json(odd))["usage"]["wait_s"] == float("inf")


def test_describe_tasks_adds_missing_tasks_and_fills_only_missing_categories(
    store: SqlStore,
) -> None:
    from leaderboard.schema import TaskRow

    store.start_run(make_run())  # its config names no tasks
    store.describe_tasks("2025.03", {"a": None, "b": "debugging"})
    store.describe_tasks("2025.03", {"a": "refactor", "b": "new_feature", "c": None})
    store.describe_tasks("2025.03", {"a": "new_feature"})
    with store.engine.connect() as conn:
        found = dict(conn.execute(select(TaskRow.task_id, TaskRow.category)).all())
    assert found == {"a": "refactor", "b": "debugging", "c": None}
