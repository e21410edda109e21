"""Gating checkpoints: each served over HTTP, scored through `cursorbench.api`, written to the
leaderboard tied to its training run and step, gated against the latest promoted checkpoint;
the state survives a restart (all of it in the leaderboard). Runs on PostgreSQL (the pipeline
test covers SQLite), skipped without a server unless `CI` is set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text, update

from cursorbench.config import OpenAIModel, SqlStoreSpec
from leaderboard.gate import GateRules
from leaderboard.schema import CheckpointRow, RunRow
from tests.cli_runner import cursorbench
from training.gate import CheckpointGate, GateConfig, load_gate_config

ROOT = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get(
    "CURSORBENCH_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema on the test PostgreSQL server, as a URL (search_path in the options)."""
    admin = create_engine(PG_URL, connect_args={"connect_timeout": 5})
    try:
        with admin.connect() as conn:
            conn.execute(text("select 1"))
    except Exception as error:
        admin.dispose()
        if os.environ.get("CI") or os.environ.get("CURSORBENCH_REQUIRE_PG") == "1":
            pytest.fail(f"PostgreSQL not reachable at {PG_URL}: {error}")
        pytest.skip(f"PostgreSQL not reachable at {PG_URL}")
    schema = f"cb_gate_{uuid.uuid4().hex}"
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.mark.slow
def test_checkpoints_are_gated_once_and_the_best_survives_a_restart(
    checkpoints: dict[str, Any], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSORBENCH_HOME", str(tmp_path / "home"))
    folder = tmp_path / "job"
    folder.mkdir()
    for name in ("fresh", "trained"):
        shutil.copytree(checkpoints[name], folder / checkpoints[name].name)
    # one task that neither checkpoint solves measures nothing: the gate fails it even with
    # on_inconclusive: pass (nothing resolved on either side), so step 0 stays the best
    rules = GateRules(on_inconclusive="pass")
    config = GateConfig(tasks=["textkit-slugify"], max_tokens=16, context_length=4096, rules=rules)
    runs_dir = tmp_path / "gate-runs"
    lines: list[str] = []

    with CheckpointGate(config, "toy-run", pg_url, runs_dir, log=lines.append) as gate:
        first = gate.gate_folder(folder)
    assert [(v.step, v.decision, v.promoted) for v in first] == [
        (0, "baseline", True),
        (200, "fail", False),  # neither solves the one task: nothing measured, not promoted
    ]
    assert [v.best_step for v in first] == [0, 0] and all(v.evaluated_now for v in first)
    assert first[1].baseline_step == 0 and "gate step 200" in lines[-1]

    engine = create_engine(pg_url)
    with engine.connect() as conn:
        runs_before = conn.scalar(select(func.count()).select_from(RunRow))
        assert runs_before is not None
        # a kill between recording the run and gating it: the decision is missing
        at_200 = CheckpointRow.step == 200
        conn.execute(update(CheckpointRow).where(at_200).values(gate_decision=None))
        conn.commit()
    # an evaluation cut off part-way leaves a run folder behind: it is started again
    (runs_dir / "step-00000300").mkdir(parents=True)
    (runs_dir / "step-00000300" / "run.json").write_text(json.dumps({"id": "gone"}))
    shutil.copytree(checkpoints["fresh"], folder / "step-00000300")
    state = json.loads((folder / "step-00000300" / "state.json").read_text())
    (folder / "step-00000300" / "state.json").write_text(json.dumps(state | {"step": 300}))

    with CheckpointGate(config, "toy-run", pg_url, runs_dir, log=lines.append) as gate:
        again = gate.gate_folder(folder)
        best = gate.best()
    assert [(v.step, v.decision, v.evaluated_now) for v in again] == [
        (0, "baseline", False),
        (200, "fail", False),  # gated again from its recorded run, not re-run
        (300, "fail", True),
    ]
    assert best is not None and best.step == 0
    assert any("discarded an unfinished evaluation" in line for line in lines)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(RunRow)) == runs_before + 1
    engine.dispose()

    listed = cursorbench("runs", "list", "--db", pg_url, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = sorted(json.loads(listed.stdout), key=lambda row: row["step"])
    assert [(r["training_run"], r["step"], r["gate_decision"], r["promoted"]) for r in rows] == [
        ("toy-run", 0, "baseline", True),
        ("toy-run", 200, "fail", False),
        ("toy-run", 300, "fail", False),
    ]

    # the watcher over the same folder: everything is recorded, so it only reads back
    watched = subprocess.run(
        [sys.executable, "-m", "training.gate", "watch", str(folder), "--db", pg_url,
         "--training-run", "toy-run", "--runs-dir", str(runs_dir), "--once",
         "--tasks", "textkit-slugify"],
        cwd=ROOT, capture_output=True, text=True, check=False,
        env=os.environ | {"CURSORBENCH_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert watched.returncode == 0, watched.stderr
    assert watched.stdout.count("(recorded earlier)") == 3
    assert "best checkpoint: step 0" in watched.stdout
    status = subprocess.run(
        [sys.executable, "-m", "training.gate", "status", "--db", pg_url,
         "--training-run", "toy-run", "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(status.stdout)["best_step"] == 0


def test_gate_configs_and_bad_input_are_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "gate.yaml"
    bad.write_text("tasks: [x]\nepochs: 0\n")
    with pytest.raises(Exception, match=r"gate.yaml: epochs: Input should be greater"):
        load_gate_config(bad)
    bad.write_text("rules: {max_regression: 2}\n")
    with pytest.raises(Exception, match=r"rules.max_regression"):
        load_gate_config(bad)
    spec = GateConfig(suite="smoke", tasks=["textkit-*"], evals=["intent"]).run_spec(
        "http://127.0.0.1:1/v1", "m", tmp_path / "out", "sqlite:///x.db"
    )
    assert spec.tasks[1:] == ["textkit-*"] and spec.evals == ["intent"]
    assert isinstance(spec.model, OpenAIModel) and spec.model.base_url == "http://127.0.0.1:1/v1"
    assert isinstance(spec.store, SqlStoreSpec) and spec.store.url == "sqlite:///x.db"
    assert GateConfig(evals=["intent"]).run_spec("http://h/v1", "m", tmp_path, "x").tasks == []
    done = subprocess.run(
        [sys.executable, "-m", "training.gate", "watch", str(tmp_path / "nowhere"), "--db",
         f"sqlite:///{tmp_path / 'lb.db'}", "--once"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr == f"error: {tmp_path / 'nowhere'}: not a folder\n"
