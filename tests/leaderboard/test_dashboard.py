"""The dashboard in headless Chromium (Debian's `chromium`, driven by Playwright) against a
store filled by real runs (the reference solver, and a double that changes nothing, through
the real runner), plus generated checkpoint runs for the training view."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cursorbench import api
from cursorbench.cli.leaderboard import bundled_test_lists
from cursorbench.config import spec_from_options
from harness.model.doubles import DoneOnlyDouble
from harness.model.openai_server import OpenAIServer
from leaderboard import SqlStore, open_store
from leaderboard.dashboard import Served
from leaderboard.gate import GateRules, gate
from tests.session_cache import session_folder

CHROMIUM = "/usr/bin/chromium"
TASKS = ["textkit-slugify", "textkit-case-styles"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian chromium not installed (scripts/setup.sh installs it)",
    ),
]


def real_run(tmp: Path, db_url: str, name: str, **options: Any) -> str:
    spec = spec_from_options(
        tasks=TASKS, out=tmp / name, db=db_url, retry_backoff=0.0, max_retries=1, **options
    )
    return api.run(spec).run.id


def fill_store(tmp: Path, db_url: str, fill: Any) -> dict[str, str]:
    """Two real runs and generated checkpoint runs into the store; the real runs' ids."""
    with pytest.MonkeyPatch.context() as patch, OpenAIServer(DoneOnlyDouble()) as double:
        patch.setenv("CURSORBENCH_HOME", str(tmp / "home"))
        reference = real_run(tmp, db_url, "reference")
        lazy = real_run(tmp, db_url, "lazy", base_url=double.base_url, model="done-only-double")
    store = open_store(db_url)
    tasks = {f"gen-{i:02d}": [i % 3 != 0] for i in range(30)}
    for step in (100, 200, 300):
        run_id = f"ckpt-{step}"
        better = {  # step 200 loses 8 tasks (the gate fails it), step 300 gains 2
            t: [(ok and not (step == 200 and i < 12)) or (step >= 300 and i < 5)]
            for i, (t, [ok]) in enumerate(tasks.items())
        }
        fill(store, run_id, better, model="policy", cost=step / 1000)
        checkpoint = store.attach_checkpoint(run_id, "train-a", step, tokens_seen=step * 10**6)
        # 30 tasks: 2 gained and none lost cannot rule out a 2% regression, but do 7%;
        # 8 lost exceed 7% (the rule's bounds: +0.068 and +0.074)
        rules = GateRules(max_regression=0.07)
        if step == 100 or gate(run_id, "ckpt-100", rules, store).exit_code == 0:
            store.promote_checkpoint(checkpoint)
    tampered = {t: [ok] for t, [ok] in tasks.items()}
    fill(store, "tampered-run", tampered, model="sneaky", tamper=["gen-01"])
    store.close()
    return {"reference": reference, "lazy": lazy}


@pytest.fixture(scope="module")
def filled(session_build_cache: Path, fill: Any) -> Iterator[dict[str, Any]]:
    """The store, filled once per test session (`tests/session_cache.py`): about a minute of
    real runs that each worker this module's tests reach would otherwise repeat."""

    def make(folder: Path) -> None:
        ids = fill_store(folder, f"sqlite:///{folder / 'lb.sqlite'}", fill)
        (folder / "runs.json").write_text(json.dumps(ids))

    folder = session_folder(session_build_cache, "dashboard", make)
    store = open_store(f"sqlite:///{folder / 'lb.sqlite'}")
    yield {"store": store, **json.loads((folder / "runs.json").read_text())}
    store.close()


@pytest.fixture(scope="module")
def site(filled: dict[str, Any]) -> Iterator[str]:
    store: SqlStore = filled["store"]
    with Served(store, test_lists=bundled_test_lists()) as served:
        yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Visit:
    """A page that records console errors, failed requests and every URL it asked for."""

    def __init__(self, browser: Any, site: str) -> None:
        self.page = browser.new_page()
        self.site = site
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: self.requests.append(request.url))

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def open(self, path: str) -> Any:
        response = self.page.goto(self.site + path)
        assert response is not None and response.status == 200, path
        return self.page

    def rows(self) -> int:
        return self.page.locator("table").last.locator("tbody tr").count()

    def check_clean(self) -> None:
        assert self.errors == []
        outside = [url for url in self.requests if not url.startswith(self.site)]
        assert outside == [], "the page loaded something from outside (a CDN?)"


@pytest.fixture
def visit(browser: Any, site: str) -> Iterator[Visit]:
    v = Visit(browser, site)
    yield v
    v.check_clean()
    v.page.close()


def test_runs_list_filters_and_sorts(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open("/runs")
    assert visit.rows() == 6
    assert page.locator(f"a[href='/runs/{filled['reference']}']").count() == 1
    page.select_option("select[name=model]", "reference-solver")
    page.click("#filters button")
    page.wait_for_url(re.compile(r"model=reference-solver"))
    assert visit.rows() == 1
    assert "100.0%" in page.locator("tbody tr").first.inner_text()
    page = visit.open("/runs?sort=cost_usd&order=desc")
    first = page.locator("tbody tr").first.inner_text()
    assert "ckpt-300"[:12] in first
    page = visit.open("/runs?category=new_feature")
    assert visit.rows() == 2  # only the real runs' tasks have categories


def test_cost_chart_is_drawn_with_the_frontier(visit: Visit) -> None:
    page = visit.open("/cost")
    page.wait_for_selector("#cost-chart[data-drawn=true]")
    assert page.locator("#cost-chart .main-svg").count() > 0
    assert page.locator("#front li").count() >= 1
    assert any(url.endswith("/static/plotly.min.js") for url in visit.requests)


def test_breakdown_shows_categories_and_evals(visit: Visit) -> None:
    page = visit.open("/breakdown?model=reference-solver")
    page.wait_for_selector("#category-chart[data-drawn=true]")
    page.wait_for_selector("#eval-chart[data-drawn=true]")
    text = page.locator("table").last.inner_text()
    assert "new_feature" in text and "tests_passed" in text


def test_training_curve_marks_gate_decisions(visit: Visit) -> None:
    page = visit.open("/training")
    page.click("a[href='/training/train-a']")
    page.wait_for_selector("#training-chart[data-drawn=true]")
    text = page.locator("table").last.inner_text()
    assert "300" in text and "pass" in text
    assert visit.rows() == 3
    rows = page.locator("table").last.locator("tbody tr")
    promoted = [rows.nth(i).locator("td").last.inner_text() for i in range(3)]
    assert promoted == ["yes", "", "best"]  # step 200 regressed: not promoted
    assert "best checkpoint: step 300" in page.locator("#best-checkpoint").inner_text()
    traces = page.evaluate(
        "() => document.getElementById('training-chart').data.map(t => [t.name, t.x])"
    )
    assert ["promoted", [100, 300]] in traces and ["score", [100, 200, 300]] in traces


def test_run_page_filters_attempts(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open("/runs/tampered-run")
    assert visit.rows() == 30
    page.click("#attempt-filters a:text('grader_tampering')")
    page.wait_for_url(re.compile("failure=grader_tampering"))
    assert visit.rows() == 1 and "gen-01" in page.locator("tbody").last.inner_text()
    visit.open("/runs/tampered-run?flagged=1")
    assert visit.rows() == 1
    page = visit.open(f"/runs/{filled['lazy']}")
    assert "empty_diff" in page.locator("tbody").last.inner_text()


def test_compare_lists_the_tasks_that_flipped(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open(f"/compare?a={filled['reference']}&b={filled['lazy']}")
    assert "2 tasks" in page.locator("#count").inner_text()
    text = page.locator("table").last.inner_text()
    assert "lost" in text and "textkit-slugify" in text


def test_attempt_page_shows_diff_tests_and_trajectory(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open(f"/runs/{filled['reference']}")
    page.click("a:text('textkit-slugify')")
    page.wait_for_url(re.compile("/attempts/textkit-slugify/0"))
    assert "diff --git" in page.locator("#diff").inner_text()
    assert "passed" in page.inner_text("body")  # per-test outcomes
    assert "harness: header" in (page.locator("#chat").text_content() or "")  # records


def test_unknown_run_is_a_404(browser: Any, site: str) -> None:
    page = browser.new_page()
    response = page.goto(site + "/runs/no-such-run")
    assert response is not None and response.status == 404
    page.close()


def test_the_leaderboard_has_one_row_per_model(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open("/")
    ranked = page.locator("table.ranked tbody tr")
    models = sorted(ranked.nth(i).locator("td").nth(1).inner_text() for i in range(ranked.count()))
    assert models == ["done-only-double", "policy", "reference-solver", "sneaky"]
    policy = page.locator("table.ranked tbody tr", has_text="policy")
    assert "ckpt-300" in policy.inner_text() and "3" in policy.locator("td").nth(9).inner_text()


def test_ticking_two_runs_compares_them(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open("/runs")
    page.check(f"input[name=run][value='{filled['reference']}']")
    page.check(f"input[name=run][value='{filled['lazy']}']")
    page.click("#compare-ticked")
    page.wait_for_url(re.compile(r"/compare\?run="))
    sides = page.locator("#sides").inner_text()
    assert "reference-solver" in sides and "done-only-double" in sides
    assert "2 tasks" in page.locator("#count").inner_text()
    picker = page.locator("select[name=a] option:checked").inner_text()
    assert "·" in picker and ("reference-solver" in picker or "done-only-double" in picker)


def test_paging_through_runs_and_attempts(visit: Visit) -> None:
    page = visit.open("/runs?per=2")
    first = page.locator("tbody tr").all_inner_texts()
    assert len(first) == 2 and "rows 1-2 of 6" in page.locator("#paging").inner_text()
    page.click("#paging a[rel=next]")
    page.wait_for_url(re.compile(r"page=2"))
    second = page.locator("tbody tr").all_inner_texts()
    assert len(second) == 2 and set(first).isdisjoint(second)
    page = visit.open("/runs/tampered-run?per=10")
    assert visit.rows() == 10
    page.click("#paging a[data-page='3']")
    page.wait_for_url(re.compile(r"page=3"))
    assert visit.rows() == 10 and "gen-29" in page.locator("table").last.inner_text()
    assert "rows 21-30 of 30" in page.locator("#paging").inner_text()


def test_the_trajectory_viewer(visit: Visit, filled: dict[str, Any]) -> None:
    page = visit.open(f"/runs/{filled['reference'][:10]}/attempts/textkit-slugify/0")
    assert page.locator(".turn.user").count() >= 1
    assert page.locator(".turn.tool").count() >= 1
    output = page.locator(".turn.tool details.output").first
    assert output.get_attribute("open") is None  # collapsed, not cut
    output.locator("summary").click()
    assert output.get_attribute("open") is not None
    assert output.locator("pre").is_visible()
    added = page.locator("#diff span.add").first
    assert added.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(230, 255, 236)"
    assert page.locator("#tests-f2p").count() == 1 and page.locator("#tests-p2p").count() == 1
    assert "passed" in page.locator("#tests-f2p").inner_text()
    assert page.locator("#grader").count() == 1
    raw = page.locator("#raw-link").get_attribute("href")
    assert raw is not None and raw.endswith("/raw")
