"""The runner: streaming results, resuming, and a result store that fails midway."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

import leaderboard
from harness.model.doubles import DoneOnlyDouble, ScriptedDouble
from harness.model.openai_server import Reply
from harness.results import AttemptResult, RunInfo
from harness.run.summary import RunSummary
from leaderboard import open_store

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


class StoreThatFailsToRecord:
    """A test double for a database that goes away mid-run: every `record` raises."""

    def __init__(self, url: str) -> None:
        self.inner = open_store(url)

    def start_run(self, run: RunInfo) -> None:
        self.inner.start_run(run)

    def describe_tasks(self, suite_version: str, categories: dict[str, str | None]) -> None:
        self.inner.describe_tasks(suite_version, categories)

    def record(self, run_id: str, result: AttemptResult) -> None:
        raise ConnectionError("server closed the connection unexpectedly")

    def attempt_keys(self, run_id: str) -> set[str]:
        return self.inner.attempt_keys(run_id)

    def finish_run(self, run_id: str, summary: RunSummary) -> None:
        self.inner.finish_run(run_id, summary)

    def delete_attempts(self, run_id: str, keys: set[str]) -> None:
        self.inner.delete_attempts(run_id, keys)

    def close(self) -> None:
        self.inner.close()


def test_a_failing_store_loses_nothing_and_a_rerun_syncs_it(
    tmp_path: Path, serve, run_benchmark, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'lb.sqlite'}"
    monkeypatch.setattr(leaderboard, "open_store", StoreThatFailsToRecord)
    options = {
        "base_url": serve(DoneOnlyDouble()),
        "model": "done-only-double",
        "tasks": ["textkit-*"],
        "db": url,
    }
    first = run_benchmark(**options)
    assert first.summary.attempts == 2
    assert len(first.store_warnings) == 2
    assert "record failed: server closed the connection" in first.store_warnings[0]
    assert len((tmp_path / "run" / "attempts.jsonl").read_text().splitlines()) == 2
    assert open_store(url).attempt_keys(first.run.id) == set()

    monkeypatch.undo()
    second = run_benchmark(**options)
    assert second.store_warnings == []
    assert second.run.id == first.run.id
    assert open_store(url).attempt_keys(first.run.id) == {
        "textkit-case-styles#0",
        "textkit-slugify#0",
    }


def test_epochs_are_separate_attempts_with_their_own_trajectories(
    tmp_path: Path, serve, run_benchmark
) -> None:
    outcome = run_benchmark(
        base_url=serve(DoneOnlyDouble()),
        model="done-only-double",
        tasks=["textkit-slugify"],
        epochs=3,
        concurrency=3,
    )
    assert [(r.task_id, r.epoch) for r in outcome.results] == [
        ("textkit-slugify", 0),
        ("textkit-slugify", 1),
        ("textkit-slugify", 2),
    ]
    trajectories = sorted(p.name for p in (tmp_path / "run" / "trajectories").iterdir())
    assert trajectories == [f"textkit-slugify__{epoch}.jsonl" for epoch in range(3)]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["per_task"] == {"textkit-slugify": {"attempts": 3, "resolved": 0, "errors": 0}}


def test_tokens_and_cost_are_accounted(tmp_path: Path, serve, run_benchmark) -> None:
    script = ScriptedDouble([Reply(tool_calls=[("list_dir", {"path": "."})])] * 2)
    outcome = run_benchmark(
        base_url=serve(script),
        model="scripted-double",
        tasks=["textkit-slugify"],
        price_input=1.0,
        price_output=10.0,
    )
    (result,) = outcome.results
    assert result.turns == 3 and result.tool_calls == 3
    assert result.usage.model_calls == 3
    assert result.usage.tokens_in > 0 and result.usage.tokens_out > 0
    expected = (result.usage.tokens_in * 1.0 + result.usage.tokens_out * 10.0) / 1e6
    assert result.usage.cost_usd == pytest.approx(expected)
    assert outcome.summary.cost_usd == pytest.approx(expected, abs=1e-6)


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    engine = create_engine(PG_URL)
    schema = f"cb_test_{uuid.uuid4().hex[:12]}"
    try:
        with engine.begin() as connection:
            connection.execute(text(f"create schema {schema}"))
    except Exception as error:
        engine.dispose()
        if os.environ.get("CI") or os.environ.get("CURSORBENCH_REQUIRE_PG") == "1":
            raise
        pytest.skip(f"PostgreSQL not reachable at {PG_URL}: {type(error).__name__}")
    yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    with engine.begin() as connection:
        connection.execute(text(f"drop schema {schema} cascade"))
    engine.dispose()


def test_a_run_lands_in_postgresql(serve, run_benchmark, pg_schema_url: str) -> None:
    outcome = run_benchmark(
        base_url=serve(DoneOnlyDouble()),
        model="done-only-double",
        tasks=["textkit-*"],
        db=pg_schema_url,
    )
    store = open_store(pg_schema_url)
    stored = store.attempts(outcome.run.id)
    assert [(r.task_id, r.epoch, r.failure) for r in stored] == [
        (r.task_id, r.epoch, r.failure) for r in outcome.results
    ]
    run = store.run(outcome.run.id)
    assert run is not None and run.model == "done-only-double"
    store.close()


class SleepyDouble(ScriptedDouble):
    """Lists the workspace twice, taking `delay` seconds per reply, then finishes."""

    def __init__(self, delay: float) -> None:
        super().__init__([Reply(tool_calls=[("list_dir", {"path": "."})])] * 2)
        self.delay = delay

    def respond(self, request: dict) -> Reply:
        time.sleep(self.delay)
        return super().respond(request)  # type: ignore[return-value]


def test_the_run_s_wall_time_is_not_the_sum_of_its_attempts(
    tmp_path: Path, serve, run_benchmark
) -> None:
    options = {"base_url": serve(SleepyDouble(0.4)), "model": "scripted-double",
               "tasks": ["textkit-*"], "concurrency": 2}  # fmt: skip
    outcome = run_benchmark(**options)
    summary = outcome.summary
    assert summary.attempt_time_s is not None
    assert summary.attempt_time_s >= 2.4  # two attempts of three 0.4 s replies each
    assert summary.wall_time_s < 0.85 * summary.attempt_time_s  # they overlapped
    started = time.monotonic()
    again = run_benchmark(**options)  # a resumed session adds its own time, no more
    resumed_s = time.monotonic() - started
    assert again.already_complete
    assert summary.wall_time_s <= again.summary.wall_time_s <= summary.wall_time_s + resumed_s
