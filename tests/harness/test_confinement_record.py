"""Every run's record says whether it was confined: run.json, summary.json and the outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cursorbench import api
from harness.sandbox import bubblewrap_works


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["subprocess", "bubblewrap"])
def test_the_run_record_and_summary_say_whether_the_run_was_confined(
    tmp_path: Path, sandbox: str
) -> None:
    if sandbox == "bubblewrap" and not bubblewrap_works():
        pytest.skip("bubblewrap cannot run here")
    out = tmp_path / "run"
    spec = {
        "tasks": ["textkit-slugify"],
        "out": str(out),
        "sandbox": {"kind": sandbox},
        "store": {"kind": "none"},
    }
    outcome = api.run(spec)
    confined = sandbox != "subprocess"
    assert outcome.summary.resolved_rate == 1.0
    assert outcome.run.sandbox == sandbox and outcome.run.confined is confined
    assert json.loads((out / "run.json").read_text())["confined"] is confined
    assert json.loads((out / "summary.json").read_text())["confined"] is confined
    unconfined = any(warning.startswith("UNCONFINED") for warning in outcome.run.warnings)
    assert unconfined is not confined
