"""The leaderboard's commands through the CLI's entry point, in this process
(`tests.cli_runner`: the same stdout, stderr and exit status as the script)."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import create_engine

from harness.model.pricing import unknown_price_warning
from harness.results import AttemptResult, Failure, RunInfo, Score, Status
from harness.results import TestOutcome as Outcome
from harness.run.summary import summarize
from leaderboard import open_store
from leaderboard.migrate import HEAD, alembic_config
from tests.cli_runner import CliResult, cursorbench

TASKS = [f"task-{i:02d}" for i in range(40)]
BASE = {task: [i < 30] for i, task in enumerate(TASKS)}


cli = cursorbench
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'lb.sqlite'}"


def one_line_error(done: CliResult, says: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert says in done.stderr and "Traceback" not in done.stderr


def test_the_export_formats_in_the_help_are_the_transfer_s() -> None:
    from cursorbench.cli import leaderboard as cli_leaderboard
    from leaderboard import transfer

    assert cli_leaderboard.EXPORT_FORMATS == transfer.EXPORT_FORMATS


def test_runs_list_on_an_empty_store(db_url: str) -> None:
    done = cli("runs", "list", "--db", db_url)
    assert done.returncode == 0 and "no runs" in done.stdout
    assert json.loads(cli("runs", "list", "--db", db_url, "--json").stdout) == []


@pytest.mark.slow
def test_runs_commands_and_gate_exit_statuses(
    db_url: str, fill: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(db_url)
    fill(store, "base", BASE, model="model-a")
    fill(store, "worse", {t: [ok and i >= 15] for i, (t, [ok]) in enumerate(BASE.items())})
    fill(store, "same", BASE, model="model-b")
    store.attach_checkpoint("same", "train-x", 500)
    store.close()

    listed = json.loads(cli("runs", "list", "--db", db_url, "--json").stdout)
    assert {row["run_id"]: row["rank"] for row in listed} == {"base": 1, "same": 1, "worse": 3}
    same = next(row for row in listed if row["run_id"] == "same")
    assert (same["training_run"], same["step"], same["score"]) == ("train-x", 500, 0.75)
    assert "base" in cli("runs", "list", "--db", db_url, "--model", "model-a").stdout

    shown = json.loads(cli("runs", "show", "base", "--db", db_url, "--json").stdout)
    assert shown["figures"]["resolved"] == 30 and len(shown["attempts"]) == 40
    compared = json.loads(cli("runs", "compare", "base", "worse", "--db", db_url, "--json").stdout)
    assert (compared["first_only"], compared["second_only"]) == (15, 0)
    assert len(compared["lost"]) == 15

    tied = cli("gate", "--candidate", "same", "--baseline", "base", "--db", db_url)
    assert tied.returncode == 1 and "⚠️ inconclusive" in tied.stdout  # 40 ties: +-8.8%
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    wide = tmp_path / "wide.yaml"
    wide.write_text("max_regression: 0.1\n")
    passed = cli(
        "gate", "--candidate", "same", "--baseline", "base", "--db", db_url,
        "--json", str(tmp_path / "gate.json"), "--rules", str(wide),
    )  # fmt: skip
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert passed.returncode == 0, passed.stderr
    assert "✅ pass" in passed.stdout and "✅ pass" in summary.read_text()
    assert json.loads((tmp_path / "gate.json").read_text())["decision"] == "pass"
    failed = cli("gate", "--candidate", "worse", "--baseline", "base", "--db", db_url)
    assert failed.returncode == 1 and "❌ fail" in failed.stdout
    rules = tmp_path / "rules.yaml"
    rules.write_text("max_regression: 0.6\nmin_resolved_rate: 0.1\n")
    lenient = cli("gate", "--candidate", "worse", "--baseline", "base", "--db", db_url,
                  "--rules", str(rules))  # fmt: skip
    assert lenient.returncode == 0, lenient.stdout
    one_line_error(cli("gate", "--candidate", "nope", "--baseline", "base", "--db", db_url), "nope")
    rules.write_text("max_regression: [\n")
    one_line_error(
        cli("gate", "--candidate", "same", "--baseline", "base", "--db", db_url, "--rules",
            str(rules)),
        "not YAML",
    )  # fmt: skip
    checkpoint = json.loads(cli("runs", "show", "same", "--db", db_url, "--json").stdout)
    assert checkpoint["gate_decision"] == "pass"

    one_line_error(cli("runs", "show", "nope", "--db", db_url), "no run 'nope'")
    assert cli("runs", "delete", "worse", "--db", db_url).returncode == 0
    one_line_error(cli("runs", "delete", "worse", "--db", db_url), "no run 'worse'")
    listed = json.loads(cli("runs", "list", "--db", db_url, "--json").stdout)
    assert sorted(row["run_id"] for row in listed) == ["base", "same"]

    out = tmp_path / "attempts.parquet"
    assert (
        cli("runs", "export", "--format", "parquet", "--out", str(out), "--db", db_url).returncode
        == 0
    )
    import pandas as pd

    frame = pd.read_parquet(out)
    assert len(frame) == 80 and set(frame["run_id"]) == {"base", "same"}
    csv = tmp_path / "q.csv"
    query = "select run_id, count(*) as n from attempts group by run_id order by run_id"
    assert cli("runs", "export", "--sql", query, "--out", str(csv), "--db", db_url).returncode == 0
    assert csv.read_text().splitlines() == ["run_id,n", "base,40", "same,40"]


def test_an_out_of_date_database_is_refused_until_upgraded(db_url: str) -> None:
    engine = create_engine(db_url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0000_v0")
    engine.dispose()

    for args in (("runs", "list"), ("dashboard",), ("run", "--tasks", "textkit-slugify")):
        one_line_error(cli(*args, "--db", db_url), "run `cursorbench db upgrade --db")
    assert "0000_v0" in cli("db", "current", "--db", db_url).stdout
    upgraded = cli("db", "upgrade", "--db", db_url)
    assert upgraded.returncode == 0 and f"0000_v0 -> {HEAD}" in upgraded.stdout
    assert "already at" in cli("db", "upgrade", "--db", db_url).stdout
    assert cli("runs", "list", "--db", db_url).returncode == 0
    one_line_error(cli("db", "upgrade", "--db", "nosuch://x"), "cannot open database")


def test_a_run_whose_endpoint_check_fails_is_never_stored(db_url: str, tmp_path: Path) -> None:
    done = cli("run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--db", db_url,
               "--out", str(tmp_path / "out"), "--max-retries", "0")  # fmt: skip
    assert done.returncode == 2
    assert json.loads(cli("runs", "list", "--db", db_url, "--json").stdout) == []


@pytest.mark.slow
def test_import_export_and_a_repeated_run_folder(
    db_url: str, tmp_path: Path, run_benchmark: Any
) -> None:
    out = tmp_path / "run"
    first = run_benchmark(tasks=["textkit-slugify"], out=out, db=db_url).run
    shutil.rmtree(out)  # the folder is gone; the same command runs again
    second = run_benchmark(tasks=["textkit-slugify"], out=out, db=db_url).run
    listed = {row["run_id"]: row for row in json.loads(cli("runs", "list", "--db", db_url,
                                                           "--json").stdout)}  # fmt: skip
    assert first.id != second.id and first.config_hash == second.config_hash
    assert listed[second.id]["repeat_of"] == first.id
    shown = json.loads(cli("runs", "show", second.id, "--db", db_url, "--json").stdout)
    assert shown["repeats"] == [first.id]
    assert shown["attempts"][0]["category"] == "new_feature"  # the runner described its tasks

    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert cli("runs", "import", str(out), "--db", other).returncode == 0  # paths only
    for _ in range(2):  # then the bytes, which a second import does not add again
        done = cli("runs", "import", str(out), "--db", other, "--with-trajectories")
        assert done.returncode == 0, done.stderr
    imported = json.loads(cli("runs", "list", "--db", other, "--json").stdout)
    assert [(row["run_id"], row["attempts"], row["status"]) for row in imported] == [
        (second.id, 1, "complete")
    ]
    shutil.rmtree(out)  # the trajectory now comes from the stored blob
    lost = tmp_path / "lost.jsonl"
    one_line_error(
        cli("runs", "export", second.id, "--format", "swebench", "--out", str(lost),
            "--db", db_url),
        f"no patch found for textkit-slugify#0 of run {second.id}",
    )  # fmt: skip
    assert not lost.exists()  # not an empty model_patch for a resolved attempt
    predictions = tmp_path / "preds.jsonl"
    done = cli("runs", "export", second.id, "--format", "swebench", "--out", str(predictions),
               "--db", other)  # fmt: skip
    assert done.returncode == 0, done.stderr
    [prediction] = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert prediction["instance_id"] == "textkit-slugify"
    assert prediction["model_name_or_path"] == "reference-solver"
    assert prediction["model_patch"].startswith("diff --git")
    one_line_error(cli("runs", "import", str(tmp_path / "nowhere"), "--db", other), "nowhere")


@pytest.mark.slow
def test_a_run_made_in_a_relative_folder_is_read_from_anywhere(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.request

    from leaderboard.dashboard import Served

    for name in ("here", "elsewhere"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "here")
    made = cli("run", "--tasks", "textkit-slugify", "--out", "relative", "--db", db_url)
    assert made.returncode == 0, made.stderr
    monkeypatch.chdir(tmp_path / "elsewhere")  # the folder was stored as runs/..., not found

    [row] = json.loads(cli("runs", "list", "--db", db_url, "--json").stdout)
    shown = json.loads(cli("runs", "show", row["run_id"], "--db", db_url, "--json").stdout)
    assert shown["out_dir"] == str(tmp_path / "here" / "relative")
    predictions = tmp_path / "preds.jsonl"
    done = cli("runs", "export", row["run_id"], "--format", "swebench", "--out",
               str(predictions), "--db", db_url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    [prediction] = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert prediction["model_patch"].startswith("diff --git")
    store = open_store(db_url)
    try:
        with Served(store) as served:
            url = f"{served.url}/runs/{row['run_id']}/attempts/textkit-slugify/0"
            with urllib.request.urlopen(url, timeout=30) as response:
                page = response.read().decode()
    finally:
        store.close()
    assert "<span class='add'>" in page and "(no diff kept)" not in page


READ_ONLY = (
    ("runs", "show", "abc"),
    ("runs", "compare", "a", "b"),
    ("runs", "export", "--out", "x.csv"),
    ("runs", "delete", "abc"),
    ("gate", "--candidate", "a", "--baseline", "b"),
    ("dashboard",),
    ("db", "current"),
)


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "new" / "lb.sqlite"
    url = f"sqlite:///{missing}"
    for args in READ_ONLY:
        one_line_error(cli(*args, "--db", url), "no database at")
    listed = cli("runs", "list", "--db", url)
    assert listed.returncode == 0 and "no runs" in listed.stdout
    assert json.loads(cli("runs", "list", "--json", "--db", url).stdout) == []
    assert not missing.exists() and not missing.parent.exists()


def test_read_only_commands_leave_an_empty_postgresql_schema_empty(pg_admin: Any) -> None:
    from sqlalchemy import inspect, text

    schema = f"cb_test_{uuid.uuid4().hex}"
    with pg_admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = f"{pg_admin.url.render_as_string(hide_password=False)}?options=-csearch_path%3D{schema}"
    try:
        for args in (("gate", "--candidate", "a", "--baseline", "b"), ("runs", "show", "a")):
            one_line_error(cli(*args, "--db", url), "holds no results yet")
        with pg_admin.connect() as conn:
            assert inspect(conn).get_table_names(schema=schema) == []
    finally:
        with pg_admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture
def two_suites(db: Any, fill: Any) -> str:
    """A store (SQLite file or PostgreSQL schema) with runs on two suite versions; its URL."""
    store = db.open()
    fill(store, "run-one-aaaa", BASE, model="model-a")
    fill(store, "run-one-aaab", BASE, model="model-b")
    fill(store, "run-two-bbbb", BASE, model="model-a", suite_version="0.2")
    if db.dialect == "sqlite":
        return str(db.url)
    return f"{db.url}?options=-csearch_path%3D{db.connect_args['options'].split('=')[1]}"


def test_runs_compare_across_suite_versions_is_refused_like_the_gate(two_suites: str) -> None:
    url = two_suites
    says = "different suite versions (0.1 vs 0.2)"
    one_line_error(cli("runs", "compare", "run-one-aaaa", "run-two-bbbb", "--db", url), says)
    gate = cli("gate", "--candidate", "run-two-bbbb", "--baseline", "run-one-aaaa", "--db", url)
    one_line_error(gate, "different suite versions (0.2 vs 0.1)")


def test_export_sql_with_a_bad_column_is_one_line(two_suites: str, tmp_path: Path) -> None:
    out = tmp_path / "q.csv"
    done = cli("runs", "export", "--sql", "select no_such_column from attempts", "--out",
               str(out), "--db", two_suites)  # fmt: skip
    one_line_error(done, "--sql: the database refused the query")
    assert "no_such_column" in done.stderr and not out.exists()


def test_an_unknown_filter_value_exits_non_zero(two_suites: str) -> None:
    for flag, value in (("--model", "nope"), ("--suite", "smoke@9"), ("--category", "x"),
                        ("--eval", "judge"), ("--training-run", "t")):  # fmt: skip
        one_line_error(cli("runs", "list", flag, value, "--db", two_suites), f"{flag} '{value}'")
    assert cli("runs", "list", "--model", "model-b", "--db", two_suites).returncode == 0


def test_runs_are_named_by_a_unique_id_prefix(two_suites: str) -> None:
    url = two_suites
    shown = json.loads(cli("runs", "show", "run-two", "--db", url, "--json").stdout)
    assert shown["run_id"] == "run-two-bbbb"
    one_line_error(
        cli("runs", "show", "run-one", "--db", url), "ambiguous: run-one-aaaa, run-one-aaab"
    )
    one_line_error(cli("runs", "show", "zzz", "--db", url), "no run 'zzz'")
    one_line_error(cli("runs", "show", "run%", "--db", url), "no run 'run%'")  # LIKE escaped
    compared = cli("runs", "compare", "run-one-aaaa", "run-one-aaab", "--db", url, "--json")
    assert json.loads(compared.stdout)["second"] == "run-one-aaab"
    listed = cli("runs", "list", "--db", url).stdout
    # the shortest unique prefix of at least 8 characters, which `runs show` takes back
    assert "run-one-aaaa" in listed and "run-two-" in listed and "run-two-bbbb" not in listed


def test_a_partial_candidate_is_refused_by_the_gate(db_url: str, fill: Any) -> None:
    store = open_store(db_url)
    fill(store, "base", {f"t{i}": [True, True, False] for i in range(6)})
    fill(store, "one", {"t0": [True]})
    store.close()

    done = cli("gate", "--candidate", "one", "--baseline", "base", "--db", db_url)

    one_line_error(done, "share 1 of the 18 tasks x epochs")
    assert "min_coverage" in done.stderr


def test_the_gate_does_not_pass_a_run_against_itself_or_two_that_solve_nothing(
    db_url: str, fill: Any
) -> None:
    store = open_store(db_url)
    fill(store, "base", BASE)
    nothing = {f"t{i}": [False] for i in range(13)}  # 13 tied pairs: once read as [0, 0]
    fill(store, "zero-a", nothing, model="ckpt-100")
    fill(store, "zero-b", nothing, model="ckpt-200")
    store.close()

    itself = cli("gate", "--candidate", "base", "--baseline", "base", "--db", db_url)
    assert itself.returncode == 1 and "⚠️ inconclusive" in itself.stdout, itself.stdout
    assert "same run" in itself.stdout
    zeros = cli("gate", "--candidate", "zero-b", "--baseline", "zero-a", "--db", db_url)
    assert zeros.returncode == 1 and "⚠️ inconclusive" in zeros.stdout, zeros.stdout
    assert "ckpt-100" in zeros.stdout and "ckpt-200" in zeros.stdout  # both models named


def test_tests_passed_counts_attempts_that_never_reached_grading(
    db_url: str, fill: Any, tmp_path: Path
) -> None:
    store = open_store(db_url)
    fill(store, "base", {f"t{i}": [True] for i in range(10)})
    skipped = [
        AttemptResult(
            task_id=f"t{i}",
            epoch=0,
            status=Status.RESOLVED if i < 2 else Status.FAILED,
            failure=None if i < 2 else Failure.EMPTY_DIFF,
            tests={"t::a": Outcome.PASSED} if i < 2 else {},
            started_at=T0,
            finished_at=T0,
        )
        for i in range(10)
    ]
    store.start_run(
        RunInfo(id="skipper", created_at=T0, model="m", base_url="http://x/v1",
                endpoint_label="external", suite_version="0.1", config_hash="h",
                config={"epochs": 1, "tasks": {f"t{i}": "digest" for i in range(10)}},
                sandbox="bubblewrap",
                warnings=[unknown_price_warning("m")])
    )  # fmt: skip
    store.record_many("skipper", skipped)
    store.finish_run("skipper", summarize(skipped, 10))
    store.close()

    shown = json.loads(cli("runs", "show", "skipper", "--db", db_url, "--json").stdout)
    tests_passed = next(row for row in shown["breakdowns"] if row["key"] == "tests_passed")
    assert (tests_passed["mean"], tests_passed["n"]) == (0.2, 10)  # not 100% of 2
    assert tests_passed["high"] < 0.6
    rules = tmp_path / "rules.yaml"
    rules.write_text("eval_floors: {tests_passed: 0.6}\nmin_coverage: 1\nmax_cost_usd: 5\n")
    gated = cli("gate", "--candidate", "skipper", "--baseline", "base", "--db", db_url,
                "--rules", str(rules))  # fmt: skip
    assert gated.returncode == 1 and "| eval tests_passed | ❌ fail | 0.2 |" in gated.stdout
    assert "cost unknown" in gated.stdout  # no price is not $0
    listed = {row["run_id"]: row for row in json.loads(
        cli("runs", "list", "--db", db_url, "--json").stdout)}  # fmt: skip
    assert listed["skipper"]["cost_known"] is False and listed["skipper"]["cost_per_task"] is None
    assert listed["base"]["cost_per_task"] == pytest.approx(0.01)
    assert listed["base"]["tokens_per_task"] == 1100
    assert "cost unknown" in cli("runs", "show", "skipper", "--db", db_url).stdout


def test_eval_intervals_cluster_by_scenario_and_stay_in_0_1(db_url: str) -> None:
    # 12 scenarios x 3 epochs: intent scores that are all 1.0 but one scenario's, which is 0.2;
    # a normal interval over the 36 attempts reached past 100%, and all-1.0 was [100, 100]
    store = open_store(db_url)
    scored = [
        AttemptResult(
            task_id=f"intent-{i:02d}",
            epoch=epoch,
            status=Status.RESOLVED,
            scores={
                "intent": Score(value=0.2 if i == 0 else 1.0),
                "eager": Score(value=1.0),
            },
            started_at=T0,
            finished_at=T0,
        )
        for i in range(12)
        for epoch in range(3)
    ]
    store.start_run(
        RunInfo(id="evals", created_at=T0, model="m", base_url="http://x/v1",
                endpoint_label="external", suite_version="0.1", config_hash="h",
                config={"epochs": 3, "tasks": [f"intent-{i:02d}" for i in range(12)]},
                sandbox="subprocess")
    )  # fmt: skip
    store.record_many("evals", scored)
    store.finish_run("evals", summarize(scored, len(scored)))
    store.close()

    shown = json.loads(cli("runs", "show", "evals", "--db", db_url, "--json").stdout)
    rows = {row["key"]: row for row in shown["breakdowns"] if row["kind"] == "eval"}
    intent, eager = rows["intent"], rows["eager"]
    assert intent["mean"] == pytest.approx((0.2 + 11) / 12)
    assert 0.0 <= intent["low"] < intent["mean"] < intent["high"] <= 1.0
    # one scenario in twelve: the interval is as wide as 12 samples allow, not 36
    assert intent["low"] < 0.8
    assert eager["mean"] == 1.0 and eager["high"] == 1.0 and eager["low"] < 0.8  # not [1, 1]
