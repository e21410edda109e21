"""The dashboard's pages over real HTTP (uvicorn on loopback), on a store of generated runs:
the leaderboard by model, short ids and prefix lookup, paging, compare by ticking, the
attempt page (chat, coloured diff, tests split, nothing cut silently), breakdown bars."""

from __future__ import annotations

import hashlib
import html
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leaderboard import open_store
from leaderboard.dashboard import Served
from leaderboard.rows import TRAJECTORIES_TABLE, insert_ignoring
from leaderboard.transcript import KEEP_HEAD, KEEP_TAIL, MAX_SHOWN_CHARS

DEBUGGING = {f"d{i:02d}": [i % 2 == 1] for i in range(10)}  # d00..d09
REFACTOR = {f"r{i:02d}": [False] for i in range(10)}  # all fail: a measured 0%
HUGE = "y" * (MAX_SHOWN_CHARS + 5000)
SCRIPT = "<script>x()</script>"  # model-written text: must come out escaped


def lists(suite_version: str, task_id: str) -> tuple[list[str], list[str]] | None:
    return (["t::a"], ["t::b"]) if task_id == "d01" else None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, fill: Any) -> Iterator[str]:
    tmp: Path = tmp_path_factory.mktemp("pages")
    store = open_store(f"sqlite:///{tmp / 'lb.sqlite'}")
    categories = dict.fromkeys(DEBUGGING, "debugging") | dict.fromkeys(REFACTOR, "refactor")
    fill(store, "aaaa1111-one", DEBUGGING, model="alpha", categories=categories)
    solved = {key: [True] for key in DEBUGGING}  # beta solves the 5 alpha fails
    fill(store, "aaaa2222-two", solved | REFACTOR, model="beta<i>")
    fill(store, "bbbb-partial", DEBUGGING, model="gamma", finish=False)
    fill(store, "cccc-subproc", DEBUGGING, model="delta", sandbox="subprocess")
    for i in range(6):
        fill(store, f"eeee{i}-more", DEBUGGING, model=f"m{i}", suite_version="0.2")
    blob = _trajectory()
    with store.engine.begin() as conn:
        row = {"run_id": "aaaa1111-one", "task_id": "d01", "epoch": 0, "path": None}
        row |= {"sha256": hashlib.sha256(blob).hexdigest(), "size": len(blob), "blob": blob}
        insert_ignoring(conn, TRAJECTORIES_TABLE, [row])
    with Served(store, test_lists=lists) as served:
        yield served.url
    store.close()


def _trajectory() -> bytes:
    arguments = json.dumps({"command": "pytest -q", "timeout": 30})
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    reply = {"role": "assistant", "content": SCRIPT, "tool_calls": [call]}
    records = [
        {"type": "header", "format_version": 1, "task_id": "d01", "epoch": 0},
        {"type": "message", "role": "system", "content": "You are an agent."},
        {"type": "message", "role": "user", "content": "Fix the bug"},
        {"type": "model", "message": reply},
        {"type": "tool", "id": "c1", "name": "bash", "arguments": arguments, "output": HUGE},
        {"type": "diff", "patch": "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-old\n+new\n"},
    ]
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def get(site: str, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(site + path, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def body_rows(text: str, table_index: int = -1) -> int:
    tables = re.findall(r"<tbody>(.*?)</tbody>", text, re.S)
    return tables[table_index].count("<tr") if tables else 0


def test_the_leaderboard_has_a_row_per_model_and_suites_apart(site: str) -> None:
    status, text = get(site, "/")
    assert status == 200
    first, second = text.index("data-suite='cursorbench@0.1'"), text.index("@0.2'")
    assert first < second  # one section per suite version, in order
    head = text[first:second]
    ranked, unranked = head.split("<h3>Not ranked</h3>")
    assert "alpha" in ranked and "beta&lt;i&gt;" in ranked and "beta<i>" not in text
    assert "<span class='why'>running</span>" in unranked and "gamma" in unranked
    assert "<span class='why'>unconfined</span>" in unranked and "delta" in unranked
    assert "10/10 (100%)" in ranked  # coverage: attempts of those planned


def test_short_ids_are_shown_and_any_unique_prefix_works(site: str) -> None:
    _, runs = get(site, "/runs")
    assert ">aaaa1111<" in runs and ">aaaa1111-one<" not in runs
    for path in ("/runs/aaaa1", "/runs/aaaa1/attempts/d01/0", "/compare?a=aaaa1&b=aaaa2"):
        status, text = get(site, path)
        assert status == 200, path
    status, text = get(site, "/runs/aaaa")
    assert status == 404 and "ambiguous" in text and "aaaa1111-one" in text
    status, text = get(site, "/runs/zz/attempts/d01/0")
    assert status == 404 and "no run" in text


def test_the_runs_list_and_a_run_s_attempts_page(site: str) -> None:
    _, first = get(site, "/runs?per=3")
    _, second = get(site, "/runs?per=3&page=2")
    assert body_rows(first) == 3 and "rows 1-3 of 10" in first
    assert 'data-page="2"' in first and "rows 4-6 of 10" in second
    assert set(re.findall(r"value='([^']+)'", first)).isdisjoint(
        re.findall(r"value='([^']+)'", second)
    )
    _, run = get(site, "/runs/aaaa2222-two?per=4&page=2")
    assert body_rows(run) == 4 and "rows 5-8 of 20" in run and "20 attempts" in run
    assert "<b id='run-model'>beta&lt;i&gt;</b>" in run  # the model, not just a UUID
    assert "<title>Run aaaa2222 · beta&lt;i&gt;" in run
    _, last = get(site, "/runs/aaaa2222-two?per=4&page=5")
    assert body_rows(last) == 4 and "r09" in last and "d00" not in last
    _, failed = get(site, "/runs/aaaa2222-two?failure=tests_failed&per=100")
    assert "10 attempts" in failed and body_rows(failed) == 10


def test_ticking_two_runs_compares_them_and_pickers_name_models(site: str) -> None:
    status, text = get(site, "/compare?run=aaaa2222-two&run=aaaa1111-one")
    assert status == 200
    sides = text[text.index("<ul id='sides'>") :]
    assert sides.index("aaaa1111") < sides.index("aaaa2222")  # A is the earlier run
    assert "10 shared tasks" in text and "5 tasks</p>" in text  # d00, d02, ... flipped
    _, paged = get(site, "/compare?a=aaaa1&b=aaaa2&per=2&page=3")
    assert body_rows(paged) == 1 and "rows 5-5 of 5" in paged
    _, one = get(site, "/compare?run=aaaa1111-one")
    assert "tick two runs (1 ticked)" in one
    assert "<option value='aaaa1111-one'>alpha · aaaa1111 · cursorbench@0.1 · " in one


def test_the_attempt_page_is_a_chat_with_nothing_cut_silently(site: str) -> None:
    status, text = get(site, "/runs/aaaa1111-one/attempts/d01/0")
    assert status == 200
    assert "<span class='add'>+new</span>" in text and "<span class='del'>-old</span>" in text
    assert "<section id='tests-f2p'><h3>fail-to-pass: 1 of 1 passed" in text
    assert "<section id='tests-p2p'><h3>pass-to-pass: 1 of 1 passed" in text
    assert "&lt;script&gt;x()&lt;/script&gt;" in text and "<script>x()" not in text
    assert html.escape('"command": "pytest -q",\n  "timeout": 30', quote=True) in text
    cut = len(HUGE) - KEEP_HEAD - KEEP_TAIL
    assert f"{cut:,} characters elided" in text
    assert "href='/runs/aaaa1111-one/attempts/d01/0/raw'" in text
    _, raw = get(site, "/runs/aaaa1111-one/attempts/d01/0/raw")
    assert HUGE in raw and len(raw.splitlines()) == 6
    _, other = get(site, "/runs/aaaa2222-two/attempts/d03/0")
    assert "tests-unclassified" in other  # no lists for that task


def test_breakdown_bars_have_error_bars_and_zero_is_not_missing(site: str) -> None:
    _, text = get(site, "/breakdown?suite=cursorbench@0.1")
    figures = [json.loads(html.unescape(f)) for f in re.findall(r'data-figure="([^"]+)"', text)]
    category = figures[0]
    bars = {trace["name"]: trace for trace in category["data"]}
    labels = category["data"][0]["x"]
    beta = next(i for i, label in enumerate(labels) if label.startswith("beta"))
    alpha = next(i for i, label in enumerate(labels) if label.startswith("alpha"))
    assert bars["refactor"]["text"][beta] == "0%"  # measured, and zero
    assert bars["refactor"]["text"][alpha] == "not measured"
    assert bars["refactor"]["y"][alpha] is None and bars["refactor"]["y"][beta] == 0
    assert bars["debugging"]["error_y"]["array"][alpha] > 0
    assert "<span class='nm'>not measured</span>" in text
    _, paged = get(site, "/breakdown?per=1&page=2")
    assert "rows 2-2 of" in paged


def test_a_one_attempt_run_is_not_ranked_and_no_price_is_not_free(
    tmp_path: Path, fill: Any
) -> None:
    from sqlalchemy import update

    from harness.model.pricing import unknown_price_warning
    from harness.run.summary import summarize
    from leaderboard.schema import RunRow

    store = open_store(f"sqlite:///{tmp_path / 'lb.sqlite'}")
    tasks = {f"t{i}": [i < 5] for i in range(10)}
    fill(store, "full-run", tasks, model="steady", cost=0.01)
    fill(store, "free-run", tasks, model="no-price", cost=0.0)
    fill(store, "one-shot", {"t0": [True]}, model="lucky", finish=False)
    with store.engine.begin() as conn:
        conn.execute(
            update(RunRow).where(RunRow.id == "free-run").values(
                warnings=[unknown_price_warning("no-price")])
        )  # fmt: skip
        plan = {"epochs": 1, "tasks": dict.fromkeys(tasks, "d")}  # 10 planned, 1 recorded
        conn.execute(update(RunRow).where(RunRow.id == "one-shot").values(config=plan, planned=10))
    results = store.attempts("one-shot")
    store.finish_run("one-shot", summarize(results, 10))
    with Served(store) as served:
        _, board = get(served.url, "/")
        _, cost = get(served.url, "/cost")
    store.close()

    ranked, unranked = board.split("<h3>Not ranked</h3>")
    assert "lucky" in unranked and "<span class='why'>partial</span>" in unranked
    assert "1/10 (10%)" in unranked and "lucky" not in ranked  # 100% of 1 attempt
    unpriced = cost[cost.index("<ul id='unpriced'>") :]
    assert "no-price" in unpriced and "steady" not in unpriced
    [figure] = [json.loads(html.unescape(f)) for f in re.findall(r'data-figure="([^"]+)"', cost)]
    drawn = json.dumps(figure["data"])
    assert "full-run" in drawn and "free-run" not in drawn  # not drawn at $0
