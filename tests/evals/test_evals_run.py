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

CLI = [sys.executable, "-m", "cursorbench.cli"]


def cursorbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"COLUMNS": "300"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow
def test_every_eval_scenario_runs_with_the_reference_agent(tmp_path: Path) -> None:
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    done = cursorbench("run", "--evals", ",".join(EVALS), "--out", str(out), "--db", db)
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
