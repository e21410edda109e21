"""The leaderboard's commands through the CLI's entry point, in this process
(`tests.cli_runner`: the same stdout, stderr and exit status as the script)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import create_engine

from leaderboard import open_store
from leaderboard.migrate import alembic_config
from tests.cli_runner import CliResult, cursorbench

TASKS = [f"task-{i:02d}" for i in range(40)]
BASE = {task: [i < 30] for i, task in enumerate(TASKS)}


cli = cursorbench


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'lb.sqlite'}"


def one_line_error(done: CliResult, says: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert says in done.stderr and "Traceback" not in done.stderr


def test_the_export_formats_in_the_help_are_the_transfer_s() -> None:
    from cursorbench import cli_leaderboard
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

    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    passed = cli(
        "gate", "--candidate", "same", "--baseline", "base", "--db", db_url,
        "--json", str(tmp_path / "gate.json"),
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
    assert upgraded.returncode == 0 and "0000_v0 -> 0002_checkpoint_promotion" in upgraded.stdout
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
    for _ in range(2):  # idempotent
        done = cli("runs", "import", str(out), "--db", other, "--with-trajectories")
        assert done.returncode == 0, done.stderr
    imported = json.loads(cli("runs", "list", "--db", other, "--json").stdout)
    assert [(row["run_id"], row["attempts"], row["status"]) for row in imported] == [
        (second.id, 1, "complete")
    ]
    shutil.rmtree(out)  # the trajectory now comes from the stored blob
    predictions = tmp_path / "preds.jsonl"
    done = cli("runs", "export", second.id, "--format", "swebench", "--out", str(predictions),
               "--db", other)  # fmt: skip
    assert done.returncode == 0, done.stderr
    [prediction] = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert prediction["instance_id"] == "textkit-slugify"
    assert prediction["model_name_or_path"] == "reference-solver"
    assert prediction["model_patch"].startswith("diff --git")
    one_line_error(cli("runs", "import", str(tmp_path / "nowhere"), "--db", other), "nowhere")
