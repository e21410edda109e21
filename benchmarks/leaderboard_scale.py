"""Leaderboard at scale: a store with N generated attempt rows on SQLite and PostgreSQL, and
every dashboard page timed over HTTP.

Measures the ingest rate through the store's write path (`SqlStore.record_many`: insert-only
fact rows plus metric rows, in batches of one run), the time to finish every run (summary and
breakdown rows), then serves the dashboard as a user does (`cursorbench dashboard --db URL`,
a process of its own, uvicorn on loopback) and times each page end to end over HTTP, the
median of 5 GETs after one warm-up (the warm-up, the first GET, is reported too: it pays for
cold caches, e.g. the bootstrap's resample counts on the first comparison over 5,000 tasks),
once the dashboard has loaded the bundled task definitions it starts loading as it starts
(that time, from its start, is reported as well):
the leaderboard by model, the runs list (first and a later page, filtered by category), cost,
breakdown (first and a later page), a training run, a run (first page, a deep page, filtered,
named by a prefix), two runs compared, the compare pickers, an attempt (with a 400-record
trajectory stored) and its raw trajectory. Targets (issues 9 and 18): ingest >= 20,000
rows/s; every page < 300 ms.

    .venv/bin/python benchmarks/leaderboard_scale.py --rows 1000000 [--write] [--keep DIR]

Rows are generated (no agent ran); building the `AttemptResult`s is not timed. PostgreSQL is
reached at CURSORBENCH_TEST_PG_URL (default: the local server); the benchmark works in a
schema of its own and drops it afterwards (with `--keep DIR` it keeps both stores and reuses
them on the next call, to re-time or profile pages without ingesting again).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, text

from harness.results import AttemptResult, Failure, RunInfo, Status, TestOutcome, Usage
from harness.run.summary import summarize
from leaderboard import open_store
from leaderboard.rows import TRAJECTORIES_TABLE, insert_ignoring
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


def median_ms(
    action: Callable[[], Any], repeats: int = 5, warm_up: bool = True
) -> tuple[float, float]:
    """The median of `repeats` timed calls after a warm-up, and the warm-up's own time (the
    first request pays for imports and caches), in ms."""
    first = math.nan
    if warm_up:
        start = time.perf_counter()
        action()
        first = (time.perf_counter() - start) * 1000
    if not repeats:
        return math.nan, first
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), first


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=60) as response:
        if response.status != 200:
            raise RuntimeError(f"{url}: HTTP {response.status}")
        return len(response.read())


def trajectory_blob(task: str, records: int = 400) -> bytes:
    """A plausible trajectory: messages, model replies with tool calls, tool outputs."""
    lines = [{"type": "header", "format_version": 1, "task_id": task, "epoch": 0}]
    for i in range(records // 2):
        arguments = json.dumps({"command": f"pytest -q tests/test_{i}.py"})
        call: dict[str, Any] = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": arguments}
        message = {"role": "assistant", "content": f"step {i}", "tool_calls": [call]}
        usage = {"tokens_in": 1000, "tokens_out": 50}
        lines.append({"type": "model", "message": message, "usage": usage})
        output = "line of output\n" * 40
        lines.append({"type": "tool", "name": "bash", "arguments": arguments, "output": output})
    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n"
    lines.append({"type": "diff", "patch": patch, "flags": []})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


PAGES = [
    ("leaderboard (by model)", "/"),
    ("leaderboard, best runs", "/?pick=best"),
    ("runs list", "/runs"),
    ("runs list, page 2 of 10/page", "/runs?per=10&page=2"),
    ("runs list, by category", "/runs?category=debugging"),
    ("cost vs score", "/cost"),
    ("breakdown", "/breakdown"),
    ("breakdown, page 5", "/breakdown?page=5"),
    ("training run", "/training/bench-train"),
    ("run page", "/runs/{a}"),
    ("run page, deep page", "/runs/{a}?page={deep}"),
    ("run page, failures only", "/runs/{a}?failure=tests_failed&page=3"),
    ("run page, by id prefix", "/runs/{a_short}"),
    ("compare two runs", "/compare?a={a}&b={b}"),
    ("compare pickers", "/compare"),
    ("attempt (400-record trajectory)", "/runs/{a}/attempts/task-00000/0"),
    ("raw trajectory", "/runs/{a}/attempts/task-00000/0/raw"),
]


ATTEMPT = "/runs/{a}/attempts/task-00000/0"


def build(store: SqlStore, rows: int, runs: int, epochs: int) -> dict[str, Any]:
    """Store `runs` generated runs of `rows` attempts in all; the ingest figures and the names
    the page paths use."""
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
        if index % 10 == 9:
            print(f"  {index + 1}/{runs} runs stored", flush=True)
    for step, info in enumerate(infos[:10]):
        store.attach_checkpoint(info.id, "bench-train", step * 1000, step * 10**9)
    a, b = infos[0].id, infos[1].id
    blob = trajectory_blob("task-00000")
    with store.engine.begin() as conn:
        row = {"run_id": a, "task_id": "task-00000", "epoch": 0, "path": None, "size": len(blob)}
        row |= {"sha256": hashlib.sha256(blob).hexdigest(), "blob": blob}
        insert_ignoring(conn, TRAJECTORIES_TABLE, [row])
    names = {"a": a, "b": b, "a_short": a[:10], "deep": str(tasks * epochs // 100 // 2)}
    return {
        "names": names,
        "rows": float(runs * tasks * epochs),
        "ingest_rows_per_s": runs * tasks * epochs / ingest_s,
        "finish_ms_per_run": finish_s / runs * 1000,
    }


def time_pages(url: str, names: dict[str, str]) -> dict[str, float]:
    """Each page's median time over HTTP, in ms, by label, served by `cursorbench dashboard`
    in a process of its own (as a user serves it: no ingest in its memory, its own GIL)."""
    started = time.perf_counter()
    with dashboard_process(url) as (base, pid):
        # the dashboard loads the bundled task definitions (fail-to-pass lists) in the
        # background as it starts; an attempt page waits for them: time that, then the pages
        get(base + ATTEMPT.format(**names))
        figures = {"warm_s": time.perf_counter() - started, "load_before": os.getloadavg()[0]}
        for label, path in PAGES:
            fetch = functools.partial(get, base + path.format(**names))
            first = median_ms(fetch, repeats=0)[1]
            before = cpu_ms(pid)
            timed = median_ms(fetch, warm_up=False)
            figures[label], figures[f"{label}, first GET"] = timed[0], first
            figures[f"{label}, cpu"] = (cpu_ms(pid) - before) / 5  # over its 5 timed GETs
            print(f"  {label}: {timed[0]:.1f} ms (first GET {timed[1]:.1f}, dashboard CPU "
                  f"{figures[f'{label}, cpu']:.0f} ms)", flush=True)  # fmt: skip
    figures["load_after"] = os.getloadavg()[0]
    return figures


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used, in ms: what a page costs however many
    other processes share the cores (Linux `/proc`; not the PostgreSQL server's share)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def dashboard_process(url: str) -> Iterator[tuple[str, int]]:
    """`cursorbench dashboard --db URL` on a free loopback port; its base URL (and process id)
    once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-c", "from cursorbench.cli.app import main; main()", "dashboard"]
    command += ["--db", url, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                get(base + "/healthz")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the dashboard did not start ({url})") from None
                time.sleep(0.2)
        yield base, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def on_engine(
    engine: str, rows: int, runs: int, epochs: int, keep: Path | None
) -> dict[str, float]:
    """Build the store (or, with `--keep DIR`, reuse the one built there before), then time
    the pages; the store is removed afterwards unless kept."""
    folder = keep or Path(tempfile.mkdtemp(prefix="cb-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"{engine}.json"
    built = json.loads(kept.read_text()) if keep and kept.exists() else None
    schema = built["schema"] if built else f"cb_scale_{uuid.uuid4().hex[:12]}"
    if engine == "sqlite":
        url = f"sqlite:///{folder / 'scale.sqlite'}"
    else:
        url = f"{PG_URL}?options=-csearch_path%3D{schema}"
        if built is None:
            with admin_engine().begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        if built is None:
            store = open_store(url)
            try:
                built = build(store, rows, runs, epochs) | {"schema": schema}
            finally:
                store.close()
            if keep:
                kept.write_text(json.dumps(built))
        names = built["names"]
        figures = {k: v for k, v in built.items() if k not in ("names", "schema")}
        return figures | time_pages(url, names)
    finally:
        if not keep:
            drop(engine, folder, schema)


def drop(engine: str, folder: Path, schema: str) -> None:
    if engine == "postgresql":
        admin = admin_engine()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()
    shutil.rmtree(folder, ignore_errors=True)


@functools.cache
def admin_engine() -> Engine:
    return create_engine(PG_URL)


def report(results: dict[str, dict[str, float]], runs: int, epochs: int, command: str) -> str:
    engines = list(results)
    rows = int(next(iter(results.values()))["rows"])
    lines = [
        f"## Dashboard pages over HTTP at scale ({datetime.now(UTC):%Y-%m-%d}, "
        "`benchmarks/leaderboard_scale.py`)",
        "",
        f"`{command}`: {rows:,} generated attempts in {runs} runs of {epochs} epochs, on "
        f"{os.cpu_count()} cores shared with other work (`nice`); load average (1 min) while "
        "the pages were timed: "
        + ", ".join(
            f"{x} {results[x]['load_before']:.1f} to {results[x]['load_after']:.1f}"
            for x in engines
        )
        + ". Each page served by `cursorbench dashboard` in its own process: median of 5 GETs "
        "over loopback HTTP after one warm-up, end to end (query, rendering, transfer), and in "
        "brackets that first GET and the dashboard process's CPU time per GET (not the "
        "PostgreSQL server's). Target: every page < 300 ms; ingest >= 20,000 rows/s.",
        "",
        "| | " + " | ".join(engines) + " |",
        "|---|" + "---|" * len(engines),
    ]
    lines.append(
        "| ingest rows/s | "
        + " | ".join(f"{results[x]['ingest_rows_per_s']:,.0f}" for x in engines)
        + " |"
    )
    lines.append(
        "| dashboard start to warm (s) | "
        + " | ".join(f"{results[x]['warm_s']:.1f}" for x in engines)
        + " |"
    )
    lines.append(
        "| finish ms/run | "
        + " | ".join(f"{results[x]['finish_ms_per_run']:.0f}" for x in engines)
        + " |"
    )
    for label, path in PAGES:
        cells = []
        for engine in engines:
            ms, first = results[engine][label], results[engine][f"{label}, first GET"]
            cpu = results[engine][f"{label}, cpu"]
            over = "" if ms < 300 else " **over**"
            cells.append(f"{ms:.1f} ({first:.0f}; CPU {cpu:.0f})" + over)
        lines.append(f"| `{path}` {label} ms | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--write", action="store_true", help="append to benchmarks/RESULTS.md")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build each store once and keep it (SQLite file and PostgreSQL schema named in "
        "DIR), reuse it after: re-time the pages without ingesting again; drop it yourself",
    )
    args = parser.parse_args()
    results = {}
    for engine in args.engines.split(","):
        results[engine] = on_engine(engine, args.rows, args.runs, args.epochs, args.keep)
        print(engine, {k: round(v, 1) for k, v in results[engine].items()}, flush=True)
    command = "nice python benchmarks/leaderboard_scale.py " + " ".join(sys.argv[1:])
    text_out = report(results, args.runs, args.epochs, command)
    print(text_out)
    if args.write:
        path = Path(__file__).parent / "RESULTS.md"
        with path.open("a", encoding="utf-8") as out:
            out.write("\n" + text_out)


if __name__ == "__main__":
    main()
