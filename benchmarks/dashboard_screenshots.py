"""Chromium screenshots of every dashboard view, saved under docs/leaderboard/screenshots/.

Fills a fresh store the way the browser tests do: two real runs through the real runner (the
reference solver, and a double over HTTP that changes nothing) on two smoke tasks, generated
checkpoint runs of a training run (gated and promoted), a run with a tampering attempt, a
partial run and an unconfined one; then serves the dashboard (with the bundled suites' test
lists) and opens every view in headless Debian chromium through Playwright.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/dashboard_screenshots.py [--out DIR]

Generated runs are labelled as such (no agent ran them); the two real runs are real.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cursorbench import api
from cursorbench.cli.leaderboard import bundled_test_lists
from cursorbench.config import spec_from_options
from harness.model.doubles import DoneOnlyDouble
from harness.model.openai_server import OpenAIServer
from harness.results import AttemptResult, Failure, RunInfo, Status, TestOutcome, Usage
from harness.run.summary import summarize
from leaderboard import SqlStore, open_store
from leaderboard.dashboard import Served
from leaderboard.gate import GateRules, gate

CHROMIUM = "/usr/bin/chromium"
TASKS = ["textkit-slugify", "textkit-case-styles"]
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def real_run(tmp: Path, db_url: str, name: str, **options: Any) -> str:
    spec = spec_from_options(
        tasks=TASKS, out=tmp / name, db=db_url, retry_backoff=0.0, max_retries=1, **options
    )
    return api.run(spec).run.id


def generated(
    store: SqlStore,
    run_id: str,
    outcomes: dict[str, list[bool]],
    model: str,
    hour: int,
    *,
    finish: bool = True,
    sandbox: str = "bubblewrap",
    tamper: str | None = None,
) -> None:
    """A generated run (no agent ran): given outcomes per task and epoch."""
    epochs = max(len(v) for v in outcomes.values())
    store.start_run(
        RunInfo(
            id=run_id,
            created_at=T0 + timedelta(hours=hour),
            model=model,
            base_url="http://127.0.0.1:1/v1",
            endpoint_label="external",
            suite_version="0.1",
            config_hash=f"hash-{run_id}",
            config={"epochs": epochs, "tasks": dict.fromkeys(outcomes, "d")},
            sandbox=sandbox,
        )
    )
    results = []
    for task, runs in outcomes.items():
        for epoch, ok in enumerate(runs):
            failure = None if ok else Failure.TESTS_FAILED
            if task == tamper:
                failure = Failure.GRADER_TAMPERING
            results.append(
                AttemptResult(
                    task_id=task,
                    epoch=epoch,
                    status=Status.RESOLVED if failure is None else Status.FAILED,
                    failure=failure,
                    tests={"t::a": TestOutcome.PASSED if ok else TestOutcome.FAILED},
                    usage=Usage(tokens_in=1000, tokens_out=100, cost_usd=0.002 * hour),
                    started_at=T0,
                    finished_at=T0 + timedelta(seconds=10),
                    flags=["frame-inspection: pkg/mod.py:3"] if task == tamper else [],
                )
            )
    store.record_many(run_id, results)
    if finish:
        store.finish_run(run_id, summarize(results, len(results)))


def fill(tmp: Path) -> tuple[SqlStore, dict[str, str]]:
    db_url = f"sqlite:///{tmp / 'lb.sqlite'}"
    os.environ["CURSORBENCH_HOME"] = str(tmp / "home")
    with OpenAIServer(DoneOnlyDouble()) as double:
        reference = real_run(tmp, db_url, "reference")
        lazy = real_run(tmp, db_url, "lazy", base_url=double.base_url, model="done-only-double")
    store = open_store(db_url)
    store.describe_tasks(
        "0.1", {f"gen-{i:02d}": ["debugging", "refactor"][i % 2] for i in range(40)}
    )
    tasks = {f"gen-{i:02d}": [i % 3 != 0, i % 4 != 0] for i in range(40)}
    for n, step in enumerate((100, 200, 300)):
        outcomes = {
            t: [(ok and not (step == 200 and i < 12)) or (step >= 300 and i < 5) for ok in runs]
            for i, (t, runs) in enumerate(tasks.items())
        }
        generated(store, f"ckpt-{step}", outcomes, "policy", hour=n + 1)
        checkpoint = store.attach_checkpoint(f"ckpt-{step}", "train-a", step, step * 10**6)
        rules = GateRules(max_regression=0.07)
        if step == 100 or gate(f"ckpt-{step}", "ckpt-100", rules, store).exit_code == 0:
            store.promote_checkpoint(checkpoint)
    generated(store, "tampered-run", tasks, "sneaky", hour=5, tamper="gen-01")
    half = dict(list(tasks.items())[:15])
    generated(store, "partial-run", half, "halfway", hour=6, finish=False)
    generated(store, "subprocess-run", tasks, "unconfined-model", hour=7, sandbox="subprocess")
    return store, {"reference": reference, "lazy": lazy}


def views(ids: dict[str, str]) -> list[tuple[str, str]]:
    ref, lazy = ids["reference"], ids["lazy"]
    return [
        ("leaderboard", "/"),
        ("leaderboard-best", "/?pick=best"),
        ("runs", "/runs"),
        ("runs-page-2", "/runs?per=3&page=2"),
        ("cost", "/cost"),
        ("breakdown", "/breakdown"),
        ("training-index", "/training"),
        ("training-run", "/training/train-a"),
        ("run", f"/runs/{ref[:8]}"),
        ("run-attempts-paged", "/runs/tampered-run?per=10&page=2"),
        ("run-tampering", "/runs/tampered-run?failure=grader_tampering"),
        ("compare-pickers", "/compare"),
        ("compare", f"/compare?run={ref}&run={lazy}"),
        ("attempt", f"/runs/{ref[:8]}/attempts/textkit-slugify/0"),
        ("attempt-empty-diff", f"/runs/{lazy[:8]}/attempts/textkit-slugify/0"),
        ("not-found", "/runs/no-such-run"),
    ]


def shoot(site: str, ids: dict[str, str], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, path in views(ids):
            page.goto(site + path)
            for chart in page.locator("[data-figure]").all():
                chart.wait_for(state="attached")
            page.wait_for_timeout(300)
            if name == "attempt":  # show one tool output unfolded
                outputs = page.locator(".turn.tool details.output")
                if outputs.count():
                    outputs.first.locator("summary").click()
            target = out / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            saved.append(target)
            print(f"{target} <- {path}", flush=True)
        browser.close()
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "docs" / "leaderboard" / "screenshots"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} not installed (scripts/setup.sh installs chromium)")
    with tempfile.TemporaryDirectory() as folder:
        store, ids = fill(Path(folder))
        try:
            with Served(store, test_lists=bundled_test_lists()) as served:
                shoot(served.url, ids, args.out)
        finally:
            store.close()


if __name__ == "__main__":
    main()
