"""Leaderboard at scale: a store with N generated attempt rows on SQLite and PostgreSQL.

Measures the ingest rate through the store's write path (`SqlStore.record_many`: insert-only
fact rows plus metric rows, in batches of one run), the time to finish every run (summary and
breakdown rows), and the median time of each view's queries: the leaderboard (all runs, and
filtered by category), one run's page, a run-vs-run diff, a training run's curve.
Targets (issue 9): ingest >= 20,000 rows/s; each view's queries < 300 ms.

    .venv/bin/python benchmarks/leaderboard_scale.py --rows 1000000 [--write]

Rows are generated (no agent ran); building the `AttemptResult`s is not timed. PostgreSQL is
reached at CURSORBENCH_TEST_PG_URL (default: the local server); the benchmark works in a
schema of its own and drops it afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from harness.results import AttemptResult, Failure, RunInfo, Status, TestOutcome, Usage
from harness.summary import summarize
from leaderboard import open_store, queries
from leaderboard.store import SqlStore

PG_URL = os.environ.get(
    "CURSORBENCH_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
T0 = datetime(2025, 1, 1, tzinfo=UTC)
CATEGORIES = ["new_feature", "debugging", "refactor", "iterate_on_feature"]


def make_results(
    n_tasks: int, epochs: int, skill: float, rng: random.Random
) -> list[AttemptResult]:
    results = []
    for task in range(n_tasks):
        for epoch in range(epochs):
            ok = rng.random() < skill
            results.append(
                AttemptResult(
                    task_id=f"task-{task:05d}",
                    epoch=epoch,
                    status=Status.RESOLVED if ok else Status.FAILED,
                    failure=None if ok else Failure.TESTS_FAILED,
                    tests={
                        "t::a": TestOutcome.PASSED,
                        "t::b": TestOutcome.PASSED if ok else TestOutcome.FAILED,
                    },
                    usage=Usage(
                        tokens_in=rng.randint(1000, 50000),
                        tokens_out=rng.randint(100, 5000),
                        cost_usd=rng.random() / 10,
                        model_calls=5,
                        model_latency_s=rng.random() * 20,
                        wait_s=rng.random() if rng.random() < 0.1 else 0.0,
                    ),
                    turns=5,
                    tool_calls=8,
                    wall_time_s=30.0,
                    started_at=T0,
                    finished_at=T0 + timedelta(seconds=30),
                )
            )
    return results


def run_info(index: int, tasks: int, epochs: int) -> RunInfo:
    return RunInfo(
        id=uuid.uuid4().hex,
        created_at=T0 + timedelta(hours=index),
        model=f"model-{index % 10}",
        base_url="http://127.0.0.1:1/v1",
        endpoint_label="external",
        suite_version="bench",
        config_hash=f"hash-{index}",
        config={"epochs": epochs, "tasks": {f"task-{t:05d}": "d" for t in range(tasks)}},
        sandbox="bubblewrap",
    )


def median_ms(action: Callable[[], Any], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench(store: SqlStore, rows: int, runs: int, epochs: int) -> dict[str, float]:
    per_run = rows // runs
    tasks = per_run // epochs
    rng = random.Random(0)
    store.describe_tasks("bench", {f"task-{t:05d}": CATEGORIES[t % 4] for t in range(tasks)})
    infos, ingest_s, finish_s = [], 0.0, 0.0
    for index in range(runs):
        info = run_info(index, tasks, epochs)
        results = make_results(tasks, epochs, 0.3 + 0.5 * rng.random(), rng)  # not timed
        start = time.perf_counter()
        store.start_run(info)
        store.record_many(info.id, results)
        ingest_s += time.perf_counter() - start
        summary = summarize(results, len(results))  # the runner's figures: not timed
        start = time.perf_counter()
        store.finish_run(info.id, summary)
        finish_s += time.perf_counter() - start
        infos.append(info)
    for step, info in enumerate(infos[:10]):
        store.attach_checkpoint(info.id, "bench-train", step * 1000, step * 10**9)
    a, b = infos[0].id, infos[1].id
    with store.engine.connect() as conn:
        figures = {
            "rows": float(runs * tasks * epochs),
            "ingest_rows_per_s": runs * tasks * epochs / ingest_s,
            "finish_ms_per_run": finish_s / runs * 1000,
            "leaderboard_ms": median_ms(lambda: queries.leaderboard(conn)),
            "leaderboard_category_ms": median_ms(
                lambda: queries.leaderboard(conn, queries.Filters(category="debugging"))
            ),
            "run_page_ms": median_ms(lambda: queries.run_detail(conn, a)),
            "run_diff_ms": median_ms(lambda: queries.compare(conn, a, b)),
            "training_curve_ms": median_ms(lambda: queries.checkpoint_curve(conn, "bench-train")),
        }
    return figures


def on_sqlite(rows: int, runs: int, epochs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{Path(folder) / 'scale.sqlite'}")
        try:
            return bench(store, rows, runs, epochs)
        finally:
            store.close()


def on_postgresql(rows: int, runs: int, epochs: int) -> dict[str, float]:
    schema = f"cb_scale_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        store = open_store(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
        try:
            return bench(store, rows, runs, epochs)
        finally:
            store.close()
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def report(results: dict[str, dict[str, float]], runs: int, epochs: int) -> str:
    lines = [
        f"## Leaderboard at scale ({datetime.now(UTC):%Y-%m-%d}, "
        "`benchmarks/leaderboard_scale.py`)",
        "",
        f"Generated attempts in {runs} runs of {epochs} epochs; 2-core shared machine. "
        "Targets: ingest >= 20,000 rows/s, each view's queries < 300 ms (median of 5).",
        "",
        "| engine | rows | ingest rows/s | finish ms/run | leaderboard ms | by category ms "
        "| run page ms | run diff ms | training curve ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for engine, f in results.items():
        lines.append(
            f"| {engine} | {int(f['rows']):,} | {f['ingest_rows_per_s']:,.0f} | "
            f"{f['finish_ms_per_run']:.0f} | {f['leaderboard_ms']:.1f} | "
            f"{f['leaderboard_category_ms']:.1f} | {f['run_page_ms']:.1f} | "
            f"{f['run_diff_ms']:.1f} | {f['training_curve_ms']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--write", action="store_true", help="append to benchmarks/RESULTS.md")
    args = parser.parse_args()
    results = {}
    for engine in args.engines.split(","):
        bench_on = on_sqlite if engine == "sqlite" else on_postgresql
        results[engine] = bench_on(args.rows, args.runs, args.epochs)
        print(engine, {k: round(v, 1) for k, v in results[engine].items()}, flush=True)
    text_out = report(results, args.runs, args.epochs)
    print(text_out)
    if args.write:
        path = Path(__file__).parent / "RESULTS.md"
        with path.open("a", encoding="utf-8") as out:
            out.write("\n" + text_out)


if __name__ == "__main__":
    main()
