"""`cursorbench run --evals ...` with no endpoint: every scenario runs with the well-behaved
(reference) agent, and each eval's score is reported under its name in the table,
summary.json and the results database, next to correctness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from evals import EVALS
from evals.catalogue import load_scenarios

CLI = [sys.executable, "-m", "cursorbench.cli.app"]


def cursorbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"COLUMNS": "300"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow
def test_every_eval_scenario_runs_with_the_reference_agent(tmp_path: Path) -> None:
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    done = cursorbench(
        "run", "--evals", ",".join(EVALS), "--eval-split", "curated", "--out", str(out), "--db", db
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] >= 60 and summary["resolved"] == summary["finished"]
    for name in EVALS:
        figures = summary["scores"][name]
        assert figures["attempts"] >= 12 and figures["mean"] >= 0.9, (name, figures)
        assert figures["resolved"] == figures["attempts"] and figures["judged"] is False
        assert name in done.stdout  # a column of the end-of-run table
    engine = create_engine(db)
    with engine.connect() as connection:
        rows = connection.execute(text("select task_id, result from attempts")).all()
    engine.dispose()
    assert len(rows) == summary["finished"]
    stored = {row[0]: row[1] if isinstance(row[1], dict) else json.loads(row[1]) for row in rows}
    assert all(len(result["scores"]) == 1 for result in stored.values())
    assert stored["intent-question-tax-rate"]["scores"]["intent"]["value"] == 1.0


def test_evals_option_refuses_unknown_names(tmp_path: Path) -> None:
    done = cursorbench("run", "--evals", "intent,taste", "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --evals: unknown evals taste; known: " + ", ".join(EVALS)
    ]
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_suite_task_and_an_eval_run_together_and_report_both(tmp_path: Path) -> None:
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    args = ["--suite", "smoke", "--tasks", "textkit-slugify", "--evals", "intent"]
    args += ["--eval-split", "curated"]
    done = cursorbench("run", *args, "--out", str(out), "--db", db)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    intent = [s.id for s in load_scenarios(["intent"], split="curated")]
    assert sorted(summary["per_task"]) == sorted(["textkit-slugify", *intent])
    assert summary["finished"] == 1 + len(intent) and summary["resolved"] == summary["finished"]
    assert summary["per_task"]["textkit-slugify"] == {"attempts": 1, "resolved": 1, "errors": 0}
    # the eval's score covers its scenarios only, next to the suite task's correctness
    assert summary["scores"] == {
        "intent": {"mean": 1.0, "attempts": len(intent), "resolved": len(intent), "judged": False}
    }
    assert "textkit-slugify" in done.stdout and "behaviour scores" in done.stdout
    engine = create_engine(db)
    with engine.connect() as connection:
        rows = connection.execute(text("select task_id, resolved, result from attempts")).all()
    engine.dispose()
    stored = {row[0]: row[2] if isinstance(row[2], dict) else json.loads(row[2]) for row in rows}
    assert set(stored) == set(summary["per_task"]) and all(row[1] for row in rows)
    assert stored["textkit-slugify"]["status"] == "resolved"
    assert stored["textkit-slugify"]["scores"] == {}
    assert stored["intent-question-tax-rate"]["scores"]["intent"]["value"] == 1.0
