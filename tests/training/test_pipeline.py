"""The toy pipeline end to end through its command line (SQLite; the gate test covers
PostgreSQL): step 0, pretrain, extend, SFT, every checkpoint served over HTTP, scored on a smoke
task and an eval through the public API, in the leaderboard with its gate decision, drawn on the
dashboard's checkpoint curve; running it again resumes without scoring anything twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from leaderboard import open_store
from leaderboard.dashboard import Served
from tests.cli_runner import cursorbench

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "training" / "configs" / "toy.yaml"
STEPS = [0, 40, 60, 80]  # initial model, pretrain (40), extend (+20), SFT (+20)


@pytest.mark.slow
def test_the_toy_pipeline_gates_every_checkpoint_and_resumes(tmp_path: Path) -> None:
    out, db = tmp_path / "toy", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    command = [sys.executable, "-m", "training.pipeline", "--config", str(TOY), "--out", str(out)]
    env = os.environ | {"CURSORBENCH_HOME": str(tmp_path / "home")}

    def pipeline() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--db", db], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )

    first = pipeline()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for stage in ("pretrain", "extend", "sft"):
        assert f"[{stage}] step" in first.stdout  # each stage trained, with progress lines
    assert first.stdout.count(": serving ") == len(STEPS)

    listed = cursorbench("runs", "list", "--db", db, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = sorted(json.loads(listed.stdout), key=lambda row: row["step"])
    assert [(row["training_run"], row["step"]) for row in rows] == [("toy", s) for s in STEPS]
    assert rows[0]["gate_decision"] == "baseline" and rows[0]["promoted"] is True
    decisions = {row["gate_decision"] for row in rows[1:]}
    assert decisions <= {"pass", "fail", "inconclusive"}
    assert all(row["attempts"] == 13 and row["complete"] for row in rows)  # 1 task + 12 intent
    promoted = [row["step"] for row in rows if row["promoted"]]
    assert f"best checkpoint: step {max(promoted)} " in first.stdout
    for step in STEPS:
        run = json.loads((out / "gate" / f"step-{step:08d}" / "run.json").read_text())
        assert run["base_url"].startswith("http://127.0.0.1:") and run["model"] == f"toy-step{step}"

    store = open_store(db)
    try:
        with Served(store) as dashboard:
            page = urllib.request.urlopen(f"{dashboard.url}/training/toy", timeout=30).read()
    finally:
        store.close()
    html = page.decode()
    assert "training-chart" in html and f"best checkpoint: step {max(promoted)}" in html
    for step in STEPS:
        assert f"<td>{step}</td>" in html

    again = pipeline()
    assert again.returncode == 0, again.stderr[-3000:]
    assert ": serving " not in again.stdout and again.stdout.count("(recorded earlier)") == 4
    assert "already finished" in again.stdout
