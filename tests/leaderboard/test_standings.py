"""Standings: an unconfined run (`--sandbox subprocess`) is never ranked beside confined ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from harness.results import NOT_TAMPER_EVIDENT, RunInfo
from leaderboard import open_store, queries
from leaderboard.dashboard import create_app
from leaderboard.store import SqlStore
from tests.cli_runner import cursorbench

STRONG = {"t1": [True, True], "t2": [True, True]}
WEAK = {"t1": [True, False], "t2": [False, False]}


def filled(tmp_path: Path, fill: Any) -> tuple[SqlStore, str]:
    url = f"sqlite:///{tmp_path / 'lb.sqlite'}"
    store = open_store(url)
    fill(store, "confined-weak", WEAK, model="model-a")
    fill(store, "unconfined-strong", STRONG, model="model-b", sandbox="subprocess")
    fill(store, "docker-strong", STRONG, model="model-c", sandbox="docker")
    return store, url


def test_unconfined_runs_are_left_out_of_the_standings_and_listed_apart(
    tmp_path: Path, fill: Any
) -> None:
    store, _ = filled(tmp_path, fill)
    with store.engine.connect() as conn:
        ranked = queries.leaderboard(conn)
        apart = queries.unconfined_runs(conn)
    store.close()
    assert [row.run_id for row in ranked] == ["docker-strong", "confined-weak"]
    assert all(row.confined for row in ranked) and ranked[0].rank == 1
    assert [(row.run_id, row.confined, row.rank, row.sandbox) for row in apart] == [
        ("unconfined-strong", False, 0, "subprocess")
    ]


def test_a_run_whose_verdicts_are_not_tamper_evident_is_listed_apart_as_unconfined_ones(
    tmp_path: Path, fill: Any
) -> None:
    """An imported Harbor task without a canary run: its reward could have been forced."""
    store, url = filled(tmp_path, fill)
    warning = f"{NOT_TAMPER_EVIDENT}: 1 Harbor task(s) get no canary run: t1 (why)"
    fill(store, "harbor-strong", STRONG, model="model-d", warnings=[warning])
    with store.engine.connect() as conn:
        ranked = [row.run_id for row in queries.leaderboard(conn)]
        apart = {row.run_id: row for row in queries.unconfined_runs(conn)}
        [board] = queries.model_board(conn)
    store.close()
    assert ranked == ["docker-strong", "confined-weak"]
    row = apart["harbor-strong"]
    assert (row.confined, row.tamper_evident, row.rank) == (True, False, 0)
    assert {e.model: e.why_unranked for e in board.unranked}["model-d"] == "not tamper-evident"
    listing = cursorbench("runs", "list", "--db", url)
    assert "or with verdicts that are not tamper-evident" in listing.stdout, listing.stdout


def test_the_run_record_says_whether_it_was_confined() -> None:
    base: dict[str, Any] = {
        "id": "r",
        "created_at": "2025-03-01T12:00:00Z",
        "model": "m",
        "base_url": "u",
        "endpoint_label": "external",
        "suite_version": "1",
        "config_hash": "h",
        "config": {},
    }
    assert RunInfo(**base, sandbox="bubblewrap").confined
    assert not RunInfo(**base, sandbox="subprocess").confined  # an older record: from the backend
    assert not RunInfo(**base, sandbox="docker", confined=False).confined


def test_runs_list_prints_unconfined_runs_in_a_table_of_their_own(
    tmp_path: Path, fill: Any
) -> None:
    store, url = filled(tmp_path, fill)
    store.close()
    done = cursorbench("runs", "list", "--db", url)
    assert done.returncode == 0, done.stderr
    ranked, _, apart = done.stdout.partition("not ranked: 1 run(s) made unconfined")
    # the table shows each run by its shortest unique prefix (8 characters here)
    assert "docker-s" in ranked and "confined" in ranked
    assert "unconfin" not in ranked and "unconfin" in apart
    listed = json.loads(cursorbench("runs", "list", "--db", url, "--json").stdout)
    assert {(row["run_id"], row["confined"]) for row in listed} == {
        ("docker-strong", True),
        ("confined-weak", True),
        ("unconfined-strong", False),
    }
    assert next(row["rank"] for row in listed if not row["confined"]) == 0


def test_the_dashboard_shows_unconfined_runs_apart_with_a_note(tmp_path: Path, fill: Any) -> None:
    store, _ = filled(tmp_path, fill)
    try:
        page = TestClient(create_app(store)).get("/runs").text
    finally:
        store.close()
    ranked, _, apart = page.partition("Not ranked: unconfined runs")
    assert "docker-strong" in ranked and "unconfined-strong" not in ranked
    assert "unconfined-strong" in apart and "--sandbox subprocess" in apart
