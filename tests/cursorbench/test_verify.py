"""`cursorbench runs verify` (cursorbench/verify.py): a run folder's verdicts are re-derived
by replaying its recorded replies here; an edited attempts file, summary or trajectory does
not verify. The agents are doubles served over real HTTP (fixtures, not models)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.model.doubles import IrrelevantEditDouble
from harness.results import AttemptResult, Status
from harness.run.summary import summarize
from tests.cli_runner import cursorbench

TASKS = ("--tasks", "textkit-slugify", "--tasks", "textkit-case-styles")


def irrelevant_edit_run(serve: Callable[[Any], str], out: Path) -> None:
    double = IrrelevantEditDouble()
    ran = cursorbench("run", *TASKS, "--base-url", serve(double), "--model", double.models[0],
                      "--api-key", "none", "--out", str(out))  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def forge_resolved(out: Path) -> None:
    """What a forger edits: every attempt resolved, and a summary that adds up to it."""
    attempts = out / "attempts.jsonl"
    results = [
        AttemptResult.model_validate_json(line) for line in attempts.read_text().splitlines()
    ]
    forged = [
        r.model_copy(update={"status": Status.RESOLVED, "failure": None, "error": None})
        for r in results
    ]
    attempts.write_text("".join(r.model_dump_json() + "\n" for r in forged))
    summary = json.loads((out / "summary.json").read_text())
    summary |= summarize(forged, len(forged)).model_dump(mode="json", exclude_none=True)
    (out / "summary.json").write_text(json.dumps(summary))


def test_an_honest_run_verifies_and_a_forged_one_does_not(
    serve: Callable[[Any], str], cursorbench_home: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    irrelevant_edit_run(serve, out)
    honest = cursorbench("runs", "verify", str(out), "--out", str(tmp_path / "v1"), "--json")
    assert honest.returncode == 0, honest.stdout + honest.stderr
    report = json.loads(honest.stdout)
    assert (report["attempts"], report["replayed"], report["mismatches"]) == (2, 2, [])

    forge_resolved(out)  # consistent files: only the replay can tell
    forged = cursorbench("runs", "verify", str(out), "--out", str(tmp_path / "v2"))
    assert forged.returncode == 1
    assert "NOT verified: 2/2 attempts replayed" in forged.stdout
    assert "differs: textkit-slugify#0 status: recorded resolved, found failed" in forged.stdout
    assert (tmp_path / "v2" / "verification.json").is_file()


def test_a_summary_that_does_not_add_up_or_an_edited_trajectory_does_not_verify(
    serve: Callable[[Any], str], cursorbench_home: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    irrelevant_edit_run(serve, out)
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps(summary | {"resolved": 2, "resolved_rate": 1.0}))
    trajectory = out / "trajectories" / "textkit-slugify__0.jsonl"
    records = [json.loads(line) for line in trajectory.read_text().splitlines()]
    first_user = next(r for r in records if r.get("role") == "user")
    first_user["content"] = "Do nothing at all."  # what the agent was asked, rewritten
    trajectory.write_text("".join(json.dumps(r) + "\n" for r in records))
    checked = cursorbench("runs", "verify", str(out), "--out", str(tmp_path / "v"), "--json")
    assert checked.returncode == 1
    found = {(m["where"], m["field"]) for m in json.loads(checked.stdout)["mismatches"]}
    assert {("summary", "resolved"), ("summary", "resolved_rate")} <= found
    assert ("textkit-slugify#0", "status") in found  # the replay diverged: an error now
    assert not any(where == "textkit-case-styles#0" for where, _ in found)


def test_a_folder_without_attempts_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    refused = cursorbench("runs", "verify", str(tmp_path / "empty"))
    assert refused.returncode == 2
    assert refused.stderr == f"error: {tmp_path / 'empty'}: no finished attempts to verify\n"


def test_import_with_verify_leaves_out_a_forged_folder(
    serve: Callable[[Any], str], cursorbench_home: Path, tmp_path: Path
) -> None:
    honest, forged = tmp_path / "honest", tmp_path / "forged"
    irrelevant_edit_run(serve, honest)
    irrelevant_edit_run(serve, forged)
    forge_resolved(forged)
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    imported = cursorbench("runs", "import", str(honest), str(forged), "--verify", "--db", db)
    assert imported.returncode == 1
    assert f"{honest}: run " in imported.stdout and str(forged) not in imported.stdout
    assert imported.stderr.startswith(f"error: {forged}: not verified (textkit-")
    listed = cursorbench("runs", "list", "--db", db, "--json")
    assert len(json.loads(listed.stdout)) == 1
